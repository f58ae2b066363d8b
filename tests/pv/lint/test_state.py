"""``.pv/``: the ratchet marks only new findings, the index and cache change only with the bytes."""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pv.app import app
from pv.cli import COMMAND_MODULES
from pv.lint.findings import fingerprint
from pv.validate import validate_paths

from .conftest import lint_dir

Copy = Callable[[str], Path]


def snapshot(state: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(state.iterdir()) if p.is_file()}


def test_first_run_marks_everything_new_and_a_rerun_nothing(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    first = lint_dir(root)
    assert first.first_run and first.new == 2 and all(f.new for f in first.findings)
    second = lint_dir(root)
    assert not second.first_run and second.new == 0
    assert [f.fingerprint for f in second.findings] == [f.fingerprint for f in first.findings]


def test_only_the_finding_added_since_the_last_run_is_new(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    lint_dir(root)
    path = root / "contracts" / "epsilon.yaml"
    path.write_text(path.read_text().replace('expect: "los <= limit"', 'expect: "los <= limitt"'))
    report = lint_dir(root)
    new = [(f.code, f.message) for f in report.findings if f.new]
    assert len(new) == 1 and new[0][0] == "PVL301" and "'limitt'" in new[0][1]
    assert report.new == 1 and len(report.findings) == 3


def test_fingerprints_ignore_line_shifts(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    before = lint_dir(root)
    path = root / "contracts" / "epsilon.yaml"
    path.write_text("# a comment\n# and another\n" + path.read_text())
    after = lint_dir(root)
    assert [f.line for f in after.findings] == [f.line + 2 for f in before.findings]
    assert after.new == 0


def test_previous_file_is_sorted_content_keyed_and_rewritten_only_on_change(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    report = lint_dir(root)
    state = root / ".pv"
    raw = (state / "lint-previous.json").read_text()
    data = json.loads(raw)
    entries = data["targets"]["contracts"]
    assert list(entries) == sorted(entries)
    assert raw == json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    f = report.findings[0]
    expected = hashlib.sha256("\x1f".join((f.code, f.path, f.subject, f.message)).encode()).hexdigest()
    assert f.fingerprint == expected == fingerprint(f.code, f.path, f.subject, f.message)
    assert set(entries) == {x.fingerprint for x in report.findings}
    assert set(entries.values()) == {"observations"}

    before = snapshot(state)
    lint_dir(root)
    assert snapshot(state) == before  # nothing changed: no file in .pv/ was rewritten

    path = root / "contracts" / "epsilon.yaml"
    path.write_text(path.read_text().replace("los <= limit", "loss <= limit"))
    lint_dir(root)
    after = json.loads((state / "lint-previous.json").read_text())["targets"]["contracts"]
    assert len(after) == 1 and set(after) < set(entries)


def test_skipped_gates_keep_their_previous_fingerprints(tree_copy: Copy) -> None:
    root = tree_copy("observations_fail")
    lint_dir(root)
    path = root / "contracts" / "epsilon.yaml"
    good = path.read_text()
    path.write_text(good + "unknown_section: 1\n")
    broken = lint_dir(root)
    assert broken.gates[1].state == "skipped"
    path.write_text(good)
    again = lint_dir(root)
    assert again.new == 0  # the observation findings were remembered through the skipped run


def test_index_is_deterministic_and_follows_the_bytes(tree_copy: Copy) -> None:
    root = tree_copy("good")
    lint_dir(root)
    idx_path = root / ".pv" / "contracts.idx"
    index = json.loads(idx_path.read_text())
    entries = {e["path"]: e for e in index["contracts"]}
    alpha = root / "contracts" / "alpha.yaml"
    assert entries["contracts/alpha.yaml"] == {
        "path": "contracts/alpha.yaml",
        "id": "alpha",
        "sha256": hashlib.sha256(alpha.read_bytes()).hexdigest(),
        "valid": True,
        "falsifiers": 2,
        "ship_blocking": 1,
        "obligations": 2,
        "kani_harnesses": 0,
    }
    stamp = idx_path.stat().st_mtime_ns
    lint_dir(root)
    assert idx_path.stat().st_mtime_ns == stamp

    alpha.write_text(alpha.read_text() + "# touched\n")
    lint_dir(root)
    changed = {e["path"]: e for e in json.loads(idx_path.read_text())["contracts"]}
    assert changed["contracts/alpha.yaml"]["sha256"] == hashlib.sha256(alpha.read_bytes()).hexdigest()
    assert changed["contracts/beta.yaml"] == entries["contracts/beta.yaml"]


def test_an_unchanged_tree_is_served_from_the_cache(tree_copy: Copy) -> None:
    root = tree_copy("references_fail")
    cold = lint_dir(root)
    warm = lint_dir(root)
    validate_cold = cold.gates[0].counts
    validate_warm = warm.gates[0].counts
    assert validate_cold["from_cache"] == 0 and validate_warm["from_cache"] == 2
    # the cached run reports exactly what the cold run did, at the same places
    assert [f.to_dict() | {"new": None} for f in warm.findings] == [f.to_dict() | {"new": None} for f in cold.findings]
    # a changed byte voids the cache
    (root / "contracts" / "iota.yaml").write_text((root / "contracts" / "iota.yaml").read_text() + "\n")
    assert lint_dir(root).gates[0].counts["from_cache"] == 0


def test_a_cache_from_other_code_is_ignored(tree_copy: Copy) -> None:
    root = tree_copy("good")
    lint_dir(root)
    cache = root / ".pv" / "lint-cache.json"
    data = json.loads(cache.read_text())
    data["salt"] = "0" * 64
    cache.write_text(json.dumps(data))
    assert lint_dir(root).gates[0].counts["from_cache"] == 0


def test_state_dir_ignores_itself_and_no_state_writes_nothing(tree_copy: Copy) -> None:
    root = tree_copy("good")
    lint_dir(root, use_state=False)
    assert not (root / ".pv").exists()
    lint_dir(root)
    assert (root / ".pv" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_plain_validate_does_not_touch_the_state_dir(tree_copy: Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree_copy("good")
    monkeypatch.chdir(root)
    for module in COMMAND_MODULES:
        importlib.import_module(module)

    def pv_validate() -> None:
        validate_paths([root / "contracts"])
        result = CliRunner().invoke(app, ["validate", "contracts"])
        assert result.exit_code == 0, result.output

    pv_validate()
    assert not (root / ".pv").exists()
    lint_dir(root)
    before = snapshot(root / ".pv")
    pv_validate()
    assert snapshot(root / ".pv") == before
