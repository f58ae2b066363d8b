"""A third, Llama-family model joins the real-model family's claims against transformers and
llama.cpp by its model-list entry alone: the checkers take its name and read the rest from the
list (a file without a chat template is prompted as plain text)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from falsifiers.real_model_smollm2 import real_model
from pv.expr import parse
from pv.loader import load_contract_file
from tests.falsifiers.test_real_model_list import listed, tiny_entry  # noqa: F401  (the fixtures)

CONTRACT = Path(__file__).resolve().parents[2] / "contracts" / "real-model-smollm2-v1.yaml"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers is not installed"
)


def _holds(fid: str, observations: dict[str, Any], **params: Any) -> bool:
    contract = load_contract_file(CONTRACT).contract
    assert contract is not None
    falsifier = next(f for f in contract.falsification_tests if f.id == fid)
    assert falsifier.parametrize == {"model": ["smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"]}
    assert falsifier.expect is not None
    return bool(parse(falsifier.expect).holds({**falsifier.params, **params, **observations}))


def test_a_third_model_computes_transformers_logits_by_its_entry_alone(listed: str) -> None:  # noqa: F811
    out = real_model.logits_vs_transformers(listed)
    assert out["positions"] > 0
    assert _holds("FALSIFY-REAL-001", out, model=listed)
    greedy = real_model.greedy_vs_transformers(listed, n_tokens=4)
    assert greedy["steps_compared"] == 12
    assert _holds("FALSIFY-REAL-003", greedy, model=listed)


def test_a_third_model_passes_qa_in_three_dtypes_by_its_entry_alone(listed: str, tmp_path: Path) -> None:  # noqa: F811
    out = real_model.qa_on_real_files(listed, tmp_path)
    assert out["golden_passed"] == 3  # a random tiny model: its perplexity is not the claim's


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_a_third_model_agrees_with_llama_cpp_by_its_entry_alone(listed: str, tmp_path: Path) -> None:  # noqa: F811
    out = real_model.llama_cpp_agreement(listed, tmp_path, n_tokens=4)
    assert out["original_steps"] == 12
    assert out["tokenizer_mismatched_texts"] == 0 and out["reexport_mismatched_tokens"] == 0
