"""pv.paths.shown: one way to write a path, relative to a root, for reports and evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.paths import shown


def test_inside_outside_and_through_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "contracts").mkdir(parents=True)
    assert shown(root / "contracts" / "a.yaml", root) == "contracts/a.yaml"
    assert shown(tmp_path / "elsewhere.yaml", root) == (tmp_path / "elsewhere.yaml").as_posix()
    link = tmp_path / "link"
    link.symlink_to(root)
    # the plain names agree: the link keeps its own name; through the link into the real root resolves
    assert shown(link / "contracts" / "a.yaml", link) == "contracts/a.yaml"
    assert shown(link / "contracts" / "a.yaml", root) == "contracts/a.yaml"


def test_relative_paths_are_taken_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert shown("contracts/a.yaml", tmp_path) == "contracts/a.yaml"
