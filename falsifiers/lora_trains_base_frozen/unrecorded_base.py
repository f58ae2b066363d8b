"""An adapter that records no base: applied, and said to be unchecked wherever it is applied.

An adapter's step manifest records the digest of the base it was trained on, and the engine
refuses any other base (FALSIFY-LORA-008).  A folder without that record -- the adapter folder
alone, as PEFT writes it, or a step whose manifest lost the field -- leaves nothing to compare, so
the engine takes any base of the adapter's shape.  What it must not do is look checked: the
merged checkpoint's manifest would then name a base digest as if it had been matched.  Here an
adapter fine-tuned for 2 steps on the session's init is applied, in both unrecorded forms, to a
base whose final norm differs (``load_adapted`` and ``python -m engine merge`` and ``generate
--adapter``), and the same adapter with its record is applied to its own base.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from engine.adapters import find_adapter, load_adapted
from engine.checkpoint import load_checkpoint, save_checkpoint, weights_digest
from engine.data import InstructionData
from falsifiers.lora_trains_base_frozen.merge_options import _manifest
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _note(adapter: Path) -> str:
    return f"adapter {adapter} records no base weights digest; the base it is applied to was not checked"


@checker(
    observes=[
        "unrecorded_forms", "applied", "notes_recorded", "merges_exit_zero", "warnings_said",
        "merged_manifests_saying", "merged_digests_of_the_base", "recorded_adapter_silent",
    ],
    ids=["FALSIFY-LORA-019"],
)  # fmt: skip
def unrecorded_base_said(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """The adapter folder alone and a step whose manifest lacks base_weights_sha256, on another base."""
    work = fresh_dir(tmp_path, "unrecorded-base-")
    run = trained_adapter(pretrained_init, instruction_data, work / "run", seed=seed)
    step = run / json.loads((run / "latest.json").read_text())["folder"]
    alone = work / "peft" / "adapter"
    shutil.copytree(step / "adapter", alone)
    lost = work / "lost" / step.name
    shutil.copytree(step, lost)
    manifest = json.loads((lost / "manifest.json").read_text())
    del manifest["base_weights_sha256"]
    (lost / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_checkpoint(pretrained_init)
    with torch.no_grad():
        loaded.model.model.norm.weight.add_(0.5)
    other = save_checkpoint(work / "other.safetensors", loaded.model, loaded.tokenizer, dict(loaded.manifest))
    other_digest = weights_digest(loaded.model)

    cli = cli_runner()
    forms = {"adapter folder alone": alone, "manifest without the digest": lost}
    out: dict[str, Any] = {"unrecorded_forms": len(forms), "applied": 0, "notes_recorded": 0}
    out |= {"merges_exit_zero": 0, "warnings_said": 0, "merged_manifests_saying": 0, "merged_digests_of_the_base": 0}
    for name, given in forms.items():
        folder = find_adapter(given)
        note = _note(folder.path)
        _, base = load_adapted(other, folder)
        out["applied"] += 1
        out["notes_recorded"] += base.manifest.get("base_unchecked") == note
        target = work / f"merged-{name.replace(' ', '-')}.safetensors"
        merge = cli("merge", other, given, target)
        said = " ".join(merge.stderr.split())
        out["merges_exit_zero"] += merge.exit_code == 0
        out["warnings_said"] += f"warning: {note}" in said
        generated = cli("generate", other, "-p", "def", "-n", 2, "--adapter", given)
        out["warnings_said"] += generated.exit_code == 0 and f"warning: {note}" in " ".join(generated.stderr.split())
        if target.is_file():
            written = _manifest(target)
            out["merged_manifests_saying"] += written.get("base_unchecked") == note
            out["merged_digests_of_the_base"] += written.get("base_weights_sha256") == other_digest

    # the adapter with its record, on its own base: nothing to say
    target = work / "merged-recorded.safetensors"
    merge = cli("merge", pretrained_init, run, target)
    _, base = load_adapted(pretrained_init, find_adapter(run))
    out["recorded_adapter_silent"] = (
        merge.exit_code == 0
        and "warning" not in merge.stderr
        and "base_unchecked" not in base.manifest
        and "base_unchecked" not in _manifest(target)
    )
    return out
