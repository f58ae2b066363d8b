"""A checker's child interpreter imports the engine the checker names and sees the faults on here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faults import FAULTS
from falsifiers.shared.child_env import child_env
from pv.faults import ENV_VAR


def test_the_named_folders_lead_pythonpath_and_the_users_entries_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/users/own")
    env = child_env([tmp_path / "first", tmp_path / "engine-parent"])
    assert env["PYTHONPATH"].split(os.pathsep) == [
        str(tmp_path / "first"),
        str(tmp_path / "engine-parent"),
        "/users/own",
    ]


def test_no_empty_entry_when_the_user_has_no_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert child_env([tmp_path]).get("PYTHONPATH") == str(tmp_path)
    assert "PYTHONPATH" not in child_env([])
    monkeypatch.setenv("PYTHONPATH", "")
    assert "PYTHONPATH" not in child_env([])


def test_the_faults_on_here_come_first_then_the_cases_own(tmp_path: Path) -> None:
    assert child_env([tmp_path])[ENV_VAR] == ""
    with FAULTS.enabled("bnb_import_silences_all"):
        assert (
            child_env([tmp_path], ["greedy_sampling_noise"])[ENV_VAR] == "bnb_import_silences_all,greedy_sampling_noise"
        )


def test_a_child_imports_the_engine_the_path_names(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("WHERE = 'stand-in'\n", encoding="utf-8")
    code = "import engine; print(engine.WHERE)"
    out = subprocess.run([sys.executable, "-P", "-c", code], env=child_env([tmp_path]), capture_output=True, text=True)
    assert out.stdout.strip() == "stand-in"
