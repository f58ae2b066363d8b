"""How the commands that take an adapter find it and what they read from its folder.

``engine.adapters.find_adapter`` accepts a run folder (the step its ``latest.json`` names), that
step's folder, or the adapter folder itself, and reads the run's method, base, step, NF4 settings
and base digest from the step's ``manifest.json`` (the step from ``train_state.json`` where the
manifest has none).  Measured against those files read here with ``json``: a LoRA run and a QLoRA
run quantized at block 128 without double quantization (not the defaults), then copies of the
QLoRA step with one file changed each.  A field of the wrong type reads as absent.  Every refusal
is an ``AdapterError`` naming the path at fault.  ``load_adapted`` and ``merged`` called with their
defaults apply an adapter to its own base, refuse another base naming both digests and that base,
and refuse an adapter with a matrix the base has no place for naming the adapter and the base.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.adapters import AdapterError, find_adapter, load_adapted, merged
from engine.checkpoint import load_checkpoint, save_checkpoint, weights_digest
from engine.config import preset as engine_preset
from engine.data import InstructionData
from engine.model import DecoderLM
from engine.quant import NF4Config
from engine.train import TrainConfig
from engine.train.tasks import finetune
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _expected(step_dir: Path) -> tuple[Any, ...]:
    """What the step's files say, as (path, method, base, step, nf4 (blocksize, double_quant), digest)."""
    manifest = _read(step_dir / "manifest.json")
    nf4 = manifest.get("nf4")
    return (
        step_dir / "adapter",
        manifest["method"],
        manifest["base"],
        manifest["step"],
        None if nf4 is None else (nf4["blocksize"], nf4["double_quant"]),
        manifest["base_weights_sha256"],
    )


def _seen(folder: Any) -> tuple[Any, ...]:
    nf4 = None if folder.nf4 is None else (folder.nf4.blocksize, folder.nf4.double_quant)
    return (folder.path, folder.method, folder.base, folder.step, nf4, folder.base_sha256)


def _variant(step_dir: Path, work: Path, name: str) -> Path:
    copy = work / name / step_dir.name
    shutil.copytree(step_dir, copy)
    return copy


def _edit_manifest(step_dir: Path, **fields: Any) -> None:
    manifest = _read(step_dir / "manifest.json") | fields
    (step_dir / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if v is not ...}))


@checker(
    observes=[
        "runs", "forms_differing", "fields_differing", "step_sources_differing", "mistyped_kept",
        "refusals", "refusals_named", "own_base_applied", "other_base_refused", "tied_digests_distinct",
        "misfit_refused",
    ],
    ids=["FALSIFY-LORA-013"],
)  # fmt: skip
def adapter_folders_as_written(
    pretrained_init: Path, instruction_data: InstructionData, tiny_model_factory: Any, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """A LoRA run (finetune's default method) and a QLoRA run (block 128, no double quantization),
    their folders found three ways,
    six changed copies, six broken folders, and the adapter applied to its own base and others."""

    work = fresh_dir(tmp_path, "adapter-folders-")
    cfg = TrainConfig(steps=2, batch_size=4, seq_len=64, lr=1e-2, eval_every=0, save_every=2, seed=seed)
    runs = {
        "lora": Path(finetune(pretrained_init, work / "lora", cfg, data=instruction_data).out_dir),  # the default
        "qlora": Path(
            finetune(
                pretrained_init, work / "qlora", cfg, method="qlora", data=instruction_data,
                nf4=NF4Config(blocksize=128, double_quant=False),
            ).out_dir
        ),
    }  # fmt: skip
    out: dict[str, Any] = {"runs": len(runs), "forms_differing": 0, "fields_differing": 0}
    steps = {}
    for method, run in runs.items():
        step_dir = run / _read(run / "latest.json")["folder"]
        steps[method] = step_dir
        found = [find_adapter(form) for form in (run, step_dir, step_dir / "adapter", str(run))]
        out["forms_differing"] += sum(f != found[0] for f in found)
        out["fields_differing"] += _seen(found[0]) != _expected(step_dir)
        out["fields_differing"] += found[0].method != method
        out["fields_differing"] += found[0].base != str(pretrained_init)  # the base the run was given

    # where the step comes from: the manifest first, train_state.json where the manifest has none
    qlora = steps["qlora"]
    state_step = _read(qlora / "train_state.json")["step"]
    no_step = _variant(qlora, work, "manifest-without-step")
    _edit_manifest(no_step, step=...)
    (no_step / "train_state.json").write_text(json.dumps(_read(no_step / "train_state.json") | {"step": 7}))
    no_state = _variant(qlora, work, "no-train-state")
    (no_state / "train_state.json").unlink()
    out["step_sources_differing"] = (find_adapter(no_step).step != 7) + (
        find_adapter(no_state).step != _read(qlora / "manifest.json")["step"]
    )
    out["step_sources_differing"] += find_adapter(qlora).step != state_step  # the two files agree as written

    # a field of the wrong type, and a manifest that is no JSON object, read as absent
    mistyped = _variant(qlora, work, "mistyped")
    _edit_manifest(mistyped, method=3, base=["base"], step="2", base_weights_sha256=7, nf4=...)
    listed = _variant(qlora, work, "listed")
    (listed / "manifest.json").write_text(json.dumps([_read(qlora / "manifest.json")]))
    (listed / "train_state.json").unlink()
    out["mistyped_kept"] = sum(
        _seen(find_adapter(folder))[1:] != (None, None, None, None, None) for folder in (mistyped, listed)
    )

    # refusals, each naming its path
    broken: dict[str, Path] = {"a file": qlora / "adapter" / "adapter_model.safetensors"}
    dangling = work / "dangling-run"
    dangling.mkdir()
    (dangling / "latest.json").write_text(json.dumps({"folder": "step-000009"}))
    broken["latest names no folder"] = dangling
    no_adapter = work / "checkpoint-folder"
    no_adapter.mkdir()
    (no_adapter / "manifest.json").write_text(json.dumps({"method": "full"}))
    broken["no adapter"] = no_adapter
    no_weights = _variant(qlora, work, "no-weights")
    (no_weights / "adapter" / "adapter_model.safetensors").unlink()
    broken["no weights"] = no_weights / "adapter"
    bad_nf4 = _variant(qlora, work, "bad-nf4")
    _edit_manifest(bad_nf4, nf4={"blocksize": "large", "double_quant": False})
    broken["nf4 unreadable"] = bad_nf4 / "manifest.json"
    bad_json = _variant(qlora, work, "bad-json")
    (bad_json / "manifest.json").write_text('{"method": "qlora",')
    broken["manifest unreadable"] = bad_json / "manifest.json"
    out["refusals"], out["refusals_named"] = 0, 0
    for what, path in broken.items():
        given = {"no weights": no_weights, "nf4 unreadable": bad_nf4, "manifest unreadable": bad_json}.get(what, path)
        try:
            find_adapter(given)
        except AdapterError as exc:
            out["refusals"] += 1
            named = str(path) in str(exc)
            if what == "no adapter":  # a full fine-tune's folder: the message says what to do instead, word for word
                named = str(exc) == (
                    f"{path}: no adapter here (adapter_config.json not found); a full fine-tune writes a "
                    "checkpoint, not an adapter: use it as a checkpoint"
                )
            out["refusals_named"] += named

    # applied with the defaults: to its own base; another base and a misfit refused by name
    folder = find_adapter(runs["lora"])
    model, _ = merged(pretrained_init, folder)
    adapted, _ = load_adapted(pretrained_init, folder)
    out["own_base_applied"] = isinstance(model, DecoderLM) + (not adapted.training)
    loaded = load_checkpoint(pretrained_init)
    with torch.no_grad():
        loaded.model.model.norm.weight.add_(0.5)
    other = save_checkpoint(work / "other.safetensors", loaded.model, loaded.tokenizer, dict(loaded.manifest))
    names = (str(other), folder.base_sha256 or "?", weights_digest(loaded.model))
    out["other_base_refused"] = 0
    for apply in (merged, load_adapted):
        try:
            apply(other, folder)
        except AdapterError as exc:
            out["other_base_refused"] += all(n in str(exc) for n in names)
    # a tied base: its digest covers every weight, the head (the embedding) once
    tied = engine_preset("tiny", architecture="qwen2", attention_bias=True, tie_word_embeddings=True)
    bases = [tiny_model_factory(seed, config=tied) for _ in range(3)]
    with torch.no_grad():
        bases[1].model.norm.weight.add_(0.5)
        bases[2].model.layers[0].mlp.down_proj.weight.add_(0.5)
    out["tied_digests_distinct"] = len({weights_digest(b) for b in bases}) == len(bases)
    misfit = _variant(steps["lora"], work, "misfit")
    _edit_manifest(misfit, base_weights_sha256=...)
    weights = load_file(str(misfit / "adapter" / "adapter_model.safetensors"))
    stray = "base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight"
    save_file(
        weights | {stray: next(iter(weights.values())).clone()}, str(misfit / "adapter" / "adapter_model.safetensors")
    )
    out["misfit_refused"] = 0
    try:
        load_adapted(pretrained_init, find_adapter(misfit))
    except AdapterError as exc:
        out["misfit_refused"] += str(misfit / "adapter") in str(exc) and str(pretrained_init) in str(exc)
    return out
