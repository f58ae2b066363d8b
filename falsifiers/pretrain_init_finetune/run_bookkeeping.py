"""A training run's own bookkeeping, as a user reads it back: the log's times, the result's seconds
and throughput, the checkpoint it names and the labels of the training state it saved.

Other falsifiers read the losses, the weights and the resumes.  These fields are written beside
them and read by people and tools (dashboards read ``elapsed_s``, a scheduler reads
``tokens_per_second``, a resume script reads ``latest.json``), and nothing compared them with what
they say they are.  The run's wall time is measured around ``run_training`` here; the rest is read
from the files with ``json`` and safetensors' own ``safe_open``.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.config import preset
from engine.data import TokenData
from engine.model import build_model
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig
from engine.train.loop import TrainResult, run_training
from engine.train.tasks import PretrainTask
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

STEPS, SAVE_EVERY, BATCH = 3, 2, 2
STATE_LABELS = {"format": "pv-engine-train-state"}  # what the engine's docs say the file carries


def _pairs(doc: dict[str, Any]) -> list[list[Any]]:
    """A JSON object as its [key, value] pairs in key order (an expect holds no dict literal)."""
    return [[k, v] for k, v in sorted(doc.items())]


def _read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


@checker(
    observes=["elapsed_as_documented", "seconds_as_documented", "throughput", "checkpoints", "state_files"],
    ids=["FALSIFY-PINIT-020"],
)
def run_bookkeeping_as_documented(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path
) -> dict[str, Any]:
    """Tiny-preset pretraining for 3 steps at batch 2, saving at step 2 and at the end."""

    cfg = TrainConfig(steps=STEPS, batch_size=BATCH, seq_len=16, lr=1e-3, warmup_steps=0, save_every=SAVE_EVERY, seed=0)
    torch.manual_seed(0)
    task = PretrainTask(
        build_model(preset("tiny", vocab_size=engine_tokenizer.vocab_size)), engine_tokenizer, pretrain_data, cfg
    )
    out = fresh_dir(tmp_path, "bookkeeping-")
    started = time.perf_counter()
    result = run_training(task, cfg, out)
    wall = time.perf_counter() - started

    log = [json.loads(line) for line in (out / "log.jsonl").read_text(encoding="utf-8").splitlines()]
    train = [r for r in log if r["kind"] == "train"]
    elapsed = [r["elapsed_s"] for r in train]
    # seconds since the run's start, rounded to 4 decimals, rising with every step, within the wall
    elapsed_ok = (
        len(elapsed) == STEPS
        and all(isinstance(e, float) and 0 < e <= wall and e == round(e, 4) for e in elapsed)
        and all(a < b for a, b in itertools.pairwise(elapsed))
    )
    seconds_ok = isinstance(result.seconds, float) and elapsed[-1] <= result.seconds <= wall

    tokens = sum(r["tokens"] for r in train)
    idle = TrainResult(out, 0.0, [], {}, None, 10, 0.0)  # a run that took no measurable time
    throughput = [
        result.tokens == tokens == STEPS * BATCH * cfg.seq_len,
        result.tokens_per_second == tokens / result.seconds,
        idle.tokens_per_second,
    ]

    saved = [f"step-{s:06d}" for s in (SAVE_EVERY, STEPS)]
    checkpoints = [
        result.checkpoint == out / saved[-1],
        [Path(r["path"]).relative_to(out).as_posix() for r in log if r["kind"] == "checkpoint"],
        _pairs(_read(out / "latest.json")),
    ]

    state_files = []
    for folder in saved:
        with safe_open(str(out / folder / "train_state.safetensors"), framework="pt") as f:
            labels = f.metadata()
        position = _read(out / folder / "train_state.json")["data_position"]
        state_files.append([folder, labels == STATE_LABELS, _pairs(position)])
    return {
        "elapsed_as_documented": elapsed_ok,
        "seconds_as_documented": seconds_ok,
        "throughput": throughput,
        "checkpoints": checkpoints,
        "state_files": state_files,
    }
