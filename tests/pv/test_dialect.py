"""The Rust dialect: upstream contracts load as they are; only real defects are errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pv.config import ConfigError, load_config
from pv.loader import load_contract_file, suggest
from pv.validate import validate_paths

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS = FIXTURES / "rust_dialect" / "contracts"
DEFECTS = FIXTURES / "rust_dialect_defects" / "contracts"


def test_a_corpus_with_every_documented_upstream_field_loads_with_no_errors() -> None:
    report = validate_paths([CORPUS], dialect="rust")
    assert report.errors == []
    assert report.exit_code == 0
    assert {Path(c.path).name for c in report.contracts} == {
        "softmax-kernel-v1.yaml",
        "exp-kernel-v1.yaml",
        "registry-dtypes-v1.yaml",
    }
    assert all(c.contract is not None for c in report.contracts)
    # the upstream conventions, each reported once as a warning
    assert Counter(d.code for d in report.warnings) == Counter(
        {"PV102": 3, "PV124": 2, "PV121": 1}  # status/implementation/entries; id-less obligations; per-contract ids
    )
    assert list(report.skipped) == [str(CORPUS / "qwen2-family.yaml")]
    assert "1 data file without metadata skipped (rust dialect)" in report.summary()


def test_every_documented_field_reaches_the_model() -> None:
    contract = load_contract_file(CORPUS / "softmax-kernel-v1.yaml", dialect="rust").contract
    assert contract is not None
    eq = contract.equations["softmax"]
    assert eq.lean_theorem and eq.float_tolerance == 1e-6 and eq.preconditions and eq.postconditions
    assert eq.assumes is not None and eq.assumes.shapes["input"].dims[-1] == "config.vocab_size"
    assert eq.assumes.from_contract == "exp-kernel-v1" and eq.guarantees is not None
    assert contract.metadata.enforcement_level == "strict" and contract.metadata.locked_level == "standard"
    po = contract.proof_obligations
    assert po[0].lean is not None and po[0].lean.notes and po[2].applies_to_phase == "max_reduction"
    assert contract.enforcement["stable_subtraction"].reference
    assert contract.falsification_tests[1].test_harness and contract.falsification_tests[1].name
    assert contract.kani_harnesses[0].actually_verified is True
    assert contract.type_invariants[0].type == "ValidatedTensor"
    assert contract.coq_spec is not None and contract.coq_spec.obligations[0].coq_lemma == "softmax_sum_one"


def test_the_same_corpus_in_pv_dialect_is_strict() -> None:
    report = validate_paths([CORPUS], dialect="pv")
    codes = Counter(d.code for d in report.errors)
    # 3 upstream keys, and the data file's 3 keys: without metadata it is a broken contract here
    assert codes["PV102"] == 6 and codes["PV101"] == 1 and codes["PV124"] == 2 and codes["PV121"] == 1
    assert not report.skipped


def test_real_defects_stay_errors_in_the_rust_dialect() -> None:
    report = validate_paths([DEFECTS], dialect="rust")
    assert sorted(d.code for d in report.errors) == ["PV100", "PV104", "PV109", "PV121"]
    assert report.warnings == []
    assert report.exit_code == 1
    # the repeat inside one contract is an error even where ids are per contract
    (dup,) = [d for d in report.errors if d.code == "PV121"]
    assert "broken-kernel-v1.yaml:10" in dup.message


def test_dialect_is_a_project_setting(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pv]\ndialect = "rust"\n')
    (tmp_path / "contracts").mkdir()
    for f in CORPUS.iterdir():
        (tmp_path / "contracts" / f.name).write_bytes(f.read_bytes())
    assert load_config(tmp_path).dialect == "rust"
    assert validate_paths([tmp_path / "contracts"]).exit_code == 0  # the setting, no flag
    (tmp_path / "pyproject.toml").write_text('[tool.pv]\ndialect = "go"\n')
    with pytest.raises(ConfigError, match="dialect must be one of pv, rust"):
        load_config(tmp_path)


def test_suggestions_only_above_the_similarity_threshold() -> None:
    sections = ["metadata", "equations", "proof_obligations", "falsification_tests", "kani_harnesses"]
    assert suggest("quantizations", sections) is None  # 0.73 similar to equations: noise, not a hint
    assert suggest("falsification_test", sections) == "falsification_tests"
    assert suggest("metdata", sections) == "metadata"
