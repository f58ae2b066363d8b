"""The checker runner without pytest: deadline, binding, observation checks, judging."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pv.results import Verdict
from pv.run_checker import (
    BindingError,
    FalsifierText,
    bind_arguments,
    call_with_timeout,
    evaluate_call,
    judge,
    normalise_observations,
)

TEXT = FalsifierText("c::FALSIFY-C-001", rule="r", prediction="p", if_fails="look at x")


def test_call_with_timeout_returns_value_error_or_gives_up() -> None:
    assert call_with_timeout(lambda a: a + 1, {"a": 1}, 5).value == 2
    err = call_with_timeout(lambda: 1 / 0, {}, 5)
    assert isinstance(err.error, ZeroDivisionError) and not err.timed_out
    start = time.monotonic()
    hung = call_with_timeout(lambda secs: time.sleep(secs), {"secs": 30}, 0.1)
    assert hung.timed_out and time.monotonic() - start < 5


def test_no_deadline_runs_in_the_calling_thread() -> None:
    import threading

    outcome = call_with_timeout(lambda: threading.current_thread() is threading.main_thread(), {}, 0)
    assert outcome.value is True
    assert isinstance(call_with_timeout(lambda: 1 / 0, {}, None).error, ZeroDivisionError)
    with pytest.raises(KeyboardInterrupt):
        call_with_timeout(_raise_keyboard_interrupt, {}, 0)


def _raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


def test_base_exceptions_raised_by_a_checker_are_its_error() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    assert isinstance(call_with_timeout(interrupted, {}, 5).error, KeyboardInterrupt)
    assert isinstance(call_with_timeout(lambda: sys.exit(3), {}, 5).error, SystemExit)


def test_bind_arguments_params_fixtures_defaults() -> None:
    def checker(a: int, tmp_thing: str, b: int = 2, c: int = 3) -> None: ...

    asked: list[str] = []

    def fixture(name: str) -> str:
        asked.append(name)
        return f"<{name}>"

    kwargs = bind_arguments(checker, {"a": 1, "c": 30, "seed": 0}, fixture)
    assert kwargs == {"a": 1, "tmp_thing": "<tmp_thing>", "c": 30}
    assert asked == ["tmp_thing"]
    assert bind_arguments(checker, {"a": 1}, fixture, {"tmp_thing": "override"})["tmp_thing"] == "override"
    with pytest.raises(BindingError, match="is not a parameter of the checker"):
        bind_arguments(checker, {"a": 1, "d": 4}, fixture)

    def takes_all(**kw: Any) -> None: ...

    assert bind_arguments(takes_all, {"x": 1, "seed": 3}, fixture) == {"x": 1, "seed": 3}


def test_normalise_observations() -> None:
    np = pytest.importorskip("numpy")
    obs, problems, noise = normalise_observations(
        {"a": np.float32(0.5), "b": np.int64(3), "c": np.array([1, 2]), "d": (1.0, None), "e": math.nan}, ["a", "b"]
    )
    assert problems == []
    assert (
        obs["a"] == 0.5 and obs["b"] == 3 and type(obs["b"]) is int and obs["c"] == [1, 2] and obs["d"] == [1.0, None]
    )
    assert noise == {}  # no pv.noise.Measured among them
    _, problems, _ = normalise_observations({"a": {1: 2}, 3: 4}, ["a", "z"])
    assert problems == [
        "observation 'a': a builtins.dict is not a JSON scalar or list",
        "observation key 3 is not a string",
        "missing declared observation(s): z",
    ]


def test_judge() -> None:
    assert judge("x < 1", {"x": 0.5}, TEXT, {"x": 0.5}) == (Verdict.SURVIVED, "")
    verdict, report = judge("x < 1", {"x": 2}, TEXT, {"x": 2})
    assert verdict is Verdict.FALSIFIED
    assert "with values:  x(=2) < 1" in report and "if it fails:  look at x" in report
    verdict, report = judge("x", {"x": 2}, TEXT, {"x": 2})
    assert verdict is Verdict.ERROR and "not to true or false" in report
    # NaN compares false: a NaN measurement is an error, never a verdict either way
    assert judge("x < 1", {"x": math.nan}, TEXT, {"x": math.nan})[0] is Verdict.ERROR
    assert judge("not (x >= 1)", {"x": math.nan}, TEXT, {"x": math.nan})[0] is Verdict.ERROR


def test_evaluate_call_ends_in_exactly_one_verdict() -> None:
    def run(func: Any, expect: str = "v == 1", timeout: float = 5) -> Verdict:
        return evaluate_call(
            func, {}, observes=["v"], expect=expect, params={}, text=TEXT, timeout_s=timeout, seed=0
        ).verdict

    assert run(lambda: {"v": 1}) is Verdict.SURVIVED
    assert run(lambda: {"v": 2}) is Verdict.FALSIFIED
    assert run(lambda: {"w": 1}) is Verdict.ERROR
    assert run(lambda: 1 / 0) is Verdict.ERROR
    assert run(lambda: time.sleep(10), timeout=0.05) is Verdict.ERROR

    def skip() -> None:
        pytest.skip("no backend")

    ev = evaluate_call(skip, {}, observes=[], expect="1 == 1", params={}, text=TEXT, timeout_s=5, seed=0)
    assert ev.verdict is Verdict.SKIPPED and ev.skip_reason == "no backend"


def test_a_nan_observation_the_expect_reads_is_an_error_not_a_survival() -> None:
    from pv.run_checker import FalsifierText, judge

    text = FalsifierText("c::FALSIFY-NAN-001")
    nan = float("nan")
    # NaN compares false, so this expect would "survive" a NaN loss
    verdict, message = judge("not (loss > 3)", {"loss": nan}, text, {"loss": nan})
    assert verdict is Verdict.ERROR and "non-finite observation(s) loss = nan" in message
    verdict, _ = judge("not (loss > 3)", {"loss": nan}, text, {"loss": nan}, allow_nonfinite=["loss"])
    assert verdict is Verdict.SURVIVED
    verdict, _ = judge("x >= 0", {"x": 1.0, "other": nan}, text, {"x": 1.0, "other": nan})
    assert verdict is Verdict.SURVIVED  # a non-finite value the claim does not read changes nothing
    verdict, _ = judge("max(xs) < 5", {"xs": [1.0, float("inf")]}, text, {"xs": [1.0, float("inf")]})
    assert verdict is Verdict.ERROR


def _spawn_and_return(out: str) -> dict[str, float]:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(out).write_text(f"{os.getpid()} {child.pid}\n")
    return {"value": 1.0}


def _spawn_and_hang(out: str) -> dict[str, float]:
    _spawn_and_return(out)
    time.sleep(600)
    return {"value": 1.0}


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("checker", [_spawn_and_return, _spawn_and_hang])
def test_a_forked_checker_and_what_it_started_end_with_the_call(tmp_path: Path, checker: Any) -> None:
    from pv.run_checker import call_in_process

    out = tmp_path / "pids.txt"
    outcome = call_in_process(checker, {"out": str(out)}, timeout_s=3.0)
    assert (outcome.value is not None) == (checker is _spawn_and_return), outcome
    checker_pid, grandchild = (int(x) for x in out.read_text().split())
    assert _gone(checker_pid) and _gone(grandchild)


def test_an_inconclusive_report_names_each_noisy_observation_with_its_interval_and_figures() -> None:
    from pv.run_checker import inconclusive_report

    noise = {
        "rate": {"interval": [0.5, 1.25], "figures": {"runs": 5, "cv": 0.1}},
        "latency": {"interval": [2.0, 3.0], "figures": [1, 2]},
    }
    report = inconclusive_report(TEXT, "rate >= 1", "1.1 >= 1", noise, {"rate": 1.1, "latency": 2.5})
    assert report == (
        "INCONCLUSIVE c::FALSIFY-C-001: the measurement's noise leaves the bound undecided\n"
        "  expect:       rate >= 1\n"
        "  with values:  1.1 >= 1\n"
        "  latency = 2.5, within [2, 3]: [1, 2]\n"
        '  rate = 1.1, within [0.5, 1.25]: {"cv": 0.1, "runs": 5}\n'
        "  neither survived nor falsified: rerun on a quieter machine (the figures above say how busy it was)"
    )


def test_a_checker_process_ending_early_is_described_by_how_it_ended() -> None:
    from pv.run_checker import _exit_text

    assert _exit_text(9) == "the checker's process was killed by SIGKILL (9) before it returned"
    # a real-time signal has no name in the signal module: its number stands in
    assert _exit_text(40) == "the checker's process was killed by signal 40 (40) before it returned"
    assert _exit_text(3 << 8) == "the checker's process exited with status 3 before it returned"
