"""pv.noise: measured figures with intervals, and the rule that makes a busy machine inconclusive."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pv.noise import Measured, corners, decides, dispersion, median_interval, rate_interval, worst
from pv.results import Verdict
from pv.run_checker import FalsifierText, evaluate_call, normalise_observations
from tests.pv.toy import ToyProject, build_toy, falsifier

TEXT = FalsifierText("demo::FALSIFY-DEMO-001")


def below(bound: float):
    return lambda env: env["cv"] < bound


@pytest.mark.parametrize(
    ("value", "low", "high", "expected"),
    [
        (0.01, 0.0, 0.03, True),  # the whole interval under the bound: decided, holds
        (0.09, 0.07, 0.12, False),  # the whole interval over it: decided, fails
        (0.04, 0.01, 0.08, None),  # straddles it: the noise cannot decide
        (0.06, 0.03, 0.09, None),  # a failing estimate is not falsified if the interval reaches below
    ],
)
def test_decides_only_when_every_end_agrees(value: float, low: float, high: float, expected: bool | None) -> None:
    assert decides(below(0.05), {"cv": value}, {"cv": (low, high)}) is expected


def test_without_intervals_the_estimate_decides() -> None:
    assert decides(below(0.05), {"cv": 0.04}, {}) is True
    assert decides(below(0.05), {"cv": 0.06}, {}) is False


def test_corners_cover_every_combination_and_cap_their_number() -> None:
    env = {"a": 1.0, "b": 2.0, "n": 3}
    got = corners(env, {"a": (0.0, 1.5), "b": (1.0, 3.0), "absent": (0.0, 1.0)})
    assert sorted((c["a"], c["b"]) for c in got) == [(0.0, 1.0), (0.0, 3.0), (1.5, 1.0), (1.5, 3.0)]
    assert all(c["n"] == 3 for c in got)
    many = {f"x{i}": 1.0 for i in range(9)}
    with pytest.raises(ValueError, match="at most 8"):
        corners(many, {k: (0.0, 2.0) for k in many})


def test_measured_rejects_an_estimate_outside_its_interval() -> None:
    with pytest.raises(ValueError, match="low <= value <= high"):
        Measured(1.0, 1.5, 2.0)
    with pytest.raises(TypeError):
        Measured("1", 0.0, 2.0)  # type: ignore[arg-type]
    m = Measured(1.0, 0.5, 2.0, {"reference_cv": 0.01})
    assert Measured.from_json(json.loads(json.dumps(m.to_json()))) == m


def test_dispersion_lets_only_a_quiet_machine_falsify_a_high_cv() -> None:
    rng = random.Random(0)

    def series(spread: float) -> list[float]:
        return [1.0 + spread * rng.uniform(-1, 1) for _ in range(20)]

    steady, jumpy = series(0.02), series(0.2)
    quiet, busy = series(0.001), series(0.2)
    for reference in (quiet, busy):  # noise only adds dispersion: a low CV holds on any machine
        m = dispersion(steady, reference)
        assert decides(below(0.05), {"cv": m.value}, {"cv": (m.low, m.high)}) is True
    on_quiet, on_busy = dispersion(jumpy, quiet), dispersion(jumpy, busy)
    assert on_quiet.value == on_busy.value and on_quiet.low > 0.05
    assert decides(below(0.05), {"cv": on_quiet.value}, {"cv": (on_quiet.low, on_quiet.high)}) is False
    assert on_busy.low == 0.0 and on_busy.noise["reference_cv"] > 0.05
    assert decides(below(0.05), {"cv": on_busy.value}, {"cv": (on_busy.low, on_busy.high)}) is None
    with pytest.raises(ValueError):
        dispersion([1.0], [1.0, 1.0])


def test_median_interval_uses_the_order_statistics_of_the_binomial() -> None:
    m = median_interval([float(x) for x in range(1, 21)])
    assert (m.value, m.low, m.high) == (10.5, 6.0, 15.0)  # the textbook 95% ranks for n = 20
    small = median_interval([3.0, 1.0, 2.0])
    assert (small.low, small.value, small.high) == (1.0, 2.0, 3.0)  # too few for 95%: min..max


def test_rate_interval_reaches_up_to_what_the_cpu_time_allows() -> None:
    quiet = rate_interval(32, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert (quiet.low, quiet.value, quiet.high) == (32.0, 32.0, 32.0)
    waited = rate_interval(32, [2.0, 2.2, 1.8], [1.0, 1.0, 1.0])  # had a core half the time
    assert waited.low == pytest.approx(32 / 2.2) and waited.high == pytest.approx(32.0)
    assert waited.noise["cpu_over_wall"] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        rate_interval(32, [1.0], [])


def test_worst_takes_the_largest_value_and_the_largest_ends() -> None:
    w = worst({"a": Measured(0.02, 0.01, 0.03), "b": Measured(0.04, 0.0, 0.09)})
    assert (w.value, w.low, w.high) == (0.04, 0.01, 0.09)
    assert w.noise["largest"] == "b"


def test_observations_carry_the_value_and_the_noise_apart() -> None:
    obs, problems, noise = normalise_observations(
        {"cv": Measured(0.04, 0.01, 0.08, {"reference_cv": 0.02}), "n": 3}, ["cv"]
    )
    assert problems == [] and obs == {"cv": 0.04, "n": 3}
    assert noise == {"cv": {"interval": [0.01, 0.08], "figures": {"reference_cv": 0.02}}}
    # a launched rank's report is JSON: the tagged form reads the same
    obs2, _, noise2 = normalise_observations(json.loads(json.dumps({"cv": Measured(0.04, 0.01, 0.08).to_json()})), [])
    assert obs2 == {"cv": 0.04} and noise2["cv"]["interval"] == [0.01, 0.08]


@pytest.mark.parametrize(
    ("measured", "expected"),
    [
        (Measured(0.01, 0.0, 0.02), Verdict.SURVIVED),
        (Measured(0.2, 0.1, 0.3), Verdict.FALSIFIED),
        (Measured(0.06, 0.0, 0.1), Verdict.INCONCLUSIVE),
    ],
)
def test_the_harness_judges_the_whole_interval(measured: Measured, expected: Verdict) -> None:
    ev = evaluate_call(
        lambda: {"cv": measured}, {}, observes=["cv"], expect="cv < 0.05", params={}, text=TEXT, timeout_s=None, seed=0
    )
    assert ev.verdict is expected, ev.message
    assert ev.observations == {"cv": measured.value}
    if expected is Verdict.INCONCLUSIVE:
        assert ev.message.startswith("INCONCLUSIVE demo::FALSIFY-DEMO-001")
        assert "cv = 0.06, within [0, 0.1]" in ev.message


def test_a_non_finite_interval_end_is_still_judged() -> None:
    ev = evaluate_call(
        lambda: {"rate": Measured(60.0, 40.0, math.inf)},
        {},
        observes=["rate"],
        expect="rate >= 50",
        params={},
        text=TEXT,
        timeout_s=None,
        seed=0,
    )
    assert ev.verdict is Verdict.INCONCLUSIVE


NOISY = """
from pv.checkers import checker
from pv.noise import Measured
from toysystem import system_value


@checker(observes=["cv"])
def timed(low, high):
    value = (low + high) / 2 * system_value()
    return {"cv": Measured(value, low * system_value(), high * system_value(), {"reference_cv": 0.03})}
"""


@pytest.fixture
def noisy(pytester: pytest.Pytester) -> ToyProject:
    return build_toy(pytester, addopts="--pv-evidence", checkers={"noisy": NOISY})


def test_an_inconclusive_falsifier_is_a_skip_that_says_why_and_is_recorded(noisy: ToyProject) -> None:
    noisy.contract(
        "noisy",
        [
            falsifier(
                "FALSIFY-NOISY-001",
                check="toyfalsifiers.noisy:timed",
                params={"low": 0.01, "high": 0.09},
                expect="cv < 0.05",
                ship_blocking=True,
                mutant="toysystem:off_by_one",
            ),
            falsifier(
                "FALSIFY-NOISY-002",
                check="toyfalsifiers.noisy:timed",
                params={"low": 0.0, "high": 0.04},
                expect="cv < 0.05",
                ship_blocking=True,
                mutant="toysystem:off_by_one",
            ),
        ],
    )
    result = noisy.pytester.runpytest("--pv-mutants", "-rs")
    result.assert_outcomes(passed=0, skipped=2)  # 002 survived, but its mutant run was undecided too
    out = result.stdout.str()
    assert "INCONCLUSIVE noisy::FALSIFY-NOISY-001" in out
    assert "survived, but its mutant run was inconclusive" in out
    result.stdout.fnmatch_lines(["pv: 2 falsifiers, 1 evaluated (1 survived, 0 falsified, 0 error), 1 inconclusive*"])
    assert "vacuous" not in out
    assert result.ret == 0  # the neighbours' load never fails a run
    bundle = json.loads(next(Path(noisy.root, "evidence", "noisy").glob("*/bundle.json")).read_text())
    first, second = bundle["falsifiers"]
    assert first["verdict"] == "inconclusive"
    assert first["noise"] == {"cv": {"interval": [0.01, 0.09], "figures": {"reference_cv": 0.03}}}
    assert second["verdict"] == "survived" and second["mutant"]["verdict"] == "inconclusive"
    assert bundle["summary"]["inconclusive"] == 1

    from pv.evidence.status import assess
    from pv.model import Status

    found = assess(noisy.root / "evidence", noisy.root / "contracts" / "noisy.yaml")
    assert found.status is Status.DRAFT


def test_a_decided_interval_fails_as_falsified(noisy: ToyProject) -> None:
    noisy.contract(
        "noisy",
        [
            falsifier(
                "FALSIFY-NOISY-001",
                check="toyfalsifiers.noisy:timed",
                params={"low": 0.1, "high": 0.3},
                expect="cv < 0.05",
            )
        ],
    )
    result = noisy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert "FALSIFIED noisy::FALSIFY-NOISY-001" in result.stdout.str()


def test_the_cpu_clock_keeps_counting_short_work_under_a_cpu_time_limit() -> None:
    # in a child: a CPU-time limit armed here would stay armed for the rest of the test session
    script = """
import json, resource, time
from pv.noise import cpu_seconds
resource.setrlimit(resource.RLIMIT_CPU, (600, 601))
spent = []
for _ in range(20):
    c0, t0 = cpu_seconds(), time.perf_counter()
    while time.perf_counter() - t0 < 0.0005:
        pass
    spent.append(cpu_seconds() - c0)
print(json.dumps(spent))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    spent = json.loads(out)
    assert all(s > 0 for s in spent), spent  # time.process_time reads 0 s for most of these on Linux
    assert sum(spent) < 1.0


class _ScriptedMachine:
    """A clock and a CPU clock that move only by what the scripted work and reference cost."""

    def __init__(self, work_s: list[float], reference_s: list[float], cpu_share: float = 1.0) -> None:
        self.now = 0.0
        self.cpu = 0.0
        self.work_s = iter(work_s)
        self.reference_s = iter(reference_s)
        self.cpu_share = cpu_share

    def clock(self) -> float:
        return self.now

    def cpu_clock(self) -> float:
        return self.cpu

    def work(self) -> None:
        cost = next(self.work_s)
        self.now += cost
        self.cpu += cost * self.cpu_share  # held a core the whole time (1.0) or waited for one

    def reference(self) -> None:
        self.now += next(self.reference_s)


def _rate(work_s: list[float], reference_s: list[float], cpu_share: float = 1.0) -> Measured:
    from pv.noise import measured_rate

    # one warm-up call of the work, then three calls of the reference alone in a quiet moment
    m = _ScriptedMachine([1.0, *work_s], [0.01, 0.01, 0.01, *reference_s], cpu_share)
    return measured_rate(
        m.work, 100.0, len(work_s), reference=m.reference, clock=m.clock, cpu_clock=m.cpu_clock, calibration=3
    )


def test_a_rate_slowed_with_the_reference_is_inconclusive_never_falsified() -> None:
    # the claim: rate >= 90 (the code does 100 a second); a neighbour slows the machine 1.5x for
    # half the repeats while the checker holds its core (CPU time = wall time, so the CPU clock
    # cannot tell), and the reference timed in the same moments slows by the same factor
    quiet = _rate([1.0] * 7, [0.01] * 7)
    assert decides(lambda e: e["rate"] >= 90, {"rate": quiet.value}, {"rate": (quiet.low, quiet.high)}) is True
    slow = [1.3, 1.5, 1.4, 1.6, 1.5, 1.3, 1.4]  # the neighbour never left while the work was timed
    busy = _rate(slow, [0.01 * k for k in slow])
    assert busy.value < 90  # read alone, the median would falsify the claim
    assert busy.high >= 99.9 and busy.noise["reference_slowdown_max"] == pytest.approx(1.6)
    assert decides(lambda e: e["rate"] >= 90, {"rate": busy.value}, {"rate": (busy.low, busy.high)}) is None
    # without the reference the same repeats would have been a decided miss
    plain = rate_interval(100.0, slow, slow)
    assert decides(lambda e: e["rate"] >= 90, {"rate": plain.value}, {"rate": (plain.low, plain.high)}) is False


def test_a_rate_that_misses_while_the_reference_ran_at_its_best_is_falsified() -> None:
    # a real regression: the code got 1.5x slower, the machine did not
    slow = [1.5] * 7
    m = _rate(slow, [0.01] * 7)
    assert m.high == pytest.approx(100 / 1.5)
    assert decides(lambda e: e["rate"] >= 90, {"rate": m.value}, {"rate": (m.low, m.high)}) is False


def test_one_stumble_of_the_reference_alone_does_not_open_the_interval() -> None:
    slow = [1.5] * 7  # a real regression again; the reference stumbled once, the work did not
    m = _rate(slow, [0.01, 0.01, 0.05, 0.01, 0.01, 0.01, 0.01])
    assert decides(lambda e: e["rate"] >= 90, {"rate": m.value}, {"rate": (m.low, m.high)}) is False


def test_dispersion_takes_out_the_slowdown_the_reference_felt_in_the_same_moments() -> None:
    # per-call CPU times of a brick whose repetitions a bursty neighbour slowed (cache and memory
    # contention: the core was held, so CPU time grew too), the reference slowed in step
    bursts = [1.0, 1.4, 1.0, 1.3, 1.0, 1.5, 1.0, 1.2, 1.0, 1.4]
    samples = [0.010 * k for k in bursts]
    reference = [0.002 * k for k in bursts]
    m = dispersion(samples, reference)
    assert m.value > 0.05 and m.low == pytest.approx(0.0, abs=1e-12)
    assert decides(lambda e: e["cv"] < 0.05, {"cv": m.value}, {"cv": (m.low, m.high)}) is None
    # the same spread with a reference that ran at its best throughout is the brick's own: falsified
    steady = dispersion(samples, [0.002] * 10)
    assert decides(lambda e: e["cv"] < 0.05, {"cv": steady.value}, {"cv": (steady.low, steady.high)}) is False
