"""Data-parallel scaling: training tokens/s with 1 process against N processes under torchrun.

Strong scaling: the global batch (``--batch-size``) is the same for every process count, so each
of N ranks computes 1/N of it and DDP all-reduces the gradients; the loss trajectory is the same
(tests/engine/test_distributed.py), only the speed changes.  Every run is a fresh
``torchrun --standalone --nproc_per_node=N`` of the engine's ``pretrain`` (gloo on CPU, NCCL on
CUDA); tokens/s counts the global tokens of the steps after ``--warmup`` over their wall time
(rank 0's clock, which waits for every rank at each all-reduce).  Tokenizing the corpus, the
final validation and checkpoint are outside the timed window.

On CPU torchrun gives each rank ``OMP_NUM_THREADS=1``, so 2 processes on a 2-core machine trade
intra-op threads for data parallelism: expect a ratio near 1, not 2.  ``--threads 1`` gives every
run one thread per rank, which isolates the data-parallel gain (and is the fair baseline on a
machine that other jobs share: busy cores make a multi-threaded single process wait on stragglers).

    python bench/ddp_scaling.py                        # tiny preset, 1 vs 2 processes, CPU
    python bench/ddp_scaling.py --preset small --nprocs 1,2,4 --device cuda --batch-size 32
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _figure import add_smoke, figure

ROOT = Path(__file__).resolve().parents[1]


def worker(args: argparse.Namespace) -> None:
    """One rank: pretrain, timing the steps after the warm-up; rank 0 writes the figure."""
    sys.path.insert(0, str(ROOT))
    # a torchrun rank imports torch and the engine once the repository root is on its path
    import torch

    from engine.config import preset
    from engine.data import tokenize_corpus
    from engine.distributed import rank_info
    from engine.tokenizer import cached_tokenizer
    from engine.train import TrainConfig, pretrain

    config = preset(args.preset)
    tok = cached_tokenizer(config.vocab_size)
    data = tokenize_corpus(tok)
    steps = args.warmup + args.steps
    cfg = TrainConfig(
        steps=steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=1e-3,
        warmup_steps=2,
        eval_every=0,
        eval_batches=1,
        save_every=0,
        seed=0,
    )
    marks: dict[int, tuple[float, int]] = {}

    def on_record(record: dict[str, Any]) -> None:
        if record["kind"] == "train":
            marks[record["step"]] = (time.perf_counter(), record["tokens"])

    with tempfile.TemporaryDirectory(prefix="pv-ddp-bench-") as out:
        pretrain(out, cfg, config=config, tokenizer=tok, data=data, device=args.device, on_record=on_record)
    if rank_info().rank != 0:
        return
    first, last = args.warmup - 1, steps - 1
    tokens = sum(marks[s][1] for s in range(args.warmup, steps))
    seconds = marks[last][0] - marks[first][0]
    Path(args.result).write_text(
        json.dumps(
            {
                "tokens_per_s": tokens / seconds,
                "seconds": seconds,
                "tokens": tokens,
                "threads": torch.get_num_threads(),
                "world_size": rank_info().world_size,
            }
        )
    )


def measure(nproc: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pv-ddp-bench-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            str(Path(__file__).resolve()),
            "--worker",
            "--result",
            str(result),
            "--preset",
            args.preset,
            "--steps",
            str(args.steps),
            "--warmup",
            str(args.warmup),
            "--batch-size",
            str(args.batch_size),
            "--seq-len",
            str(args.seq_len),
        ]
        if args.device:
            cmd += ["--device", args.device]
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        if args.threads:
            env["OMP_NUM_THREADS"] = str(args.threads)  # torchrun keeps a value that is already set
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not result.is_file():
            sys.exit(f"torchrun --nproc_per_node={nproc} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        data: dict[str, Any] = json.loads(result.read_text())
        return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--nprocs", default="1,2", help="comma-separated process counts; the first is the baseline")
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--batch-size", type=int, default=16, help="global batch (same for every process count)")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: $PV_DEVICE, else auto)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="intra-op threads per rank for every run (default: torchrun's: all for 1 process, 1 per rank for more)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.warmup, args.batch_size, args.seq_len = 2, 1, 4, 32
    if args.worker:
        worker(args)
        return
    counts = [int(n) for n in args.nprocs.split(",")]
    if args.warmup < 1 or args.steps < 1:
        sys.exit("--warmup and --steps must be >= 1")
    if any(args.batch_size % n for n in counts):
        sys.exit(f"--batch-size {args.batch_size} must divide over every process count {counts}")
    rows = [(n, measure(n, args)) for n in counts]
    base = rows[0][1]["tokens_per_s"]
    print(
        f"DDP scaling, preset {args.preset}, global batch {args.batch_size} x {args.seq_len} tokens, "
        f"{args.steps} timed steps after {args.warmup} warm-up, {os.cpu_count()} CPUs"
    )
    print(f"{'processes':>9}  {'threads/rank':>12}  {'tokens/s':>10}  {'ratio':>6}")
    for n, r in rows:
        print(f"{n:>9}  {r['threads']:>12}  {r['tokens_per_s']:>10.0f}  {r['tokens_per_s'] / base:>6.2f}")
    if len(rows) > 1:
        n, r = rows[-1]
        print(f"ratio {n}p/{rows[0][0]}p: {r['tokens_per_s'] / base:.2f}")
        figure(f"{n} processes / {rows[0][0]}: {r['tokens_per_s'] / base:.2f}x tokens/s")
    if args.json is not None:
        args.json.write_text(json.dumps({str(n): r for n, r in rows}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
