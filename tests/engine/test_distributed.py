"""Data-parallel training: 2 gloo processes on CPU follow the 1-process loss trajectory.

Tolerance.  With the same global batch, DDP computes the same mean loss and the same averaged
gradient as one process; what differs is floating-point summation order (per-rank means combined
in float64, gradients all-reduced in float32) and the matmuls' thread count.  Measured on the
development machine (2 CPU cores, tiny preset, lr 5e-3): pretraining for 8 steps, per-step losses
agree to 4.8e-7 and the final weights to 1.7e-6; masked fine-tuning for 6 steps, losses agree to
3.2e-6.  The tests allow ``LOSS_ATOL = 1e-4`` per step (under 2e-5 relative on losses near 6) and
``WEIGHT_ATOL = 1e-4``: about 30 times the measured noise.  A real defect is far outside it:
averaging the ranks' mean losses without weighting them by their token counts moved the
fine-tuning losses by 2.1e-2 in the same setting.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from engine.checkpoint import load_state
from engine.config import preset
from engine.data import InstructionData, TokenData
from engine.distributed import (
    DistContext,
    DistributedError,
    RankInfo,
    ShardedData,
    rank_device,
    rank_info,
    setup,
    shard_rows,
)
from engine.model import build_model
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from engine.train import LOG_NAME, FinetuneTask, TrainConfig, pretrain, read_log, run_training

LOSS_ATOL = 1e-4
WEIGHT_ATOL = 1e-4
STEPS, BATCH, SEQ, LR = 8, 4, 32, 5e-3
ROOT = Path(__file__).resolve().parents[2]


# --- pure pieces -------------------------------------------------------------------------------


def test_rank_info_reads_torchrun_variables() -> None:
    assert rank_info({}) == RankInfo(0, 1, 0)
    assert rank_info({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == RankInfo(3, 4, 1)
    assert not rank_info({"WORLD_SIZE": "1"}).distributed
    for bad in ({"RANK": "4", "WORLD_SIZE": "4"}, {"RANK": "x", "WORLD_SIZE": "2"}, {"WORLD_SIZE": "0"}):
        with pytest.raises(DistributedError):
            rank_info(bad)


def test_outside_torchrun_everything_is_a_no_op() -> None:
    ctx = setup(torch.device("cpu"), {})
    assert not ctx.active and ctx.is_main and not ctx.owns_group
    model = torch.nn.Linear(2, 2)
    assert ctx.wrap(model) is model
    loss = torch.tensor(2.5, requires_grad=True)
    scaled, value, tokens = ctx.global_loss(loss, 7)
    assert scaled is loss and value == 2.5 and tokens == 7
    assert rank_device(torch.device("cuda"), RankInfo()) == torch.device("cuda")  # untouched when alone


def _tokens(n_windows: int, seq: int) -> TokenData:
    stream = torch.arange(n_windows * seq, dtype=torch.int64)
    return TokenData(stream, stream[: seq * 2], vocab_size=10**6, digest="d")


def test_sharding_sees_every_example_once_per_epoch() -> None:
    seq, batch, world = 4, 6, 3
    data = _tokens(24, seq)  # 24 windows: 4 global batches per epoch
    for step in range(8):  # two epochs
        full = data.batch(step, batch, seq, 0)
        shards = [ShardedData(data, r, world).batch(step, batch, seq, 0) for r in range(world)]
        assert [s.shape[0] for s in shards] == [2, 2, 2]
        assert sorted(torch.cat(shards)[:, 0].tolist()) == sorted(full[:, 0].tolist())
    for epoch in range(2):
        seen = [
            int(w) // seq
            for r in range(world)
            for step in range(epoch * 4, epoch * 4 + 4)
            for w in ShardedData(data, r, world).batch(step, batch, seq, 0)[:, 0]
        ]
        assert sorted(seen) == list(range(24))
    view = ShardedData(data, 1, world)
    assert view.digest == "d" and view.val_batches(2, seq, 1)[0].shape == (2, seq)  # validation is not sharded
    with pytest.raises(DistributedError, match="does not split over 3 processes"):
        view.batch(0, 4, seq, 0)


def test_instruction_batches_shard_ids_and_labels_together() -> None:
    ids = torch.arange(40).view(10, 4)
    pairs = InstructionData(ids, -ids, ids[:2], -ids[:2], digest="x")
    got_ids, got_labels = ShardedData(pairs, 1, 2).batch(0, 4, 0)
    full_ids, _ = pairs.batch(0, 4, 0)
    assert torch.equal(got_ids, full_ids[1::2]) and torch.equal(got_labels, -got_ids)
    with pytest.raises(TypeError):
        shard_rows([1, 2], 0, 2)


# --- 2 processes against 1 -------------------------------------------------------------------


def _losses(out: Path) -> list[float]:
    return [r["loss"] for r in read_log(out / LOG_NAME) if r["kind"] == "train"]


def test_torchrun_pretraining_follows_the_single_process_trajectory(tmp_path: Path) -> None:
    """``torchrun --nproc_per_node=2 -m engine pretrain`` (gloo) against ``pretrain`` in one process."""
    cached_tokenizer(512)  # both ranks read the cache instead of training a tokenizer twice
    cfg = TrainConfig(
        steps=STEPS,
        batch_size=BATCH,
        seq_len=SEQ,
        lr=LR,
        warmup_steps=2,
        eval_every=0,
        save_every=4,
        seed=0,
        grad_clip=1.0,
    )
    single = pretrain(tmp_path / "one", cfg, config=preset("tiny"), device="cpu")

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "engine",
        "pretrain",
        str(tmp_path / "two"),
        "--preset",
        "tiny",
        "--steps",
        str(STEPS),
        "--batch-size",
        str(BATCH),
        "--seq-len",
        str(SEQ),
        "--lr",
        str(LR),
        "--warmup",
        "2",
        "--eval-every",
        "0",
        "--save-every",
        "4",
        "--seed",
        "0",
        "--device",
        "cpu",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    two = tmp_path / "two"
    records = read_log(two / LOG_NAME)
    # One writer: one start record, one record per step, one per checkpoint.
    assert [r["kind"] for r in records].count("start") == 1
    assert [r["step"] for r in records if r["kind"] == "train"] == list(range(STEPS))
    assert [r["step"] for r in records if r["kind"] == "checkpoint"] == [4, 8]
    assert sorted(p.name for p in two.iterdir()) == ["latest.json", "log.jsonl", "step-000004", "step-000008"]
    # The global batch is the same: every step saw BATCH * SEQ tokens in both runs.
    assert {r["tokens"] for r in records if r["kind"] == "train"} == {BATCH * SEQ}

    ddp, ref = _losses(two), _losses(single.out_dir)
    assert len(ddp) == len(ref) == STEPS
    assert ref[-1] < ref[0] - 0.05  # it learned: the comparison is not between two flat lines
    assert max(abs(a - b) for a, b in zip(ddp, ref, strict=True)) <= LOSS_ATOL
    w2 = load_state(two / "step-000008" / "model.safetensors")
    w1 = load_state(single.out_dir / "step-000008" / "model.safetensors")
    assert w1.keys() == w2.keys()
    assert max(float((w1[k] - w2[k]).abs().max()) for k in w1) <= WEIGHT_ATOL
    summaries = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert summaries, proc.stdout  # the CLI still reports


def _masked_pairs(seed: int = 0, rows: int = 16, seq: int = 24) -> InstructionData:
    """Instruction rows whose prompts (masked) have very different lengths: ranks get unequal token counts."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 500, (rows, seq), generator=gen)
    labels = ids.clone()
    for i in range(rows):
        labels[i, : 1 + (i * 7) % (seq - 2)] = -100  # position 0 always masked, like a BOS prompt
    return InstructionData(ids, labels, ids[:2], labels[:2], digest="synthetic")


def _finetune(out: Path, tokenizer: EngineTokenizer) -> dict[str, Any]:
    torch.manual_seed(0)
    model = build_model(preset("tiny"), device="cpu")
    cfg = TrainConfig(
        steps=6, batch_size=4, seq_len=24, lr=LR, warmup_steps=1, eval_every=0, eval_batches=1, save_every=0, seed=0
    )
    task = FinetuneTask(model, tokenizer, _masked_pairs(), cfg, "full", None)
    result = run_training(task, cfg, out)
    return {"losses": result.losses, "tokens": result.tokens}


def _rank_main(rank: int, port: int, out: str, results: str, tokenizer_json: str) -> None:
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    torch.set_num_threads(1)
    got = _finetune(Path(out), EngineTokenizer.from_json(tokenizer_json))
    Path(results, f"rank-{rank}.json").write_text(json.dumps(got))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_masked_fine_tuning_weights_ranks_by_their_tokens(tmp_path: Path) -> None:
    """Ranks with unequal unmasked-token counts still give the 1-process loss (mean over all tokens)."""
    rows = _masked_pairs().batch(0, 4, 0)[1]
    per_rank = [int((rows[r::2, 1:] != -100).sum()) for r in range(2)]
    assert per_rank[0] != per_rank[1]  # the case an unweighted mean of rank means gets wrong

    tokenizer = cached_tokenizer(512)
    single = _finetune(tmp_path / "one", tokenizer)
    (tmp_path / "res").mkdir()
    mp.spawn(
        _rank_main,
        args=(_free_port(), str(tmp_path / "two"), str(tmp_path / "res"), tokenizer.to_json()),
        nprocs=2,
        join=True,
    )
    ranks = [json.loads((tmp_path / "res" / f"rank-{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1]  # every rank agrees on the global loss
    assert ranks[0]["tokens"] == single["tokens"]
    assert max(abs(a - b) for a, b in zip(ranks[0]["losses"], single["losses"], strict=True)) <= LOSS_ATOL
    # Only rank 0 wrote, and its log holds the global losses.
    assert _losses(tmp_path / "two") == ranks[0]["losses"]


def test_a_dist_context_outside_a_group_does_not_destroy_anything() -> None:
    ctx = DistContext(RankInfo(), torch.device("cpu"), owns_group=False)
    ctx.close()
    ctx.barrier()
    assert not torch.distributed.is_initialized()
