"""Property falsifiers: deterministic settings, replayed examples, a pasteable counterexample."""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from hypothesis import strategies as st

from pv.hypothesis_support import PropertyRunner, PropertySettings, examples_snippet
from tests.pv.toy import ToyProject, falsifier

CHECK = "toyfalsifiers.basic:"


def test_a_counterexample_falsifies_and_prints_a_ready_to_paste_example(toy: ToyProject) -> None:
    toy.contract(
        "prop",
        [
            falsifier(
                "FALSIFY-PROP-001",
                check=CHECK + "below_bound",
                params={"bound": 10},
                expect="counterexamples == 0",
                hypothesis={"max_examples": 200},
            )
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "FALSIFIED prop::FALSIFY-PROP-001",
            "*with values:  counterexamples(=1) == 0",
            "  counterexample (search): {'x': 10}",
            "  property failed with: AssertionError",
            "  add it to the falsifier so it is replayed on every run:",
            "    examples:",
            "      - {x: 10}",
        ]
    )
    (entry,) = toy.run_record()["results"]
    assert entry["verdict"] == "falsified"
    hyp = entry["hypothesis"]
    assert hyp["settings"] == {"max_examples": 200, "derandomize": True, "deadline_ms": None, "database": None}
    assert hyp["counterexample"] == {"x": 10}
    assert yaml.safe_load(hyp["examples_snippet"]) == {"examples": [{"x": 10}]}


def test_the_pasted_example_is_replayed_first(toy: ToyProject) -> None:
    # x == 777 is outside the strategy's range (0..10), so only the replayed example can find it
    toy.contract(
        "prop",
        [
            falsifier(
                "FALSIFY-PROP-001",
                check=CHECK + "small_ints_ok",
                params={"forbidden": 777},
                expect="counterexamples == 0",
                examples=[{"x": 3}, {"x": 777}],
            ),
            falsifier(
                "FALSIFY-PROP-002",
                check=CHECK + "small_ints_ok",
                params={"forbidden": 777},
                expect="counterexamples == 0 and examples_replayed == 1",
                examples=[{"x": 3}],
            ),
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["  counterexample (examples): {'x': 777}"])
    by_id = {r["falsify_id"]: r for r in toy.run_record()["results"]}
    assert by_id["FALSIFY-PROP-001"]["hypothesis"]["examples_replayed"] == 2
    assert by_id["FALSIFY-PROP-001"]["hypothesis"]["counterexample_source"] == "examples"
    assert by_id["FALSIFY-PROP-002"]["verdict"] == "survived"
    assert by_id["FALSIFY-PROP-002"]["hypothesis"]["counterexample"] is None


def test_the_search_is_deterministic() -> None:
    def prop(x: int, y: int) -> None:
        assert x * y < 5000

    found = []
    for _ in range(2):
        runner = PropertyRunner(settings=PropertySettings(max_examples=100))
        runner.run(prop, x=st.integers(0, 1000), y=st.integers(0, 1000))
        found.append(runner.records[-1].counterexample)
    assert found[0] is not None and found[0] == found[1]


def test_a_broken_strategy_is_an_error_not_a_counterexample() -> None:
    runner = PropertyRunner()

    def prop(x: int) -> None:
        pass

    try:
        runner.run(prop, x=st.integers(min_value=5, max_value=1))
    except Exception as exc:  # Hypothesis' InvalidArgument: the machinery failed, the property never ran
        assert "min_value" in str(exc) or "max_value" in str(exc)
    else:
        raise AssertionError("an invalid strategy must propagate")
    assert runner.records[-1].counterexample is None


def test_snippet_values_are_plain_yaml() -> None:
    text = examples_snippet({"shape": (2, 3), "name": "q_proj", "scale": 0.5})
    assert yaml.safe_load(text) == {"examples": [{"name": "q_proj", "scale": 0.5, "shape": [2, 3]}]}


def test_an_example_that_fits_no_property_is_an_error(toy: ToyProject) -> None:
    toy.contract(
        "prop",
        [
            falsifier(
                "FALSIFY-PROP-001",
                check=CHECK + "small_ints_ok",
                params={"forbidden": 777},
                expect="counterexamples == 0",
                examples=[{"x": 3}, {"fb": True, "x": 3}],
            )
        ],
    )
    result = toy.pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert (
        "ERROR prop::FALSIFY-PROP-001: examples[1] {'fb': True, 'x': 3} names parameters no property takes; "
        "the properties take (x)"
    ) in result.stdout.lines


@dataclass(frozen=True)
class Scenario:
    name: str | bytes
    sizes: tuple[int, ...] = ()


def test_dataclasses_and_bytes_survive_the_snippet_and_replay() -> None:
    seen: list[Scenario] = []

    def prop(scenario: Scenario, label: str | None = None) -> None:
        seen.append(scenario)
        assert not isinstance(scenario.name, bytes)

    found = PropertyRunner(settings=PropertySettings(max_examples=50))
    found.run(prop, scenario=st.builds(Scenario, name=st.just(b"GB10"), sizes=st.tuples(st.integers(1, 3))))
    snippet = found.records[-1].snippet
    assert snippet is not None and "__bytes__" in snippet
    examples = yaml.safe_load(snippet)["examples"]
    replay = PropertyRunner(settings=PropertySettings(max_examples=1), examples=examples)
    seen.clear()
    replay.run(prop, scenario=st.builds(Scenario, name=st.just("x")))
    assert seen[0] == Scenario(name=b"GB10", sizes=(1,))
    assert replay.records[-1].counterexample_source == "examples"
