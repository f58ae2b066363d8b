"""The device checkers' scripted NVML and their rule, without a GPU."""

from __future__ import annotations

import sys

import pytest
import torch
import yaml

from engine.device import ADDRESSING_MODE_ATS, gpu_memory_class
from engine.faults import FAULTS
from falsifiers.device_memory_class.device import (
    NvmlScenario,
    classification_total,
    expected_class,
    fake_pynvml,
    no_gpu_clean,
    nvml_answers,
    override_respected,
    scenario_signals,
)
from pv.hypothesis_support import PropertyRunner, PropertySettings


@pytest.mark.parametrize(
    ("scenario", "override", "expected"),
    [
        (NvmlScenario(), None, "discrete"),
        (NvmlScenario(name=b"NVIDIA GH200", addressing_mode=ADDRESSING_MODE_ATS), None, "integrated"),
        (NvmlScenario(memory="not_supported"), None, "integrated"),
        (NvmlScenario(total_bytes=0), None, "integrated"),
        (NvmlScenario(memory="error", addressing_mode=None), None, "unknown"),
        (NvmlScenario(init_fails=True), "discrete", "none"),
        (NvmlScenario(device_count=0), None, "none"),
        (NvmlScenario(name_fails=True), None, "none"),
        (NvmlScenario(), " Unified ", "integrated"),
        (NvmlScenario(), "bogus", "discrete"),
    ],
)
def test_scripted_nvml_drives_the_real_probe(scenario: NvmlScenario, override: str | None, expected: str) -> None:
    env = {} if override is None else {"PV_GPU_MEMORY_CLASS": override}
    with nvml_answers(fake_pynvml(scenario)):
        report = gpu_memory_class(0, env=env)
    present, mode, fb = scenario_signals(scenario)
    assert report.memory_class == expected
    assert expected_class(present, override, None, mode, fb) == expected
    assert report.present == present


def test_nvml_answers_restores_the_module_and_torch() -> None:
    before = sys.modules.get("pynvml")
    available = torch.cuda.is_available
    with nvml_answers(None):
        with pytest.raises(ImportError):
            import pynvml  # noqa: F401
        assert torch.cuda.is_available() is False
    assert sys.modules.get("pynvml") is before
    assert torch.cuda.is_available is available


def test_expected_class_rule_order() -> None:
    assert expected_class(False, "discrete", True, None, None) == "none"
    assert expected_class(True, "DISCRETE", True, ADDRESSING_MODE_ATS, False) == "discrete"
    assert expected_class(True, None, False, ADDRESSING_MODE_ATS, True) == "integrated"
    assert expected_class(True, None, None, 0, None) == "unknown"


def _runner(max_examples: int = 60) -> PropertyRunner:
    return PropertyRunner(settings=PropertySettings(max_examples=max_examples))


def test_classification_property_holds_and_catches_the_inverted_class() -> None:
    clean = classification_total(_runner())
    assert clean["counterexamples"] == 0 and clean["examples_tried"] >= 100
    with FAULTS.enabled("memory_class_inverted"):
        broken = classification_total(_runner())
    assert broken["counterexamples"] == 2


def test_both_pasted_counterexamples_of_device_001_replay_on_their_own_property() -> None:
    """The snippets the failure report prints are pasted under the falsifier as they are, and run."""
    with FAULTS.enabled("memory_class_inverted"):
        found = _runner()
        classification_total(found)
    snippets = [r.snippet for r in found.records]
    assert all(snippets), "each of the two searches prints a snippet"
    examples = [e for text in snippets for e in yaml.safe_load(str(text))["examples"]]
    assert {frozenset(e) for e in examples} == {
        frozenset({"gpu_present", "override", "is_integrated", "mode", "fb"}),
        frozenset({"scenario", "override"}),
    }
    pasted = PropertyRunner(settings=PropertySettings(max_examples=10), examples=examples)
    with FAULTS.enabled("memory_class_inverted"):
        again = classification_total(pasted)
    assert again["counterexamples"] == 2 and again["examples_replayed"] == 2
    assert [r.counterexample_source for r in pasted.records] == ["examples", "examples"]
    assert all("TypeError" not in str(r.error) for r in pasted.records)
    assert pasted.unmatched_examples() == []
    fixed = PropertyRunner(settings=PropertySettings(max_examples=10), examples=examples)
    assert classification_total(fixed)["counterexamples"] == 0
    assert [r.replayed for r in fixed.records] == [(0,), (1,)]


def test_override_and_no_gpu_checkers_see_their_faults() -> None:
    assert override_respected() == {"overrides_tried": 2, "overrides_respected": 2}
    with FAULTS.enabled("memory_class_override_ignored"):
        assert override_respected()["overrides_respected"] == 0
    assert no_gpu_clean()["clean_no_gpu"] == 1
    with FAULTS.enabled("nvml_missing_raises"):
        result = no_gpu_clean()
    assert result["clean_no_gpu"] == 0 and result["cases_clean"] == 2
