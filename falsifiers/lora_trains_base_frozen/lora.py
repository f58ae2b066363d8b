"""LoRA fine-tuning: it learns, the adapters move, the base stays bit-for-bit, the counts add up.

The training checkers fine-tune the session's small pretrained init (``pretrained_init``) with
``engine.train.finetune(method="lora")`` inside their call, so a fault in the engine's LoRA
wrapping (``engine.lora``) or its training loop acts on the run they measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.checkpoint import load_checkpoint
from engine.config import preset as engine_preset
from engine.data import InstructionData
from engine.lora import LoraSettings, apply_lora, lora_parameter_names
from engine.lora import lora_param_count as peft_lora_param_count
from engine.memory import lora_param_count as shape_lora_param_count
from engine.memory import lora_param_count_square
from engine.model import build_model
from engine.train import TrainConfig
from falsifiers._workdir import fresh_dir
from falsifiers.training import (
    base_state,
    changed_tensors,
    instruction_subset,
    run_finetune,
    write_loss_evidence,
)
from pv.checkers import checker

SEQ_LEN = 64


def _lora_run(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    *,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int,
) -> Any:
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    cfg = TrainConfig(
        steps=steps, batch_size=rows, seq_len=SEQ_LEN, lr=lr, warmup_steps=min(3, steps), eval_batches=1, seed=seed
    )
    out = fresh_dir(tmp_path, "lora-")
    return run_finetune(
        pretrained_init, out, cfg, method="lora", lora=settings, data=instruction_subset(instruction_data, rows)
    ), out


@checker(observes=["loss_first", "loss_last", "nonfinite_steps"], ids=["FALSIFY-LORA-001"])
def loss_halves(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    pv_artifacts: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """LoRA-fine-tune on a fixed set of ``rows`` pairs (every batch is the whole set).

    ``loss_first`` is the step-0 loss, ``loss_last`` the loss of the last step: both over the
    same rows, so they compare like with like.
    """
    run, out = _lora_run(
        pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed
    )
    write_loss_evidence(pv_artifacts, {"lora": run}, f"LoRA r={rank} on {rows} fixed pairs", log_dirs={"lora": out})
    losses = run.losses
    return {
        "loss_first": run.step0_loss,
        "loss_last": losses[-1] if losses else float("nan"),
        "nonfinite_steps": run.nonfinite_steps,
    }


@checker(observes=["lora_b_max_abs", "lora_b_tensors"], ids=["FALSIFY-LORA-002"])
def adapters_move(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Largest |B| entry after a few LoRA steps (PEFT initialises every B to zero)."""
    run, _ = _lora_run(pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed)
    params = dict(run.model.named_parameters())
    b_names = [n for n in lora_parameter_names(run.model) if ".lora_B." in n]
    return {
        "lora_b_max_abs": max((float(params[n].detach().abs().max()) for n in b_names), default=0.0),
        "lora_b_tensors": len(b_names),
    }


@checker(observes=["base_tensors", "base_tensors_changed", "base_tensors_unmatched"], ids=["FALSIFY-LORA-003"])
def base_unchanged(
    pretrained_init: Path,
    instruction_data: InstructionData,
    tmp_path: Path,
    rank: int,
    steps: int,
    lr: float,
    rows: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare every base tensor (parameters and buffers) of the init with the same tensor after training."""
    before = base_state(load_checkpoint(pretrained_init, device="cpu").model)
    run, _ = _lora_run(pretrained_init, instruction_data, tmp_path, rank=rank, steps=steps, lr=lr, rows=rows, seed=seed)
    after = base_state(run.model)
    matched = set(before) & set(after)
    return {
        "base_tensors": len(matched),
        "base_tensors_changed": len(changed_tensors(before, after)),
        "base_tensors_unmatched": len(set(before) - matched),
    }


@checker(observes=["formula_count", "peft_count", "gqa_count"], ids=["FALSIFY-LORA-004"])
def param_count(preset: str, rank: int, targets: Sequence[str]) -> dict[str, Any]:
    """LoRA parameter counts on a preset built on the meta device (nothing is allocated).

    ``formula_count``: layers × targets × rank × hidden × 2 (every target taken as hidden × hidden);
    ``gqa_count``: rank × (in + out) summed over the targeted layers' real shapes; ``peft_count``:
    what PEFT actually creates when the engine wraps the model.
    """
    config = engine_preset(preset)
    settings = LoraSettings(r=rank, alpha=2.0 * rank, targets=tuple(targets))
    bare = build_model(config, device="meta")
    gqa = shape_lora_param_count(bare, settings)
    wrapped = apply_lora(build_model(config, device="meta"), settings)
    return {
        "formula_count": lora_param_count_square(config, settings),
        "peft_count": peft_lora_param_count(wrapped),
        "gqa_count": gqa,
    }


@checker(
    observes=["step0_max_abs_diff", "logit_scale", "scaling_rel_error", "expected_scaling", "layers_checked"],
    ids=["FALSIFY-LORA-005", "FALSIFY-LORA-006"],
)
def init_and_scaling(rank: int, alpha: float, seed: int = 0) -> dict[str, Any]:
    """A fresh adapter is a no-op (B = 0: logits equal the base's exactly); with A and B set to
    known values, each wrapped layer adds exactly (alpha / r) · B A x, computed here by hand."""
    import torch

    torch.manual_seed(seed)
    base = build_model(engine_preset("tiny")).eval()
    ids = torch.randint(3, base.config.vocab_size, (2, 16))
    with torch.no_grad():
        reference = base(ids).logits.clone()
    wrapped = apply_lora(base, LoraSettings(r=rank, alpha=alpha, targets=("q_proj", "v_proj"))).eval()
    with torch.no_grad():
        step0 = wrapped(ids).logits
    gen = torch.Generator().manual_seed(seed + 1)
    worst = 0.0
    layers = 0
    for module in wrapped.modules():
        lora_a: Any = getattr(module, "lora_A", None)
        lora_b: Any = getattr(module, "lora_B", None)
        base_layer: Any = getattr(module, "base_layer", None)
        if lora_a is None or lora_b is None or base_layer is None or "default" not in lora_a:
            continue
        a, b = lora_a["default"].weight, lora_b["default"].weight
        x = torch.randn(3, a.shape[1], generator=gen)
        with torch.no_grad():
            a.copy_(torch.randn(a.shape, generator=gen))
            b.copy_(torch.randn(b.shape, generator=gen))
            delta = module(x) - base_layer(x)
            expected = (alpha / rank) * (x @ a.T @ b.T)
        worst = max(worst, float((delta - expected).abs().max() / expected.abs().max()))
        layers += 1
    return {
        "step0_max_abs_diff": float((step0 - reference).abs().max()),
        "logit_scale": float(reference.abs().mean()),
        "scaling_rel_error": worst,
        "expected_scaling": alpha / rank,
        "layers_checked": layers,
    }


def _misuse_refused(model: Any, folder: Path, tmp_path: Path) -> int:
    """Loading the same adapter name twice, and loading a folder whose config is not LoRA, are each
    refused with a ValueError that names the adapter or the adapter type (0, 1 or 2)."""
    import json
    import shutil

    from engine.lora import load_adapter

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


@checker(
    observes=[
        "adapter_effect",
        "reload_max_abs_diff",
        "merge_max_abs_diff",
        "merge_exact_max_abs_diff",
        "lora_layers_left",
        "misuse_refused_by_name",
        "lora_params_fp32_on_bf16_base",
    ],
    ids=["FALSIFY-LORA-007", "FALSIFY-QLORA-006"],
)
def adapter_round_trip(tmp_path: Path, rank: int, alpha: float, seed: int = 0, nf4: bool = False) -> dict[str, Any]:
    """An adapter with known non-zero A and B gives the same logits in memory, saved and loaded
    into a fresh copy of the base, and folded into the base by both merge paths.  ``nf4``: the
    base's linears are NF4 (QLoRA), quantized the same way each time.

    Two bases: the tiny llama, and a qwen2 variant whose q/k/v carry a bias the merge must keep.
    k_proj is left without an adapter, so a merge that stops at the first plain layer it meets
    leaves v_proj and o_proj unmerged."""
    import torch
    from peft.tuners.lora import LoraLayer

    from engine.lora import load_adapter, merge_adapter, save_adapter
    from engine.quant import quantize_model

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


@checker(
    observes=["own_base_max_abs_diff", "other_base_refused", "refusal_names_both", "override_recorded"],
    ids=["FALSIFY-LORA-008"],
)
def adapter_bound_to_its_base(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """An adapter fine-tuned (2 LoRA steps, the engine's ``finetune``) on the session's init is
    applied to that init (the trained model's logits again), and refused on a base of the same
    shape whose weights differ in one tensor by 1e-3 (another fine-tune of the same architecture),
    the refusal naming both weight digests; with ``allow_other_base`` it applies and the merged
    checkpoint records the override."""
    import torch

    from engine.adapters import AdapterError, find_adapter, load_adapted, merge_to_checkpoint
    from engine.checkpoint import save_checkpoint, weights_digest
    from engine.train.tasks import finetune

    cfg = TrainConfig(steps=2, batch_size=4, seq_len=SEQ_LEN, lr=1e-3, eval_every=0, save_every=2, seed=seed)
    run = finetune(pretrained_init, fresh_dir(tmp_path, "adapter-"), cfg, method="lora", data=instruction_data)
    adapter = find_adapter(run.out_dir)
    own = load_checkpoint(pretrained_init)
    with torch.no_grad():
        own.model.model.norm.weight.add_(1e-3)
    other = save_checkpoint(fresh_dir(tmp_path, "other-") / "model.safetensors", own.model, own.tokenizer, own.manifest)
    digests = (weights_digest(load_checkpoint(pretrained_init).model), weights_digest(load_checkpoint(other).model))
    ids = instruction_data.input_ids[:2]
    adapted, _ = load_adapted(pretrained_init, adapter)
    with torch.inference_mode():
        own_diff = float((adapted(ids).logits - run.extra["model"].eval()(ids).logits).abs().max())
    refused, names_both = False, False
    try:
        load_adapted(other, adapter)
    except AdapterError as exc:
        refused, names_both = True, all(d in str(exc) for d in digests)
    merged = merge_to_checkpoint(
        other, adapter, fresh_dir(tmp_path, "merged-") / "m.safetensors", allow_other_base=True
    )
    manifest = load_checkpoint(merged).manifest
    return {
        "own_base_max_abs_diff": own_diff,
        "other_base_refused": refused,
        "refusal_names_both": names_both,
        "override_recorded": manifest.get("base_override", {}).get("base_weights_sha256") == digests[1],
    }
