"""What ``engine.lora.load_adapter`` leaves trainable, and which adapter folders it refuses.

Loading an adapter to run it must leave every parameter frozen (PEFT's inference mode); loading it
to train on must make that adapter's LoRA matrices, and nothing else, trainable, also when another
adapter is already loaded beside it.  Measured directly: the ``requires_grad`` flag of every
parameter, PEFT's ``inference_mode`` in the adapter's config, the active adapter, and the values
loaded against the saved file.  A folder without its weights, and weights holding a LoRA matrix the
model has no place for, are refused naming the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.lora import ADAPTER_WEIGHTS, LoraSettings, apply_lora, load_adapter, save_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(
    observes=[
        "frozen_loads", "trainable_differing", "inference_modes_differing", "active_differing", "values_differing",
        "refusals", "refusals_named",
    ],
    ids=["FALSIFY-LORA-012"],
)  # fmt: skip
def load_adapter_flags_and_refusals(tiny_model_factory: Any, tmp_path: Path, seed: int = 0) -> dict[str, Any]:
    """Two adapters saved from a tiny model, loaded onto fresh copies: for inference, for training,
    and for training beside one loaded for inference; two broken folders."""

    work = fresh_dir(tmp_path, "lora-loading-")
    folders = {}
    for name, targets in (("first", ("q_proj", "v_proj")), ("second", ("k_proj",))):
        model = apply_lora(tiny_model_factory(seed), LoraSettings(r=4, alpha=8, targets=targets))
        with torch.no_grad():  # non-zero B, so that loaded values are told from fresh ones
            for n, p in model.named_parameters():
                if ".lora_B." in n:
                    p.normal_(generator=torch.Generator().manual_seed(len(n)))
        folders[name] = save_adapter(model, work / name)

    def lora(model: Any, adapter: str) -> dict[str, Any]:
        return {n: p for n, p in model.named_parameters() if ".lora_" in n and f".{adapter}." in n}

    out: dict[str, Any] = {"frozen_loads": 0, "trainable_differing": 0, "inference_modes_differing": 0}
    out |= {"active_differing": 0, "values_differing": 0}
    # for inference: nothing trainable
    run = load_adapter(tiny_model_factory(seed), folders["first"])
    out["frozen_loads"] += not any(p.requires_grad for p in run.parameters())
    out["inference_modes_differing"] += run.peft_config["default"].inference_mode is not True
    # for training: exactly this adapter's matrices, beside a second adapter loaded for inference
    both = load_adapter(tiny_model_factory(seed), folders["second"], "second")
    both = load_adapter(both, folders["first"], "first", trainable=True)
    want = set(lora(both, "first"))
    out["trainable_differing"] += {n for n, p in both.named_parameters() if p.requires_grad} != want
    out["inference_modes_differing"] += both.peft_config["first"].inference_mode is not False
    out["active_differing"] += both.active_adapter != "first"
    saved = load_file(str(folders["first"] / ADAPTER_WEIGHTS))
    loaded = {n.replace(".first.", "."): p for n, p in lora(both, "first").items()}  # as PEFT saves the names
    out["values_differing"] += sum(
        k not in loaded or not torch.equal(loaded[k].detach(), v) for k, v in saved.items()
    ) + abs(len(saved) - len(loaded))

    # refusals: no weights file; a LoRA matrix for a layer the model does not have
    no_weights = work / "no-weights"
    no_weights.mkdir()
    (no_weights / "adapter_config.json").write_text((folders["first"] / "adapter_config.json").read_text())
    stray = work / "stray"
    stray.mkdir()
    (stray / "adapter_config.json").write_text((folders["first"] / "adapter_config.json").read_text())
    extra = dict(saved)
    extra["base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight"] = next(iter(saved.values())).clone()
    save_file(extra, str(stray / ADAPTER_WEIGHTS))
    out["refusals"], out["refusals_named"] = 0, 0
    for folder in (no_weights, stray):
        try:
            load_adapter(tiny_model_factory(seed), folder)
        except (FileNotFoundError, ValueError) as exc:
            out["refusals"] += 1
            out["refusals_named"] += str(folder) in str(exc)
    return out
