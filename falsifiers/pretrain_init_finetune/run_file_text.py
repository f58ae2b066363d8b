"""A run folder's JSON files and log, as text: one canonical form, so two runs compare byte for byte.

Every JSON file a training run writes (the newest-checkpoint pointer, each step's train state) is
``json.dumps(obj, indent=2, sort_keys=True)`` and a newline, and every log line is
``json.dumps(record, sort_keys=True)``: keys sorted, so that the same run twice gives the same
bytes and a diff of two runs shows only what differs, and a log a line-oriented tool reads a
record at a time.  Measured on a short pretraining run saving every step: each file's text against
the canonical form of what it holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.config import preset
from engine.tokenizer import EngineTokenizer
from engine.train import JsonlLog, TrainConfig, pretrain
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(
    observes=["json_files", "json_files_differing", "log_lines", "log_lines_differing", "differing", "log_class"],
    ids=["FALSIFY-PINIT-018"],
)
def run_files_in_canonical_form(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, pretrain_data: Any, steps: int = 2
) -> dict[str, Any]:
    """A ``steps``-step tiny pretraining run that saves and evaluates every step; and engine.train's
    JsonlLog used directly, at a path whose folders do not exist yet."""

    out = fresh_dir(tmp_path, "run-text-")
    cfg = TrainConfig(steps=steps, batch_size=2, seq_len=16, warmup_steps=0, save_every=1, eval_every=1)
    pretrain(
        out, cfg, config=preset("tiny", vocab_size=engine_tokenizer.vocab_size), tokenizer=engine_tokenizer,
        data=pretrain_data, device="cpu",
    )  # fmt: skip
    differing: list[str] = []
    files = sorted(out.rglob("*.json"))
    for path in files:
        text = path.read_text(encoding="utf-8")
        if text != json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n":
            differing.append(f"{path.relative_to(out)}: {text[:120]!r}")
    lines = (out / "log.jsonl").read_text(encoding="utf-8").splitlines()
    bad_lines = [line for line in lines if line != json.dumps(json.loads(line), sort_keys=True)]
    differing += [f"log.jsonl: {line[:120]!r}" for line in bad_lines]
    # the log class as a program uses it: it makes its folders, each record is on disk once written
    # (a reader may follow the file while the run goes on), append adds and a fresh log starts empty
    path = fresh_dir(tmp_path, "jsonl-") / "not" / "yet" / "log.jsonl"
    log = JsonlLog(path, append=False)
    log.write({"b": 1, "a": [2]})
    log.write({"kind": "x"})
    written = path.read_text(encoding="utf-8").splitlines()
    log.close()
    appended = JsonlLog(path, append=True)
    appended.write({"kind": "y"})
    appended.close()
    after_append = path.read_text(encoding="utf-8").splitlines()
    fresh = JsonlLog(path, append=False)
    fresh.write({"kind": "z"})
    fresh.close()
    log_class = [
        written == ['{"a": [2], "b": 1}', '{"kind": "x"}'],
        after_append == [*written, '{"kind": "y"}'],
        path.read_text(encoding="utf-8").splitlines() == ['{"kind": "z"}'],
        log.path == path,  # the file it names is the file it writes
    ]
    return {
        "log_class": log_class,
        "json_files": len(files),
        "json_files_differing": len(differing) - len(bad_lines),
        "log_lines": len(lines),
        "log_lines_differing": len(bad_lines),
        "differing": differing,
    }
