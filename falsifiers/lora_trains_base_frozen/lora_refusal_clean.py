"""An adapter ``engine.lora.load_adapter`` refuses leaves the caller's model as it was.

PEFT injects an adapter's layers into the model before its weights are read into them; a refusal
raised after that must take them out again, or the caller, having caught the error, runs a model
holding part of the refused adapter.  Measured directly, before and after each refusal: every
module's type, every parameter's and buffer's name, value and trainable flag, the logits on a fixed
batch, and for a model that already holds an adapter its loaded adapters and active one.  Four
broken folders (a LoRA matrix for a layer the model lacks, matrices of another rank than the
config's, a weights file that is no safetensors, a config of another PEFT type) are refused,
each with the model bare and with one adapter loaded; a good adapter then still loads.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS, LoraSettings, apply_lora, load_adapter, save_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

STRAY = "base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight"


def _snapshot(model: Any) -> dict[str, Any]:
    ids = torch.arange(24).reshape(2, 12) % 97
    with torch.no_grad():
        logits = model(ids).logits.clone()
    return {
        "types": [(n, type(m).__name__) for n, m in model.named_modules()],
        "params": {n: (p.detach().clone(), p.requires_grad) for n, p in model.named_parameters()},
        "buffers": {n: b.clone() for n, b in model.named_buffers()},
        "logits": logits,
        "adapters": sorted(getattr(model, "peft_config", {})),
        "active": getattr(model, "active_adapter", None),
    }


def _differs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["types"] != b["types"] or a["adapters"] != b["adapters"] or a["active"] != b["active"]:
        return True
    if a["params"].keys() != b["params"].keys() or a["buffers"].keys() != b["buffers"].keys():
        return True
    params = any(not torch.equal(v, b["params"][n][0]) or g != b["params"][n][1] for n, (v, g) in a["params"].items())
    buffers = any(not torch.equal(v, b["buffers"][n]) for n, v in a["buffers"].items())
    return params or buffers or not torch.equal(a["logits"], b["logits"])


@checker(
    observes=["refusals", "refused", "models_changed", "good_loads_after"],
    ids=["FALSIFY-LORA-015"],
)  # fmt: skip
def refused_adapter_leaves_model(tiny_model_factory: Any, tmp_path: Path, seed: int = 0) -> dict[str, Any]:
    """Four broken adapter folders, each refused by a bare model and by one holding an adapter."""

    work = fresh_dir(tmp_path, "lora-refusal-")

    def saved(name: str, r: int) -> Path:
        model = apply_lora(tiny_model_factory(seed, std=0.1), LoraSettings(r=r, alpha=2.0 * r))
        with torch.no_grad():
            for n, p in model.named_parameters():
                if ".lora_" in n:
                    p.normal_(generator=torch.Generator().manual_seed(len(n) + r))
        return save_adapter(model, work / name)

    good, wide = saved("good", 4), saved("wide", 8)
    broken = {}
    for name in ("stray", "rank", "not-safetensors", "other-type"):
        broken[name] = work / name
        shutil.copytree(good, broken[name])
    weights = load_file(str(good / ADAPTER_WEIGHTS))
    save_file(weights | {STRAY: next(iter(weights.values())).clone()}, str(broken["stray"] / ADAPTER_WEIGHTS))
    shutil.copyfile(wide / ADAPTER_WEIGHTS, broken["rank"] / ADAPTER_WEIGHTS)  # rank 8 matrices, rank 4 config
    (broken["not-safetensors"] / ADAPTER_WEIGHTS).write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    config = json.loads((good / ADAPTER_CONFIG).read_text()) | {"peft_type": "IA3"}
    (broken["other-type"] / ADAPTER_CONFIG).write_text(json.dumps(config))

    out: dict[str, Any] = {"refusals": 0, "refused": 0, "models_changed": 0, "good_loads_after": 0}
    for holding in (False, True):
        for folder in broken.values():
            model: Any = tiny_model_factory(seed, std=0.1)
            if holding:
                model = load_adapter(model, wide, "held")
            before = _snapshot(model)
            out["refusals"] += 1
            try:
                load_adapter(model, folder, "second" if holding else "default")
            except Exception:  # every refusal counts; which error is read by the falsifiers of messages
                out["refused"] += 1
            out["models_changed"] += _differs(before, _snapshot(model))
            try:
                loaded = load_adapter(model, good, "again")
                out["good_loads_after"] += loaded.active_adapter == "again"
            except Exception:  # a model left unable to take a good adapter
                pass
    return out
