"""``merge``'s options, as the command and ``merge_to_checkpoint`` take them: ``--nf4`` / ``--no-nf4``
and the base check.

FALSIFY-LORA-009 merges each adapter onto the base its method implies.  Here the other choice is
asked for: a LoRA adapter merged onto the base's NF4 round trip (bitsandbytes' ``quantize_4bit`` /
``dequantize_4bit`` at the engine's documented NF4 defaults, block 64 with double quantization) and
a QLoRA adapter merged onto the full-precision base, every tensor read back against W (or its
round trip) + B·A·alpha/r from the adapter's own files.  And an adapter is merged onto a base it
was not trained on only when asked: the command and the Python function called without the
override both refuse it naming the weights digest and write nothing; with ``--allow-other-base``
the merged checkpoint's manifest records both digests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.adapters import AdapterError, find_adapter, merge_to_checkpoint
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.data import InstructionData
from falsifiers.lora_trains_base_frozen.merge_cli import compare_merged
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NF4_DEFAULTS = {"blocksize": 64, "double_quant": True}  # engine.quant.NF4Config's documented defaults


def _manifest(path: Path) -> dict[str, Any]:

    with safe_open(str(path), framework="pt") as fh:
        manifest: dict[str, Any] = json.loads(fh.metadata()["manifest"])
    return manifest


@checker(
    observes=[
        "merges", "exit_codes_nonzero", "adapted_tensors", "adapted_max_abs_diff", "others_differing",
        "nf4_round_tripped", "plain_round_tripped", "refusals", "refused_cleanly", "override_recorded",
    ],
    ids=["FALSIFY-LORA-010"],
)  # fmt: skip
def merge_options_as_asked(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """--nf4 on a LoRA adapter, --no-nf4 on a QLoRA adapter, and the base check, through the
    command and merge_to_checkpoint."""

    cli = cli_runner()
    out: dict[str, Any] = {"merges": 0, "exit_codes_nonzero": 0, "adapted_tensors": 0, "adapted_max_abs_diff": 0.0}
    out |= {"others_differing": 0, "nf4_round_tripped": 0, "plain_round_tripped": 0}
    runs = {m: trained_adapter(pretrained_init, instruction_data, fresh_dir(tmp_path, f"opt-{m}-"), m, seed) for m in
            ("lora", "qlora")}  # fmt: skip
    for method, flag, nf4 in (("lora", "--nf4", NF4_DEFAULTS), ("qlora", "--no-nf4", None)):
        target = fresh_dir(tmp_path, f"merged-{method}-") / "merged.safetensors"
        result = cli("merge", pretrained_init, runs[method], target, flag)
        out["merges"] += 1
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        adapter = find_adapter(runs[method]).path
        seen = compare_merged(Path(pretrained_init), adapter, target, nf4)
        out["adapted_tensors"] += seen["adapted_tensors"]
        out["adapted_max_abs_diff"] = max(out["adapted_max_abs_diff"], seen["adapted_max_abs_diff"])
        out["others_differing"] += seen["other_tensors_differing"] + seen["tensors_missing"]
        out["nf4_round_tripped" if nf4 is not None else "plain_round_tripped"] += seen["round_tripped"]

    # another base: the init with one weight changed, so its weights digest differs
    work = fresh_dir(tmp_path, "other-base-")
    loaded = load_checkpoint(pretrained_init)
    with torch.no_grad():
        loaded.model.model.norm.weight.add_(0.5)
    other = save_checkpoint(work / "other.safetensors", loaded.model, loaded.tokenizer, dict(loaded.manifest))
    folder = find_adapter(runs["lora"])
    refused_target, api_target = work / "refused.safetensors", work / "api.safetensors"
    cli_result = cli("merge", other, runs["lora"], refused_target)
    out["refusals"] = 2
    out["refused_cleanly"] = refused_cleanly(cli_result, ["sha256"], [refused_target])
    try:
        merge_to_checkpoint(other, folder, api_target)
    except AdapterError as exc:
        out["refused_cleanly"] += "sha256" in str(exc) and not api_target.exists()
    allowed = cli("merge", other, runs["lora"], work / "allowed.safetensors", "--allow-other-base")
    # the digests: the one the adapter's run recorded, and the one the refusal printed for the other base
    expected = json.loads((folder.path.parent / "manifest.json").read_text())["base_weights_sha256"]
    printed = re.findall(r"\b[0-9a-f]{64}\b", " ".join(str(cli_result.output).split()))
    actual = next((d for d in printed if d != expected), None)
    recorded = (
        allowed.exit_code == 0
        and actual is not None
        and _manifest(work / "allowed.safetensors").get("base_override")
        == {"expected_base_weights_sha256": expected, "base_weights_sha256": actual}
    )
    out["override_recorded"] = recorded
    return out
