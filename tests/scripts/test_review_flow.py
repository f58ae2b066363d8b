"""The pull-request review end to end, on a local bare remote, as the workflow runs it.

main has five CI runs on the evidence branch (the throughput moving a little between them); a pull
request then breaks the rate limiter (ship-blocking), doubles the throughput, tightens the latency
bound and breaks the advisory tie-break.  Its CI (``scripts/ship-check.sh --pr --base origin/main
--review-dir``) runs the ship-blocking falsifiers and those it changes, advisory ones included, and
writes the review: the Markdown comment, the JSON, the HTML (rendered here by headless Chromium,
when the machine has it) and the mutation report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.scripts.test_ci_flow import BRANCH, ROOT, _branch_files, _clone, _run, promote_over_evidence_branch

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CONTRACT = """\
metadata:
  id: ratelimit-v1
  version: {version}
  description: The rate limiter admits at most its limit, at a throughput and latency we promise.
  status: {status}
  changelog:{more}
    - {{version: 1.0.0, date: "2026-12-01", change: "first version"}}
falsification_tests:
  - id: FALSIFY-RL-001
    prediction: of a burst of 100 requests, at most the limit of 30 are admitted
    check: checks.limits:burst
    expect: "allowed <= 30"
    ship_blocking: true
    mutant: checks.mutants:admits_all
  - id: FALSIFY-RL-002
    prediction: the word counter keeps up with 200,000 words a second
    check: checks.limits:throughput
    expect: "words_per_s >= 200000"
    ship_blocking: true
    mutant: checks.mutants:crawls
  - id: FALSIFY-RL-003
    prediction: a decision takes at most {latency} ms
    check: checks.limits:latency
    expect: "latency_ms <= {latency}"
    ship_blocking: true
    mutant: checks.mutants:stalls
  - id: FALSIFY-RL-004
    prediction: among equal scores, the first name in order wins
    check: checks.limits:tie_break
    expect: "first == 'a'"
    ship_blocking: false
"""

FILES = {
    "pyproject.toml": '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["checks"]\n'
    'fault_packages = ["shop"]\nevidence = "evidence"\n',
    "shop/__init__.py": "",
    "shop/limiter.py": "def admitted(requests, limit):\n    return min(requests, limit)\n\n\n"
    "def pick(scores):\n    best = max(scores.values())\n    return min(k for k, v in scores.items() if v == best)\n",
    "shop/words.py": "COST = 1.0\nLATENCY_MS = 20\n\n\ndef rate():\n    return 1_000_000 / COST\n\n\n"
    "def latency_ms():\n    return LATENCY_MS\n",
    "checks/__init__.py": "",
    "checks/limits.py": """import pv

from shop import limiter, words


@pv.checker(observes=["allowed"], ids=["FALSIFY-RL-001"])
def burst():
    return {"allowed": limiter.admitted(100, 30)}


@pv.checker(observes=["words_per_s"], ids=["FALSIFY-RL-002"])
def throughput():
    return {"words_per_s": words.rate()}


@pv.checker(observes=["latency_ms"], ids=["FALSIFY-RL-003"])
def latency():
    return {"latency_ms": words.latency_ms()}


@pv.checker(observes=["first"], ids=["FALSIFY-RL-004"])
def tie_break():
    return {"first": limiter.pick({"b": 1, "a": 1})}
""",
    "checks/mutants.py": """from pv import PatchFaults

FAULTS = PatchFaults("shop")


@FAULTS.replace("shop.limiter:admitted", "admits every request")
def admits_all(requests, limit):
    return requests


@FAULTS.replace("shop.words:rate", "counts a hundred words a second")
def crawls():
    return 100.0


@FAULTS.replace("shop.words:latency_ms", "takes a second")
def stalls():
    return 1000
""",
    ".gitignore": "/.pv-evidence/\nevidence/.journal/\n__pycache__/\n.pv/\n/review/\n",
}


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _contract(status: str = "DRAFT", version: str = "1.0.0", latency: int = 50, more: str = "") -> str:
    return CONTRACT.format(status=status, version=version, latency=latency, more=more)


def _set_cost(dev: Path, cost: float) -> None:
    words = dev / "shop" / "words.py"
    text = words.read_text()
    old = next(line for line in text.splitlines() if line.startswith("COST = "))
    words.write_text(text.replace(old, f"COST = {cost}"))


def _main_ci(remote: Path, where: Path) -> None:
    ci = _clone(remote, where)
    # main measures every claim, advisory ones too, so each has a base and a history
    argv = ("bash", "scripts/ship-check.sh", "--evidence-branch", BRANCH, "--publish", "--falsify", "contracts")
    done = _run(ci, *argv, ok=False)
    assert "publish" not in done.stdout.split("FAILED steps:")[-1] or done.returncode == 0, done.stdout + done.stderr


def _screenshot(page: Path, png: Path) -> bool:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        return False
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={png.parent / 'chromium-profile'}", "--window-size=1280,1800", f"--screenshot={png}",
    ]  # fmt: skip
    done = subprocess.run([chromium, *flags, page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return True


def _pixels_of(png: Path, colour: str) -> int:
    import numpy as np  # the engine's dependency, and PIL matplotlib's: here only to read the screenshot
    from PIL import Image

    want = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return int((np.abs(pixels - want) <= 12).all(axis=-1).sum())


def test_a_pull_request_review_shows_base_against_head_with_history(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    _run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    dev = tmp_path / "dev"
    for rel, text in FILES.items():
        _write(dev, rel, text)
    _write(dev, "contracts/ratelimit-v1.yaml", _contract())
    (dev / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "ship-check.sh", dev / "scripts" / "ship-check.sh")
    _run(dev, "git", "init", "-q", "-b", "main")
    _run(dev, "git", "add", "-A")
    _run(dev, "git", "commit", "-q", "-m", "a rate limiter and its contract")
    _run(dev, "git", "remote", "add", "origin", str(remote))
    _run(dev, "git", "push", "-q", "origin", "main")

    # main: a first CI run, the status promoted over the evidence branch, then four more runs
    _main_ci(remote, tmp_path / "ci-0")
    promote_over_evidence_branch(dev)
    _run(dev, "git", "worktree", "remove", "--force", ".pv-evidence")
    _run(dev, "git", "commit", "-q", "-am", "ratelimit-v1: ACTIVE")
    _run(dev, "git", "push", "-q", "origin", "main")
    for n, cost in enumerate((1.1, 0.95, 1.05, 1.0), 1):
        _set_cost(dev, cost)
        _run(dev, "git", "commit", "-q", "-am", f"tune the word counter ({cost})")
        _run(dev, "git", "push", "-q", "origin", "main")
        _main_ci(remote, tmp_path / f"ci-{n}")
    runs = [f for f in _branch_files(remote) if f.endswith("/bundle.json")]
    assert len(runs) == 5

    # the pull request: a regression, an improvement, a moved bound, a broken advisory claim
    _run(dev, "git", "switch", "-q", "-c", "faster")
    limiter = dev / "shop" / "limiter.py"
    limiter.write_text(
        limiter.read_text()
        .replace("return min(requests, limit)", "return requests - limit // 2 - 6")
        .replace("return min(k for k", "return max(k for k")
    )
    _set_cost(dev, 0.5)
    more = '\n    - {version: 1.1.0, date: "2026-12-02", change: "FALSIFY-RL-003: at most 40 ms"}'
    _write(dev, "contracts/ratelimit-v1.yaml", _contract("ACTIVE", "1.1.0", 40, more))
    _run(dev, "git", "commit", "-q", "-am", "a faster limiter, a tighter latency bound")
    _run(dev, "git", "push", "-q", "origin", "faster")
    pr = _clone(remote, tmp_path / "ci-pr", "faster")
    _run(pr, "git", "fetch", "-q", "origin", "main:refs/remotes/origin/main")
    done = _run(
        pr, "bash", "scripts/ship-check.sh", "--pr", "--evidence-branch", BRANCH, "--base", "origin/main",
        "--format", "github", "--review-dir", "review", ok=False,
    )  # fmt: skip
    assert done.returncode == 1 and "FAILED steps: falsifiers" in done.stdout, done.stdout + done.stderr
    base_commit = _run(pr, "git", "rev-parse", "origin/main").stdout.strip()
    review = json.loads((pr / "review" / "review.json").read_text())
    rows = {r["falsifier_id"]: r for r in review["rows"]}

    assert review["base"] == {"ref": "origin/main", "commit": base_commit}
    assert review["counts"] == {
        "regressed": 2, "improved": 1, "unchanged": 1, "new": 0, "missing": 0, "bounds_moved": 1,
    }  # fmt: skip
    assert review["status_changes"] == [{"contract": "ratelimit-v1", "before": "ACTIVE", "after": "DRAFT"}]
    (contract,) = review["contracts"]
    assert contract["base_run"] and len(contract["base_digest"]) == 64 and contract["base_missing"] == ""

    rl1 = rows["FALSIFY-RL-001"]  # ship-blocking, regressed: the base's value is there beside the head's
    assert (rl1["kind"], rl1["base_verdict"], rl1["head_verdict"]) == ("regressed", "survived", "falsified")
    (allowed,) = rl1["values"]
    assert (allowed["base"], allowed["head"], allowed["delta"], allowed["limit"]) == (30.0, 79.0, 49.0, 30.0)
    assert allowed["used"] == pytest.approx(79 / 30) and rl1["line"] == 10
    assert rl1["reproduce"] == "pytest contracts/ratelimit-v1.yaml::FALSIFY-RL-001 --pv-mutants -p no:cacheprovider"

    rl2 = rows["FALSIFY-RL-002"]  # the improvement, with main's five runs as history
    assert rl2["kind"] == "improved" and rl2["values"][0]["moved"] == "better"
    assert rl2["values"][0]["head"] == 2_000_000 and rl2["values"][0]["delta_pct"] == pytest.approx(1.0)
    history = [p["values"]["words_per_s"] for p in rl2["history"]]
    assert history == pytest.approx([1e6, 1e6 / 1.1, 1e6 / 0.95, 1e6 / 1.05, 1e6])
    assert rl2["history"][-1]["run_id"] == rl2["base_run"]

    rl3 = rows["FALSIFY-RL-003"]  # the moved bound, measured in the PR against the new bound
    assert rl3["bound_moved"] and rl3["kind"] == "unchanged" and rl3["head_verdict"] == "survived"
    assert (rl3["base_expect"], rl3["head_expect"]) == ("latency_ms <= 50", "latency_ms <= 40")
    assert rl3["values"][0]["used"] == pytest.approx(0.5)

    rl4 = rows["FALSIFY-RL-004"]  # advisory, run because the PR changes the code it measures
    assert (rl4["kind"], rl4["ship_blocking"], rl4["head_verdict"]) == ("regressed", False, "falsified")
    assert any(reason.startswith("code: ") for reason in rl4["changed"])

    comment = (pr / "review" / "comment.md").read_text()
    assert comment.startswith("<!-- pv-review -->") and len(comment) < 65_535
    assert "> [!CAUTION]" in comment and "> Status: `ratelimit-v1` ACTIVE → **DRAFT**" in comment
    assert comment.index("[!CAUTION]") < comment.index("### Regressed (2)") < comment.index("### Improved (1)")
    assert "| allowed | 30 | 79 | +49 | +163.3 % | ≤ 30 | 263 % |" in comment
    assert "reproduce: `pytest contracts/ratelimit-v1.yaml::FALSIFY-RL-001 --pv-mutants" in comment
    assert "bound moved: `latency_ms <= 50` → `latency_ms <= 40`" in comment
    assert "`▂▁▂▁▂█`" in comment  # main's five runs of the throughput as a sparkline, then the head
    assert "::error file=contracts/ratelimit-v1.yaml,line=10,title=FALSIFY-RL-001 regressed" in done.stdout

    check = json.loads((pr / "review" / "check-run.json").read_text())
    assert check["conclusion"] == "failure"
    found = [(a["start_line"], a["annotation_level"]) for a in check["annotations"]]
    assert found == [(10, "failure"), (28, "warning")]  # on each claim's `id:` line

    mutants = json.loads((pr / "review" / "mutation-report.json").read_text())
    statuses = {m["id"]: m["status"] for m in mutants["files"]["contracts/ratelimit-v1.yaml"]["mutants"]}
    assert statuses == {
        "ratelimit-v1/FALSIFY-RL-001": "Pending", "ratelimit-v1/FALSIFY-RL-002": "Killed",
        "ratelimit-v1/FALSIFY-RL-003": "Killed",
    }  # fmt: skip

    page = pr / "review" / "review.html"
    text = page.read_text()
    assert "<script src" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert text.count("<svg") >= 4
    keep = os.environ.get("PV_KEEP_REVIEW")  # docs/review.md's example: `PV_KEEP_REVIEW=DIR pytest this file`
    png = Path(keep) / "review.png" if keep else tmp_path / "review.png"
    if keep:
        shutil.copy(pr / "review" / "comment.md", Path(keep) / "comment.md")
    if not _screenshot(page, png):
        if os.environ.get("CI"):
            pytest.fail("no Chromium in CI: .ci/run installs Debian's chromium for this check")
        pytest.skip("no Chromium on this machine (.ci/run installs it): the screenshot is not checked")
    from pv.review.html import BOUND, HEAD, SERIES

    assert _pixels_of(png, SERIES) > 400  # the history lines
    assert _pixels_of(png, BOUND) > 400  # the bounds, dashed
    assert _pixels_of(png, HEAD) > 100  # the head's diamonds
