"""Data-parallel training (engine.distributed) against the same run in one process.

The checker runs under ``torchrun`` (the contract's ``launch: {nproc: 2}``): every rank trains the
same full fine-tune through ``engine.train.run_training`` on instruction rows whose prompts are
masked to very different lengths, so the two ranks' halves of each global batch hold unequal
numbers of learned tokens, the case where a mean of the ranks' mean losses is not the global mean.
Rank 0 then trains the same run again as one process (the torchrun variables removed, so the
engine sees no group) and compares the two run folders: the log's losses and token counts step by
step, the checkpoints written, and every weight of the last one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from engine.checkpoint import load_state
from engine.config import preset
from engine.data import InstructionData
from engine.distributed import rank_info
from engine.model import build_model
from engine.tokenizer import cached_tokenizer
from engine.train import FinetuneTask, TrainConfig, run_training
from pv.checkers import checker

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def masked_rows(rows: int = 16, seq: int = 24, seed: int = 0) -> Any:
    """Instruction rows of random ids whose first 1 + (7 i mod (seq - 2)) labels are masked."""

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 500, (rows, seq), generator=gen)
    labels = ids.clone()
    for i in range(rows):
        labels[i, : 1 + (i * 7) % (seq - 2)] = -100
    return InstructionData(ids, labels, ids[:2], labels[:2], digest="masked-rows")


def _train(out: Path, steps: int, batch_size: int, seq_len: int) -> None:

    torch.manual_seed(0)
    model = build_model(preset("tiny"), device="cpu")
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seq_len=seq_len,
        lr=5e-3,
        warmup_steps=1,
        eval_every=0,
        eval_batches=1,
        save_every=steps // 2,
        seed=0,
    )
    task = FinetuneTask(model, cached_tokenizer(512), masked_rows(seq=seq_len), cfg, "full", None)
    run_training(task, cfg, out)


def _log(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text(encoding="utf-8").splitlines()]


@checker(
    observes=[
        "ranks",
        "tokens_unequal",
        "steps_logged",
        "loss_max_diff",
        "token_mismatches",
        "start_records",
        "same_checkpoints",
        "weights_compared",
        "weight_max_diff",
    ],
    ids=["FALSIFY-DDP-001"],
)
def data_parallel_matches_one_process(
    pv_artifacts: Path, steps: int = 6, batch_size: int = 4, seq_len: int = 24
) -> dict[str, Any]:
    """A full fine-tune on 2 gloo ranks against the same run in one process (see the module)."""

    info = rank_info()
    torch.set_num_threads(1)
    # Every rank names the same run folder: rank 0's artifacts (rank r's are a folder inside them).
    root = pv_artifacts if info.rank == 0 else pv_artifacts.parent
    _train(root / "ddp", steps, batch_size, seq_len)
    if dist.is_initialized():
        dist.barrier()
    if info.rank != 0:
        return {}
    saved = {k: os.environ.pop(k) for k in TORCHRUN_VARIABLES if k in os.environ}
    try:
        _train(root / "one", steps, batch_size, seq_len)
    finally:
        os.environ.update(saved)
    ddp, one = _log(root / "ddp"), _log(root / "one")
    train_ddp = [r for r in ddp if r["kind"] == "train"]
    train_one = [r for r in one if r["kind"] == "train"]
    rows = masked_rows(seq=seq_len).batch(0, batch_size, 0)[1]
    per_rank = [int((rows[r :: info.world_size, 1:] != -100).sum()) for r in range(info.world_size)]
    diffs = [abs(a["loss"] - b["loss"]) for a, b in zip(train_ddp, train_one, strict=False)]
    folders = sorted(p.name for p in (root / "ddp").iterdir())
    last = f"step-{steps:06d}"
    weights_ddp = load_state(root / "ddp" / last / "model.safetensors")
    weights_one = load_state(root / "one" / last / "model.safetensors")
    common = sorted(set(weights_ddp) & set(weights_one))
    return {
        "ranks": info.world_size,
        "tokens_unequal": int(len(set(per_rank)) > 1),
        "steps_logged": len(train_ddp) if [r["step"] for r in train_ddp] == list(range(steps)) else -1,
        "loss_max_diff": max(diffs) if len(diffs) == steps else float("inf"),
        "token_mismatches": sum(a["tokens"] != b["tokens"] for a, b in zip(train_ddp, train_one, strict=False)),
        "start_records": sum(r["kind"] == "start" for r in ddp),
        "same_checkpoints": int(folders == sorted(p.name for p in (root / "one").iterdir())),
        "weights_compared": len(common) if set(weights_ddp) == set(weights_one) else -1,
        "weight_max_diff": max(float((weights_ddp[k] - weights_one[k]).abs().max()) for k in common),
    }
