"""The CI workflow and the local main job are one script, so they cannot drift apart."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ship-check.sh"


def test_the_workflow_runs_the_ship_check_script_and_nothing_of_its_own() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pv.yml").read_text())
    runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    checks = [r for r in runs if "ship-check.sh" in r]
    assert len(checks) == 1 and "--base" in checks[0] and "--format github" in checks[0]
    # every pv or pytest call is the script's: the workflow only installs around it
    assert not [r for r in runs if r not in checks and ("pv " in r or "pytest" in r)]


def test_the_script_documents_and_checks_its_arguments() -> None:
    help_text = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, check=True).stdout
    assert "--base REF" in help_text and "--pr" in help_text and "-- ARGS" in help_text
    bad = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "unknown argument --bogus" in bad.stderr
