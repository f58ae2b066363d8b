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
    assert len(checks) == 4 and all("--evidence-branch pv-evidence" in c for c in checks)
    assert sum("--base" in c and "--format github" in c for c in checks) == 2  # the pull-request and main jobs
    # every pv or pytest call is the script's: the workflow only installs around it
    assert not [r for r in runs if r not in checks and ("pv " in r or "pytest" in r)]


def test_only_the_protected_branch_signs_and_publishes_evidence() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pv.yml").read_text())
    jobs = workflow["jobs"]
    pr, main = jobs["pull-request"], jobs["main"]
    assert pr["if"] == "github.event_name == 'pull_request'" and pr["permissions"] == {"contents": "read"}
    assert main["if"] == "${{ github.event_name == 'push' && !cancelled() }}"
    assert main["permissions"] == {"contents": "write"} and main["needs"] == "main-shards"
    assert main["concurrency"]["group"] == "pv-evidence" and main["concurrency"]["cancel-in-progress"] is False
    (pr_step,) = [s for s in pr["steps"] if "ship-check.sh" in s.get("run", "")]
    (main_step,) = [s for s in main["steps"] if "ship-check.sh" in s.get("run", "")]
    assert "--pr" in pr_step["run"] and "--publish" not in pr_step["run"]
    assert "PV_SIGNING_KEY" not in str(pr)  # a pull request never sees the secret
    real = jobs["real-model"]  # signs and publishes on main only, in the same queue as the main job
    assert "github.event_name == 'push' && 'pv-evidence'" in real["concurrency"]["group"]
    (real_step,) = [s for s in real["steps"] if "ship-check.sh" in s.get("run", "")]
    assert "'--publish' || '--pr'" in real_step["run"]
    assert real_step["env"]["PV_SIGNING_KEY"] == "${{ github.event_name == 'push' && secrets.PV_SIGNING_KEY || '' }}"
    assert "--publish" in main_step["run"] and main_step["env"]["PV_SIGNING_KEY"] == "${{ secrets.PV_SIGNING_KEY }}"
    assert "--parts pv-parts" in main_step["run"]  # main merges the shards' parts; it runs no falsifier
    shards = jobs["main-shards"]  # each shard signs its part and never publishes
    assert shards["if"] == "github.event_name == 'push'" and shards["permissions"] == {"contents": "read"}
    assert shards["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    (shard_step,) = [s for s in shards["steps"] if "ship-check.sh" in s.get("run", "")]
    assert "--shard ${{ matrix.shard }}/4" in shard_step["run"] and "--publish" not in shard_step["run"]
    assert shard_step["env"]["PV_SIGNING_KEY"] == "${{ secrets.PV_SIGNING_KEY }}"


def test_the_script_documents_and_checks_its_arguments() -> None:
    help_text = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, check=True).stdout
    assert "--base REF" in help_text and "--pr" in help_text and "-- ARGS" in help_text
    bad = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "unknown argument --bogus" in bad.stderr


def test_the_review_is_written_by_the_pull_request_and_posted_by_a_workflow_run() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pv.yml").read_text())
    pr = workflow["jobs"]["pull-request"]
    (check,) = [s["run"] for s in pr["steps"] if "ship-check.sh" in s.get("run", "")]
    assert "--review-dir pv-review" in check and "--base" in check
    uploads = [s for s in pr["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert any(s["with"]["name"] == "pv-review" and s["with"]["path"] == "pv-review/" for s in uploads)
    publish = yaml.safe_load((ROOT / ".github" / "workflows" / "pv-review.yml").read_text())
    # PyYAML reads the key `on` as True
    assert publish[True] == {"workflow_run": {"workflows": [workflow["name"]], "types": ["completed"]}}
    (job,) = publish["jobs"].values()
    assert job["permissions"] == {"actions": "read", "checks": "write", "pull-requests": "write"}
    checkout = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout")]
    assert checkout and all("with" not in s for s in checkout)  # the default branch, never the PR's ref
    (download,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    assert download["with"]["name"] == "pv-review"
    (post,) = [s["run"] for s in job["steps"] if "pv review publish" in s.get("run", "")]
    assert "^[0-9]+$" in post  # the artifact's PR number is checked before use
