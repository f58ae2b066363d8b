from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from engine.bricks import (
    BRICKS,
    CALIBRATION_MARGIN,
    BrickSettings,
    calibrate,
    results_json,
    results_table,
    run_brick,
    run_bricks,
    summarize,
    summarize_timing,
    time_call,
)
from engine.faults import FAULTS

CPU = torch.device("cpu")
# one intra-op thread: with torch's two on this shared 2-core machine, a 50 us brick can take 5 ms
FAST = BrickSettings(
    batch_size=2, seq_len=16, new_tokens=4, batch_sizes=(1, 2), warmup=1, reps=2, min_rep_s=0.002, threads=1
)


class StepClock:
    """A clock that advances only when a scripted call says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def call(self, cost: float) -> None:
        self.calls += 1
        self.now += cost


def test_summary_statistics() -> None:
    r = summarize("x", [0.3, 0.1, 0.2], warmup=1, per_call_items=10, unit="tokens/s")
    assert (r.min_s, r.median_s, r.mean_s) == (0.1, 0.2, pytest.approx(0.2))
    assert r.cv == pytest.approx(0.5)  # stdev 0.1 / mean 0.2
    assert r.rate == pytest.approx(50.0)


def test_time_call_without_target_times_one_call_per_rep() -> None:
    calls: list[int] = []
    timing = time_call(lambda: calls.append(1), warmup=3, reps=4, device=CPU)
    assert len(calls) == 7 and timing.calls_per_rep == 1 and timing.calibration_calls == 0
    assert len(timing.per_call_s) == 4 and timing.per_call_s == timing.rep_s and len(timing.warmup_s) == 3
    assert all(t >= 0 for t in timing.per_call_s)
    for bad in ({"reps": 1}, {"reps": 2, "warmup": -1}, {"reps": 2, "min_rep_s": -0.1}):
        with pytest.raises(ValueError):
            time_call(lambda: None, **{"warmup": 0, "device": CPU, **bad})  # type: ignore[arg-type]


def test_time_call_batches_a_cheap_callable_up_to_the_target() -> None:
    # Scripted clock: a 0.1 us call, so the batch size follows from the target alone. (With the
    # wall clock this test failed under load: a preempted calibration call shrank the batch.)
    clock = StepClock()
    timing = time_call(lambda: clock.call(1e-7), warmup=2, reps=3, device=CPU, min_rep_s=0.005, clock=clock)
    n = timing.calls_per_rep
    assert n >= 0.005 / 1e-7  # enough calls that one repetition reaches the target
    assert clock.calls == 2 + timing.calibration_calls + 3 * n
    assert timing.per_call_s == [t / n for t in timing.rep_s]
    assert min(timing.rep_s) >= 0.005
    assert len(timing.cpu_per_call_s) == 3


def test_time_call_on_the_wall_clock_accounts_for_every_call() -> None:
    calls: list[int] = []
    timing = time_call(lambda: calls.append(1), warmup=2, reps=3, device=CPU, min_rep_s=0.005)
    n = timing.calls_per_rep
    assert n >= 1 and len(calls) == 2 + timing.calibration_calls + 3 * n
    assert timing.per_call_s == [t / n for t in timing.rep_s]
    assert len(timing.rep_s) == len(timing.cpu_per_call_s) == 3


def test_scripted_clock_gives_exact_figures() -> None:
    clock = StepClock()
    costs = iter([0.5, 0.5] + [0.001] * 10_000)  # two cold warm-up calls, then 1 ms calls
    timing = time_call(lambda: clock.call(next(costs)), warmup=2, reps=4, device=CPU, min_rep_s=0.02, clock=clock)
    n = timing.calls_per_rep
    assert n == math.ceil(CALIBRATION_MARGIN * 0.02 / 0.001)
    assert timing.warmup_s == [0.5, 0.5]
    assert timing.rep_s == pytest.approx([n * 0.001] * 4) and min(timing.rep_s) >= 0.02
    assert timing.per_call_s == pytest.approx([0.001] * 4)
    assert clock.calls == 2 + timing.calibration_calls + 4 * n
    r = summarize_timing("probe", timing, warmup=2)
    assert (r.reps, r.calls_per_rep, r.cv) == (4, n, pytest.approx(0.0, abs=1e-9))


def test_repetitions_short_of_the_target_are_timed_again_with_more_calls() -> None:
    # 1 ms a call through the warm-up and calibration (2 + 1 + 10 calls), 0.7 ms from then on: 25
    # calls last 17.5 ms < 20 ms, so the repetitions are timed again with 36 calls (25.2 ms).
    clock = StepClock()
    cost = lambda: clock.call(0.001 if clock.calls < 13 else 0.0007)  # noqa: E731
    timing = time_call(cost, warmup=2, reps=3, device=CPU, min_rep_s=0.02, clock=clock)
    assert timing.calls_per_rep == math.ceil(CALIBRATION_MARGIN * 0.02 * 25 / 0.0175)
    assert min(timing.rep_s) >= 0.02 and timing.per_call_s == pytest.approx([0.0007] * 3)
    assert timing.calibration_calls == 11 + 3 * 25
    assert clock.calls == 2 + timing.calibration_calls + 3 * timing.calls_per_rep


def test_retiming_stops_after_its_rounds() -> None:
    # every call half as long as the one before: no batch size keeps up, and the figures say so
    clock = StepClock()
    costs = iter(0.001 * 0.5 ** (i / 50) for i in range(1_000_000))
    timing = time_call(lambda: clock.call(next(costs)), warmup=0, reps=2, device=CPU, min_rep_s=0.02, clock=clock)
    assert min(timing.rep_s) < 0.02
    assert clock.calls == timing.calibration_calls + 2 * timing.calls_per_rep


def test_calibrate_keeps_one_call_when_a_call_outlasts_the_target() -> None:
    clock = StepClock()
    assert calibrate(lambda: clock.call(0.05), 0.02, device=CPU, clock=clock) == (1, 1)
    assert calibrate(lambda: clock.call(0.05), 0.0, device=CPU, clock=clock) == (1, 0)
    # half the target in one call: three calls make 1.25x of it
    assert calibrate(lambda: clock.call(0.01), 0.02, device=CPU, clock=clock) == (3, 1)


def test_warmup_fault_mixes_cold_calls_into_the_figures() -> None:
    def run() -> tuple[list[float], float]:
        clock = StepClock()
        costs = iter([0.5] + [0.001] * 10_000)
        t = time_call(lambda: clock.call(next(costs)), warmup=1, reps=3, device=CPU, min_rep_s=0.01, clock=clock)
        return t.per_call_s, summarize_timing("probe", t, warmup=1).cv

    clean, clean_cv = run()
    with FAULTS.enabled("bricks_warmup_timed"):
        faulty, faulty_cv = run()
    assert clean == pytest.approx([0.001] * 3) and clean_cv == pytest.approx(0.0, abs=1e-9)
    assert len(faulty) == 4 and faulty[0] == 0.5 and faulty_cv > 1


def test_every_brick_measures() -> None:
    results = run_bricks(s=FAST)
    assert [r.name for r in results] == list(BRICKS)
    for r in results:
        assert r.reps == 2 and 0 < r.min_s <= r.median_s
        assert r.cv >= 0 and r.calls_per_rep >= 1 and r.extra["shortest_rep_s"] > 0
        if r.name != "ttft":
            assert r.rate is not None and r.rate > 0
    batch = results[-1]
    assert set(batch.extra["by_batch"]) == {"1", "2"}
    assert batch.extra["worst_cv"] == max(v["cv"] for v in batch.extra["by_batch"].values())
    assert next(r for r in results if r.name == "loss").calls_per_rep > 1  # sub-millisecond: batched
    decoded = json.loads(results_json(results))
    assert [d["name"] for d in decoded] == list(BRICKS)
    assert all(d["calls_per_rep"] >= 1 for d in decoded)
    table = results_table(results)
    assert all(name in table for name in BRICKS) and "calls/rep" in table


def test_threads_setting_applies_and_is_restored() -> None:
    before = torch.get_num_threads()
    r = run_brick("loss", BrickSettings(batch_size=2, seq_len=16, warmup=1, reps=2, min_rep_s=0.001, threads=1))
    assert r.extra["threads"] == 1 and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"):
        run_brick("loss", BrickSettings(threads=-1))


def test_qlora_bricks_and_unknown_name() -> None:
    r = run_brick("train_step", BrickSettings(batch_size=2, seq_len=16, warmup=1, reps=2, min_rep_s=0, qlora=True))
    assert r.extra["qlora"] is True and r.rate is not None
    with pytest.raises(ValueError, match="unknown brick"):
        run_brick("nope", FAST)


def test_a_brick_too_big_for_memory_is_computed_on_meta_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.bricks as bricks

    real_build = bricks.build_model

    def meta_only(config: object, device: object = "cpu", **kw: object) -> object:
        assert str(device) == "meta", f"the 7B brick allocated on {device}"
        return real_build(config, device=device, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bricks, "build_model", meta_only)
    settings = bricks.BrickSettings(preset="qwen2.5-7b", max_memory_gib=16.0)
    for name in ("throughput", "train_step", "lora_forward"):
        result = bricks.run_brick(name, settings)
        assert result.not_run is not None and "over the 16.0 GiB" in result.not_run
        assert result.extra["memory_gib"]["parameters"] > 7e9 and result.extra["memory_gib"]["total"] > 16
        assert result.to_dict()["median_s"] is None  # no time was measured, and JSON says so
    assert "not run: needs about" in bricks.results_table([result])


def test_bricks_sized_by_a_checkpoint_read_its_architecture(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import engine.cli_train  # noqa: F401
    from engine.app import app
    from engine.checkpoint import save_checkpoint
    from tests.engine.core_helpers import tiny_config, tiny_model, tiny_tokenizer

    model = tiny_model(tiny_config(hidden_size=96, num_hidden_layers=3))
    ckpt = save_checkpoint(tmp_path / "m.safetensors", model, tiny_tokenizer())
    out = tmp_path / "bench.json"
    args = ["bench", "--brick", "lora_forward", "--brick", "ttft", str(ckpt), "--reps", "2", "--warmup", "0"]
    result = CliRunner().invoke(app, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert [(r["extra"]["hidden_size"], r["extra"]["num_hidden_layers"], r["extra"]["preset"]) for r in rows] == [
        (96, 3, "checkpoint"),
        (96, 3, "checkpoint"),
    ]
    small = CliRunner().invoke(app, [*args, "--max-memory-gib", "0.000001"])
    assert small.exit_code == 0 and small.output.count("not run: needs about") == 2
    missing = CliRunner().invoke(app, ["bench", "--brick", "ttft", str(tmp_path / "none.safetensors")])
    assert missing.exit_code == 2


def test_reference_workload_is_the_same_work_in_every_process() -> None:
    from engine.bricks import REFERENCE_SIZE, reference_workload

    torch.manual_seed(123)
    first = reference_workload()()
    torch.manual_seed(456)
    again = reference_workload()()
    assert isinstance(first, torch.Tensor) and first.shape == (REFERENCE_SIZE, REFERENCE_SIZE)
    assert torch.equal(first, again)
    with FAULTS.enabled("reference_workload_unseeded"):
        torch.manual_seed(456)
        assert not torch.equal(reference_workload()(), first)


def test_ttft_times_one_token_per_call() -> None:
    from falsifiers.bench_report.brick_work import watching

    s = BrickSettings(batch_size=2, seq_len=8, warmup=1, reps=2, min_rep_s=0.0, max_memory_gib=64.0)
    with watching() as w:
        run_brick("ttft", s)
    assert w.forwards == [(2, 8)] * 3
    with FAULTS.enabled("bricks_ttft_two_tokens"), watching() as w:
        run_brick("ttft", s)
    assert w.forwards == [(2, 8), (2, 1)] * 3
