"""What verify says of a bundle's fields that parse but say nothing usable: a start time that is
not a time (a forger's or an older writer's), and a code record over no packages, or a project
that has none; each named in words, never a crash or an empty list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pv.evidence.code_binding import CodeScope
from pv.evidence.verify import verify_bundle
from tests.pv.evidence.conftest import Project, Writer, all_survive, reseal


@pytest.fixture
def bundle(write: Writer) -> Path:
    return write(all_survive())


def _data(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    return data


def test_a_start_time_that_is_not_a_time_is_tampering(bundle: Path) -> None:
    data = _data(bundle)
    data["started_at"] = "the morning after"
    reseal(bundle, data)
    assert [(p.kind, p.file, p.detail) for p in verify_bundle(bundle).problems] == [
        ("tampered", "bundle.json", "started_at 'the morning after' is not a time")
    ]


def test_code_measured_over_no_packages_is_said_so(bundle: Path) -> None:
    data = _data(bundle)
    packages = data["code"]["packages"]
    data["code"]["packages"] = []
    reseal(bundle, data)
    [problem] = verify_bundle(bundle).problems
    assert (problem.kind, problem.file, problem.detail) == (
        "stale",
        "code",
        f"code changed: measured over packages (none), the project's are {', '.join(packages)}",
    )


def test_a_project_with_no_packages_is_said_so(bundle: Path, project: Project) -> None:
    packages = _data(bundle)["code"]["packages"]
    [problem] = verify_bundle(bundle, scope=CodeScope(project.root, (), ())).problems
    assert problem.detail == f"code changed: measured over packages {', '.join(packages)}, the project's are (none)"
