"""What ``python -m engine merge BASE ADAPTER OUT`` writes, read back without the engine's merge.

The reference for every tensor is written out here from the files alone: the base checkpoint's
tensors and the adapter's ``adapter_model.safetensors`` read with ``safe_open``, the scale
``lora_alpha / r`` from ``adapter_config.json``, and, for a QLoRA adapter, bitsandbytes'
``quantize_4bit`` / ``dequantize_4bit`` at the NF4 settings the adapter's manifest records.  The
manifest's fields are compared with the paths given, hashlib's sha256 of the adapter file and the
base's weights digest recorded when the adapter was trained.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.data import InstructionData
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.inspect_reports import _sha256, _tensors
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

MERGE_TOLERANCE = 1e-6  # W + B·A·scale in fp32, summed in another order than PEFT's kernels may
PEFT_PREFIX = "base_model.model."


def _deltas(adapter: Path) -> dict[str, torch.Tensor]:
    """Base tensor name -> B·A·lora_alpha/r, from the adapter's own files."""
    config = json.loads((adapter / "adapter_config.json").read_text())
    scale = float(config["lora_alpha"]) / int(config["r"])
    weights = _tensors(adapter / "adapter_model.safetensors")
    out = {}
    for name, a in weights.items():
        if ".lora_A." not in name:
            continue
        b = weights[name.replace(".lora_A.", ".lora_B.")]
        target = name.removeprefix(PEFT_PREFIX).replace(".lora_A.weight", ".weight")
        out[target] = (b.float() @ a.float()) * scale
    return out


def _nf4_round_trip(weight: torch.Tensor, nf4: dict[str, Any]) -> torch.Tensor:
    # bitsandbytes loads only in the checkers that quantize (it probes the CPU and GPU on import)
    import bitsandbytes.functional as bnbf

    packed, state = bnbf.quantize_4bit(
        weight.float().contiguous(),
        blocksize=int(nf4["blocksize"]),
        compress_statistics=bool(nf4["double_quant"]),
        quant_type="nf4",
    )
    return bnbf.dequantize_4bit(packed, state).float()


def compare_merged(base: Path, adapter: Path, merged: Path, nf4: dict[str, Any] | None) -> dict[str, Any]:
    """Every tensor of ``merged`` against the reference: an adapted layer within reach of
    (W, or its NF4 round trip at ``nf4``'s settings) + B·A·alpha/r, every other tensor W bit for bit
    or, on an NF4 base, W's exact round trip; and the base's tensors the merge lacks."""
    want_all, got_all, deltas = _tensors(base), _tensors(merged), _deltas(adapter)
    out = {"adapted_tensors": 0, "adapted_max_abs_diff": 0.0, "other_tensors_differing": 0, "round_tripped": 0}
    for name, got in got_all.items():
        want = want_all.get(name)
        if want is None or want.shape != got.shape:
            out["other_tensors_differing"] += 1
            continue
        if name in deltas:
            w = _nf4_round_trip(want, nf4) if nf4 is not None else want.float()
            out["adapted_tensors"] += 1
            diff = float((got.float() - (w + deltas[name])).abs().max())
            out["adapted_max_abs_diff"] = max(out["adapted_max_abs_diff"], diff)
        elif not torch.equal(got, want):
            # an NF4 base dequantizes every linear it quantized: those hold W's round trip exactly
            tripped = nf4 is not None and want.ndim == 2 and torch.equal(got, _nf4_round_trip(want, nf4))
            out["round_tripped"] += tripped
            out["other_tensors_differing"] += not tripped
    out["tensors_missing"] = len(set(want_all) - set(got_all))
    return out


def _merge_observations(base: Path, step: Path, merged: Path, method: str) -> dict[str, Any]:
    """Tensors of ``merged`` against the reference, and its manifest against what it must name."""

    adapter = step / "adapter"
    step_manifest = json.loads((step / "manifest.json").read_text())
    out = compare_merged(base, adapter, merged, step_manifest["nf4"] if method == "qlora" else None)
    with safe_open(str(merged), framework="pt") as fh:
        manifest = json.loads(fh.metadata()["manifest"])
    expected = {
        "kind": "merged",
        "base": str(base),
        "adapter": str(adapter),
        "adapter_sha256": _sha256(adapter / "adapter_model.safetensors"),
        "method": method,
        "base_weights_sha256": step_manifest["base_weights_sha256"],
    }
    out["manifest_fields_differing"] = sum(manifest.get(k) != v for k, v in expected.items())
    out["manifest_fields_extra"] = len({"base_override"} & set(manifest))
    return out


@checker(
    observes=[
        "merges", "exit_codes_nonzero", "announced", "adapted_tensors", "adapted_max_abs_diff",
        "other_tensors_differing", "round_tripped", "tensors_missing", "manifest_fields_differing",
        "manifest_fields_extra",
    ],
    ids=["FALSIFY-LORA-009"],
)  # fmt: skip
def merge_command_writes_w_plus_ba(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """A LoRA and a QLoRA adapter (2 steps each, the engine's ``finetune``) on the session's init,
    each merged with ``python -m engine merge`` given the adapter's run folder, and every tensor and
    manifest field of the merged checkpoint read back."""
    cli = cli_runner()
    totals: dict[str, Any] = {"merges": 0, "exit_codes_nonzero": 0, "announced": 0}
    for method in ("lora", "qlora"):
        run = trained_adapter(pretrained_init, instruction_data, fresh_dir(tmp_path, f"{method}-"), method, seed)
        target = fresh_dir(tmp_path, f"merged-{method}-") / "merged.safetensors"
        result = cli("merge", pretrained_init, run, target)
        totals["merges"] += 1
        if result.exit_code != 0:
            totals["exit_codes_nonzero"] += 1
            continue
        totals["announced"] += f"wrote merged checkpoint {target}" in " ".join(result.stderr.split())
        step = max((p for p in run.glob("step-*") if p.is_dir()), key=lambda p: p.name)
        for key, value in _merge_observations(Path(pretrained_init), step, target, method).items():
            totals[key] = (
                max(totals.get(key, 0.0), value) if key == "adapted_max_abs_diff" else totals.get(key, 0) + value
            )
    return totals
