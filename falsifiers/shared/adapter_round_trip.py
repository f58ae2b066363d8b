"""An adapter's round trip, measured for the LoRA and the QLoRA contracts: in memory, saved and
loaded into a fresh base, and folded into the base by both merge paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from engine.config import preset as engine_preset
from engine.lora import LoraSettings, apply_lora, load_adapter, merge_adapter, save_adapter
from engine.model import build_model
from engine.quant import quantize_model
from falsifiers.shared.workdir import fresh_dir


def _misuse_refused(model: Any, folder: Path, tmp_path: Path) -> int:
    """Loading the same adapter name twice, and loading a folder whose config is not LoRA, are each
    refused with a ValueError that names the adapter or the adapter type (0, 1 or 2)."""

    refused = 0
    try:
        load_adapter(model, folder)  # "default" is already there
    except ValueError as exc:
        refused += "'default'" in str(exc) and "already loaded" in str(exc)
    other = fresh_dir(tmp_path, "ia3-")
    shutil.copytree(folder, other, dirs_exist_ok=True)
    config = json.loads((other / "adapter_config.json").read_text())
    (other / "adapter_config.json").write_text(json.dumps({**config, "peft_type": "IA3"}))
    try:
        load_adapter(model, other, "other")
    except ValueError as exc:
        refused += "'IA3'" in str(exc)
    return refused


# The two architectures the engine builds: llama (no bias) and qwen2 (q/k/v bias, tied head).
BASES: dict[str, dict[str, Any]] = {
    "llama": {},
    "qwen2": {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True},
}


# What a round trip reports; each contract's checker observes these.
ROUND_TRIP_OBSERVES = [
    "adapter_effect",
    "reload_max_abs_diff",
    "merge_max_abs_diff",
    "merge_exact_max_abs_diff",
    "lora_layers_left",
    "misuse_refused_by_name",
    "lora_params_fp32_on_bf16_base",
]


def adapter_round_trip(tmp_path: Path, rank: int, alpha: float, seed: int = 0, nf4: bool = False) -> dict[str, Any]:
    """An adapter with known non-zero A and B gives the same logits in memory, saved and loaded
    into a fresh copy of the base, and folded into the base by both merge paths.  ``nf4``: the
    base's linears are NF4 (QLoRA), quantized the same way each time.

    Two bases: the tiny llama, and a qwen2 variant whose q/k/v carry a bias the merge must keep.
    k_proj is left without an adapter, so a merge that stops at the first plain layer it meets
    leaves v_proj and o_proj unmerged."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft.tuners.lora import LoraLayer

    effect = reload_diff = merge_diff = exact_diff = 0.0
    left = refused = 0
    for variant, overrides in BASES.items():

        def fresh_base(overrides: dict[str, Any] = overrides) -> Any:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model = build_model(engine_preset("tiny", **overrides))
                if overrides.get("attention_bias"):
                    with torch.no_grad():  # biases away from their zero init, so dropping one shows
                        for name, p in model.named_parameters():
                            if name.endswith("_proj.bias"):
                                p.copy_(0.5 * torch.randn(p.shape))
            return (quantize_model(model) if nf4 else model).eval()

        base = fresh_base()
        ids = torch.randint(3, base.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            plain = base(ids).logits.clone()
        wrapped = apply_lora(base, LoraSettings(r=rank, alpha=alpha, targets=("q_proj", "v_proj", "o_proj")))
        gen = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for name, p in wrapped.named_parameters():
                if ".lora_" in name:
                    p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            in_memory = wrapped.eval()(ids).logits.clone()
        folder = save_adapter(wrapped, fresh_dir(tmp_path, f"adapter-{variant}-"))

        def reloaded(fresh: Any = fresh_base, folder: Path = folder) -> Any:
            return load_adapter(fresh(), folder).eval()

        with torch.no_grad():
            reload_logits = reloaded()(ids).logits
            merged_model = merge_adapter(reloaded()).eval()
            exact_model = merge_adapter(reloaded(), dequantize=True).eval()
            merged, merged_exact = merged_model(ids).logits, exact_model(ids).logits
        # A layer the merge skipped still computes W + BA: the logits cannot tell, the modules can.
        left += sum(isinstance(m, LoraLayer) for mm in (merged_model, exact_model) for m in mm.modules())
        refused += _misuse_refused(reloaded(), folder, tmp_path)
        effect = max(effect, float((in_memory - plain).abs().max()))
        reload_diff = max(reload_diff, float((reload_logits - in_memory).abs().max()))
        merge_diff = max(merge_diff, float((merged - in_memory).abs().max()))
        exact_diff = max(exact_diff, float((merged_exact - in_memory).abs().max()))
    # a bf16 base still gets fp32 LoRA matrices (the engine's rule: the update is trained in fp32)
    bf16_wrapped = apply_lora(build_model(engine_preset("tiny")).to(torch.bfloat16), LoraSettings(r=rank, alpha=alpha))
    bf16_lora = [p for n, p in bf16_wrapped.named_parameters() if ".lora_" in n]
    return {
        "adapter_effect": effect,
        "reload_max_abs_diff": reload_diff,
        "merge_max_abs_diff": merge_diff,
        "merge_exact_max_abs_diff": exact_diff,
        "lora_layers_left": left,
        "misuse_refused_by_name": refused,
        "lora_params_fp32_on_bf16_base": int(bool(bf16_lora) and all(p.dtype == torch.float32 for p in bf16_lora)),
    }
