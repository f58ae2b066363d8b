"""The review reads and writes UTF-8 whatever the machine's locale says: a CI runner left in the C
locale with UTF-8 coercion off must not fail on a contract's "≤" or the review's "→"."""

from __future__ import annotations

import locale
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from pv.evidence.writer import write_run
from pv.review.compare import id_lines
from pv.review.github import FILES, write_outputs
from pv.review.runs import read_runs
from tests.pv.evidence.conftest import ENV, Project, all_survive, project, record  # noqa: F401  (the fixture)


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """This process's text files default to ASCII, as under LANG=C without Python's UTF-8 coercion."""
    if sys.flags.utf8_mode:
        pytest.skip("Python's UTF-8 mode is on: the locale does not choose the text encoding")
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        if locale.getencoding().lower().replace("-", "") == "utf8":
            pytest.skip("this C library's C locale is UTF-8")
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def test_the_review_files_are_written_as_utf8(tmp_path: Path, ascii_locale: None) -> None:
    forms = SimpleNamespace(**{key: f"{key}: survived → falsified, value ≤ 0.7·ln(V)\n" for key in FILES})
    written = write_outputs(forms, tmp_path)  # type: ignore[arg-type]
    assert sorted(written) == sorted(FILES)
    for key, path in written.items():
        assert path.read_bytes().decode("utf-8") == f"{key}: survived → falsified, value ≤ 0.7·ln(V)\n"


def test_a_contract_with_non_ascii_text_is_read_as_utf8(tmp_path: Path, ascii_locale: None) -> None:
    contract = tmp_path / "c.yaml"
    text = "falsification_tests:\n  - id: FALSIFY-X-001\n    prediction: loss ≤ 0.7·ln(V)\n    mutant: m:f\n"
    contract.write_bytes(text.encode("utf-8"))
    assert id_lines(contract) == {"FALSIFY-X-001": (2, 4)}


def test_a_bundle_with_non_ascii_text_is_read_as_utf8(project: Project, ascii_locale: None) -> None:  # noqa: F811
    results = all_survive()
    results[0].message = "loss ≤ 0.7·ln(V) → held"
    [outcome] = write_run(record(project, results), project.evidence, project.root, ENV)
    assert outcome.path is not None
    assert "≤" in (outcome.path / "bundle.json").read_bytes().decode("utf-8")  # written as UTF-8, not escaped
    runs = read_runs(project.evidence, project.root, ["demo-v1"])
    assert [r.run_id for r in runs["demo-v1"]] == [outcome.path.name]
