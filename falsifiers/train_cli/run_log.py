"""What a fine-tune's run folder tells a user about the run: ``log.jsonl``, each step's manifest and
its adapter's files.

``python -m engine finetune`` (one LoRA adapter, and full weights) runs straight through, and again
from a copy of its folder as a run stopped after its step-2 checkpoint leaves it, with ``--resume``.  The log is
read record by record against what was asked for and what was written: the settings as the flags
give them (the defaults of the rest written out here), the step each record belongs to, the
checkpoints on disk, the trained parameter count from the step's weights file, and each
step's learned tokens from the tokenized data's labels (every row is in every batch, so the count
does not depend on the order of rows).  Each step's ``adapter_config.json`` must be, field for field,
what PEFT itself writes for the command's LoRA settings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from safetensors import safe_open
from safetensors.torch import load_file

from engine.checkpoint import make_manifest, save_checkpoint
from engine.data import read_examples, tokenize_pairs
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.inspect_reports import fields_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

ROWS, STEPS, SEQ_LEN = 12, 4, 48
# TrainConfig as the flags below give it; the rest are the documented defaults of `finetune`.
FLAG_CONFIG = {"steps": STEPS, "seq_len": SEQ_LEN, "lr": 0.01, "warmup_steps": 1, "seed": 5}
FLAG_CONFIG |= {"eval_every": 0, "save_every": 2, "grad_clip": 0.5}
DEFAULTS = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-08, "eval_batches": 4, "min_lr_ratio": 0.1, "weight_decay": 0.0}


def _read_log(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text(encoding="utf-8").splitlines()]


def _until_checkpoint_2(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cut = next(i for i, r in enumerate(records) if r["kind"] == "checkpoint" and r["step"] == 2)
    return records[: cut + 1]


def _stopped_copy(run: Path, copy: Path) -> None:
    """``copy``: ``run`` as a run stopped after its step-2 checkpoint leaves it: no later step,
    latest.json at step 2, and the log up to that checkpoint's record."""
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns(f"step-{STEPS:06d}"))
    (copy / "latest.json").write_text(json.dumps({"folder": "step-000002", "step": 2}), encoding="utf-8")
    kept = _until_checkpoint_2(_read_log(run))
    (copy / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


def _expected_records(folder: Path, start: int, config: dict[str, Any], trainable: int, learned: int) -> list[Any]:
    """The records a segment of the run starting at ``start`` must write, without the values a
    falsifier cannot know (loss, lr, grad_norm, elapsed_s): those keys are only required to exist."""
    out: list[dict[str, Any]] = [{"kind": "start", "step": start, "resume": start > 0, "config": config}]
    out[0]["trainable_params"] = trainable
    if start == 0:
        out.append({"kind": "step0", "step": 0, "loss": ...})
    for step in range(start, STEPS):
        out.append({"kind": "train", "step": step, "tokens": learned, "loss": ..., "lr": ...})
        out[-1] |= {"grad_norm": ..., "elapsed_s": ...}
        done = step + 1
        if done == STEPS:
            out.append({"kind": "val", "step": done, "val_loss": ...})
        if done % 2 == 0:
            out.append({"kind": "checkpoint", "step": done, "path": str(folder / f"step-{done:06d}")})
    return out


def _records_differing(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> int:
    """Records out of place or with a field other than expected (``...``: any value, but present)."""
    differing = abs(len(got) - len(want))
    for g, w in zip(got, want, strict=False):
        known = {k: v for k, v in w.items() if v is not ...}
        differing += set(g) != set(w) or any(g.get(k) != v for k, v in known.items())
    return differing


@checker(
    observes=[
        "runs", "exit_codes_nonzero", "records", "records_differing", "manifests", "manifest_fields_differing",
        "adapter_config_fields", "adapter_config_differing",
    ],
    ids=["FALSIFY-TCLI-005"],
)  # fmt: skip
def run_folder_tells_the_run(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """A LoRA and a full-weights ``finetune`` of 4 steps with every row in every batch, each straight
    and resumed after its step-2 checkpoint: every record of the logs, and both step manifests of
    each run (with the LoRA adapter's files)."""

    run = cli_runner()
    root = fresh_dir(tmp_path, "run-log-")
    model = tiny_model_factory(0, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    base = save_checkpoint(root / "base.safetensors", model, engine_tokenizer, make_manifest(step=0))
    rows = [{"prompt": f"Count to {i}.", "response": " ".join(map(str, range(i)))} for i in range(2, 2 + ROWS)]
    data = root / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tokenized = tokenize_pairs(read_examples(data), engine_tokenizer, SEQ_LEN)
    train_rows = tokenized.input_ids.size(0)  # the rest are held out for validation
    learned = int((tokenized.labels != -100).sum())  # the response tokens of every training row
    settings: list[Any] = ["--data", data, "--steps", STEPS, "--batch-size", train_rows, "--seq-len", SEQ_LEN]
    settings += ["--lr", 0.01, "--warmup", 1, "--seed", 5, "--eval-every", 0, "--save-every", 2, "--grad-clip", 0.5]
    config = FLAG_CONFIG | DEFAULTS | {"batch_size": train_rows}
    peft_config = _peft_adapter_config(fresh_dir(tmp_path, "peft-config-"))
    out = dict.fromkeys(("runs", "exit_codes_nonzero", "records", "records_differing", "manifests"), 0)
    out |= dict.fromkeys(("manifest_fields_differing", "adapter_config_fields", "adapter_config_differing"), 0)
    for method in ("lora", "full"):
        straight, resumed = root / f"{method}-straight", root / f"{method}-resumed"
        first = run("finetune", base, straight, "--method", method, *settings)
        out["runs"] += 1
        if first.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        _stopped_copy(straight, resumed)
        again = run("finetune", base, resumed, "--method", method, *settings, "--resume")
        out["runs"] += 1
        if again.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        weights = "adapter/adapter_model.safetensors" if method == "lora" else "model.safetensors"
        # what trains: the adapter's matrices, or every tensor of the (untied) model
        trainable = sum(t.numel() for t in load_file(straight / "step-000002" / weights).values())
        wants = {
            straight: _expected_records(straight, 0, config, trainable, learned),
            # the stopped run's own records (as it wrote them, naming its folder), then the resumed segment
            resumed: _until_checkpoint_2(_expected_records(straight, 0, config, trainable, learned))
            + _expected_records(resumed, 2, config, trainable, learned),
        }
        for folder, want in wants.items():
            got = _read_log(folder)
            out["records"] += len(got)
            out["records_differing"] += _records_differing(got, want)
            for step in (2, STEPS):
                expected = {"seed": 5, "step": step, "data_digest": tokenized.digest, "train_config": config}
                manifest = _step_manifest(folder / f"step-{step:06d}", method)
                out["manifests"] += 1
                out["manifest_fields_differing"] += fields_differing({k: manifest.get(k) for k in expected}, expected)
                if method != "lora":
                    continue
                adapter = folder / f"step-{step:06d}" / "adapter"
                written = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
                out["adapter_config_fields"] += len(peft_config)
                out["adapter_config_differing"] += fields_differing(written, peft_config)
                with safe_open(str(adapter / "adapter_model.safetensors"), framework="pt") as fh:
                    out["adapter_config_differing"] += fh.metadata() != {"format": "pt", "adapter_name": "default"}
    return out


def _step_manifest(step: Path, method: str) -> dict[str, Any]:
    """A step's manifest: ``manifest.json`` beside an adapter, or the checkpoint's own header."""

    if method == "lora":
        doc: dict[str, Any] = json.loads((step / "manifest.json").read_text(encoding="utf-8"))
        return doc
    with safe_open(str(step / "model.safetensors"), framework="pt") as fh:
        manifest: dict[str, Any] = json.loads(fh.metadata()["manifest"])
    return manifest


def _peft_adapter_config(root: Path) -> dict[str, Any]:
    """adapter_config.json as PEFT itself writes it for the command's LoRA defaults (r 8, alpha 16,
    no dropout, q_proj and v_proj)."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft import LoraConfig

    LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]).save_pretrained(str(root))
    doc: dict[str, Any] = json.loads((root / "adapter_config.json").read_text(encoding="utf-8"))
    return doc
