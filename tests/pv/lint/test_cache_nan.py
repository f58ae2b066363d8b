"""The lint cache keeps a contract's data only when JSON gives it back as it is: a NaN (never equal
to itself) is left for the next run to read again, a ``.nan`` that is only text is kept, and either
way the cached run reports what the cold run did."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import lint_dir


@pytest.mark.parametrize(("written", "kept"), [("limit: .NaN", False), ('limit: ".nan"', True), ("limit: 0.7", True)])
def test_only_data_json_gives_back_is_cached(tree_copy: Callable[[str], Path], written: str, kept: bool) -> None:
    root = tree_copy("good")
    alpha = root / "contracts" / "alpha.yaml"
    alpha.write_text(alpha.read_text().replace("limit: 0.7", written, 1))
    cold = lint_dir(root)
    entries = json.loads((root / ".pv" / "lint-cache.json").read_text())["files"]
    [(rel, entry)] = [(rel, e) for rel, e in entries.items() if rel.endswith("alpha.yaml")]
    assert (entry["data"] is not None) is kept, rel
    warm = lint_dir(root)
    assert warm.gates[0].counts["from_cache"] == (2 if kept else 1)  # a file left out is read again
    assert [f.to_dict() | {"new": None} for f in warm.findings] == [f.to_dict() | {"new": None} for f in cold.findings]
