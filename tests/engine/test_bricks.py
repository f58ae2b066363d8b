from __future__ import annotations

import json

import pytest
import torch

from engine.bricks import (
    BRICKS,
    BrickSettings,
    results_json,
    results_table,
    run_brick,
    run_bricks,
    summarize,
    time_call,
)

FAST = BrickSettings(batch_size=2, seq_len=16, new_tokens=4, batch_sizes=(1, 2), warmup=1, reps=2)


def test_summary_statistics() -> None:
    r = summarize("x", [0.3, 0.1, 0.2], warmup=1, per_call_items=10, unit="tokens/s")
    assert (r.min_s, r.median_s, r.mean_s) == (0.1, 0.2, pytest.approx(0.2))
    assert r.cv == pytest.approx(0.5)  # stdev 0.1 / mean 0.2
    assert r.rate == pytest.approx(50.0)


def test_time_call_runs_warmup_and_reps() -> None:
    calls: list[int] = []
    times = time_call(lambda: calls.append(1), warmup=3, reps=4, device=torch.device("cpu"))
    assert len(calls) == 7 and len(times) == 4 and all(t >= 0 for t in times)
    with pytest.raises(ValueError, match="reps"):
        time_call(lambda: None, warmup=0, reps=1, device=torch.device("cpu"))


def test_every_brick_measures() -> None:
    results = run_bricks(s=FAST)
    assert [r.name for r in results] == list(BRICKS)
    for r in results:
        assert r.reps == 2 and 0 < r.min_s <= r.median_s
        assert r.cv >= 0
        if r.name != "ttft":
            assert r.rate is not None and r.rate > 0
    batch = results[-1]
    assert set(batch.extra["by_batch"]) == {"1", "2"}
    decoded = json.loads(results_json(results))
    assert [d["name"] for d in decoded] == list(BRICKS)
    table = results_table(results)
    assert all(name in table for name in BRICKS)


def test_qlora_bricks_and_unknown_name() -> None:
    r = run_brick("train_step", BrickSettings(batch_size=2, seq_len=16, warmup=1, reps=2, qlora=True))
    assert r.extra["qlora"] is True and r.rate is not None
    with pytest.raises(ValueError, match="unknown brick"):
        run_brick("nope", FAST)
