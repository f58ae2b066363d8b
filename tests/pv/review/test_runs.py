"""Reading runs for review: the folder and its git history, and the base as the runs of the base's own code."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pv.review.runs import Tree, read_runs, runs_of_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
CONTRACT = b"metadata: {id: demo-v1}\n"


def _git(root: Path, *args: str) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@e"]
    return subprocess.run(["git", *env_args, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def _bundle(root: Path, run_id: str, code: bytes, finished: str) -> None:
    folder = root / "evidence" / "demo-v1" / run_id
    folder.mkdir(parents=True)
    data = {
        "run_id": run_id,
        "finished_at": finished,
        "environment": {"git_commit": _git(root, "rev-parse", "HEAD").strip(), "git_dirty": False},
        "contract": {"sha256": hashlib.sha256(CONTRACT).hexdigest()},
        "code": {"files": {"shop.py": hashlib.sha256(code).hexdigest()}},
        "falsifiers": [{"id": "FALSIFY-DEMO-001", "verdict": "survived", "observations": {"x": 1}}],
    }
    (folder / "bundle.json").write_text(json.dumps(data))
    (folder / "MANIFEST.sha256").write_text(f"{run_id}\n")


def test_the_base_is_the_runs_of_its_own_code_never_the_nearest_commit_with_evidence(tmp_path: Path) -> None:
    root = tmp_path
    _git(root, "init", "-q", "-b", "main")
    (root / "contracts").mkdir()
    (root / "contracts" / "demo-v1.yaml").write_bytes(CONTRACT)
    (root / "shop.py").write_bytes(b"v1")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    first = _git(root, "rev-parse", "HEAD").strip()
    _bundle(root, "20260101T000000000000Z-00000001", b"v1", "2026-01-01T00:00:00+00:00")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "evidence of v1")
    (root / "shop.py").write_bytes(b"v2")
    _git(root, "commit", "-q", "-am", "v2, not measured")
    # the bundle pruned from the folder: history still holds it
    shutil.rmtree(root / "evidence" / "demo-v1" / "20260101T000000000000Z-00000001")
    _git(root, "commit", "-q", "-am", "gc")

    runs = read_runs(root / "evidence", root, ["demo-v1"])["demo-v1"]
    assert [r.run_id for r in runs] == ["20260101T000000000000Z-00000001"]
    assert runs[0].where.startswith("git ")
    assert runs[0].digest == hashlib.sha256(runs[0].run_id.encode() + b"\n").hexdigest()

    matching, why = runs_of_commit(runs, Tree.at(root, "HEAD"), "contracts/demo-v1.yaml")
    assert matching == [] and "no run measured" in why and "1 code file(s) differ (shop.py)" in why
    matching, why = runs_of_commit(runs, Tree.at(root, first), "contracts/demo-v1.yaml")
    assert [r.run_id for r in matching] == ["20260101T000000000000Z-00000001"] and why == ""


class _FixedTree:
    """A tree whose files' digests are given (what Tree.sha256 answers)."""

    commit = "c0ffee" * 6 + "abcd"

    def __init__(self, digests: dict[str, str | None]) -> None:
        self.digests = digests

    def sha256(self, paths: list[str]) -> dict[str, str | None]:
        return {p: self.digests.get(p) for p in paths}


def _made(code: dict[str, str] | None, dirty: bool = False, contract: str = "c0", run_id: str = "r1") -> object:
    from pv.review.runs import Run

    return Run("demo-v1", run_id, "2026-01-01", "abc", dirty, None, False, contract, code, {}, "evidence")


def test_why_a_run_did_not_measure_a_commit() -> None:
    from pv.review.runs import measured

    tree = _FixedTree({"c.yaml": "c0", "a.py": "1", "b.py": "2", "d.py": "4", "e.py": "5"})
    assert measured(_made(None), tree, "c.yaml") == "written before code binding"  # type: ignore[arg-type]
    assert measured(_made({}, dirty=True), tree, "c.yaml") == "run on a checkout with uncommitted changes"  # type: ignore[arg-type]
    assert measured(_made({}, contract="c1"), tree, "c.yaml") == "another version of the contract"  # type: ignore[arg-type]
    assert measured(_made({"a.py": "1", "b.py": "2"}), tree, "c.yaml") is None  # type: ignore[arg-type]
    three = {"a.py": "x", "b.py": "x", "d.py": "x"}
    assert measured(_made(three), tree, "c.yaml") == "3 code file(s) differ (a.py, b.py, d.py)"  # type: ignore[arg-type]
    four = {**three, "e.py": "x"}
    assert measured(_made(four), tree, "c.yaml") == "4 code file(s) differ (a.py, b.py, d.py…)"  # type: ignore[arg-type]
    gone = {"a.py": "1", "z.py": "9"}  # a file the commit lacks differs too
    assert measured(_made(gone), tree, "c.yaml") == "1 code file(s) differ (z.py)"  # type: ignore[arg-type]
    newest = _made(three, run_id="r9")
    assert runs_of_commit([_made({"a.py": "1"}), newest], tree, "c.yaml")[0][0].run_id == "r1"  # type: ignore[list-item, arg-type]
    assert runs_of_commit([newest], tree, "c.yaml") == (  # type: ignore[list-item, arg-type]
        [],
        "no run measured c0ffeec0ffee; the newest (r9) measured other code: 3 code file(s) differ (a.py, b.py, d.py)",
    )
    assert runs_of_commit([], tree, "c.yaml") == ([], "no evidence at all")  # type: ignore[arg-type]


def _plain_bundle(folder: Path, run_id: str, *, signed: bool = False, **data: object) -> None:
    bundle = folder / run_id
    bundle.mkdir(parents=True)
    doc = {"run_id": run_id, **data}
    (bundle / "bundle.json").write_text(json.dumps(doc))
    (bundle / "MANIFEST.sha256").write_text(f"manifest of {run_id}\n")
    if signed:
        (bundle / "statement.intoto.dsse.json").write_text("{}")


def test_runs_read_field_by_field_from_the_folder_and_from_git_history(tmp_path: Path) -> None:
    from pv.review.runs import _run, read_runs

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    evidence = root / "evidence"
    a, b, c = "20260101T000000000001Z-0000000a", "20260102T000000000001Z-0000000b", "20260103T000000000001Z-0000000c"
    full = {
        "finished_at": "2026-01-02T00:00:00Z",
        "environment": {"git_commit": "f" * 40, "git_dirty": False},
        "contract": {"sha256": "ab" * 32},
        "code": {"files": {"m.py": "cd" * 32}},
        "falsifiers": [{"id": "F1", "verdict": "survived"}, {"id": 3}, "junk"],
    }
    _plain_bundle(evidence / "demo-v1", a, signed=True, **full)
    _plain_bundle(evidence / "demo-v1", b, started_at="2026-01-02T00:00:01Z")
    _plain_bundle(evidence / "other-v1", c)
    (evidence / "demo-v1" / "20260104T000000000001Z-bad").mkdir()  # not a run id: never a run
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "evidence"], check=True)
    shutil.rmtree(evidence / "demo-v1" / a)  # pruned from the folder: only history has it

    runs = read_runs(evidence, root, ["demo-v1"])
    assert list(runs) == ["demo-v1"]  # only the contracts asked for
    first, second = runs["demo-v1"]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    manifest_digest = hashlib.sha256(f"manifest of {a}\n".encode()).hexdigest()
    assert (first.run_id, first.finished_at, first.commit, first.dirty) == (a, "2026-01-02T00:00:00Z", "f" * 40, False)
    assert (first.contract_sha256, first.code, list(first.falsifiers)) == ("ab" * 32, {"m.py": "cd" * 32}, ["F1"])
    assert (first.digest, first.signed, first.where) == (manifest_digest, True, f"git {head[:12]}:evidence/demo-v1/{a}")
    assert (second.run_id, second.finished_at, second.commit, second.dirty, second.code) == (
        b,
        "2026-01-02T00:00:01Z",
        None,
        None,
        None,
    )
    assert (second.signed, second.where, second.contract_sha256) == (False, f"evidence/demo-v1/{b}", "")
    assert second.digest == hashlib.sha256(f"manifest of {b}\n".encode()).hexdigest()
    assert _run("x", {"run_id": 3}, None, False, "w") is None and _run("x", [], None, False, "w") is None
    bare = _run("x", {"run_id": "r", "environment": [], "contract": "c", "code": {"files": []}}, None, False, "w")
    assert bare is not None and (bare.commit, bare.contract_sha256, bare.code, bare.finished_at) == (None, "", None, "")


def test_several_bundles_only_history_has_are_each_read_with_their_own_files(tmp_path: Path) -> None:
    from pv.review.runs import read_runs

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    evidence = root / "evidence" / "demo-v1"
    p, q, r = (f"2026010{n}T000000000001Z-0000000{n}" for n in (1, 2, 3))
    _plain_bundle(evidence, p)
    (evidence / p / "bundle.json").write_text("{not json")  # unreadable: skipped, the others still read
    _plain_bundle(evidence, q, signed=True, finished_at="2026-01-02T00:00:00Z")
    _plain_bundle(evidence, r, finished_at="2026-01-03T00:00:00Z")
    (evidence / r / "MANIFEST.sha256").unlink()  # a bundle from before manifests: no digest
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "evidence"], check=True)
    for run_id in (p, q, r):
        shutil.rmtree(evidence / run_id)
    runs = {run.run_id: run for run in read_runs(root / "evidence", root, ["demo-v1"])["demo-v1"]}
    assert sorted(runs) == [q, r]
    manifest_digest = hashlib.sha256(f"manifest of {q}\n".encode()).hexdigest()
    assert (runs[q].contract_id, runs[q].digest, runs[q].signed) == ("demo-v1", manifest_digest, True)
    assert (runs[r].contract_id, runs[r].digest, runs[r].signed) == ("demo-v1", None, False)


def test_a_tree_lists_the_repository_s_files_from_its_top_blobs_only(tmp_path: Path) -> None:
    from pv.git import GitError

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("a")
    (tmp_path / "top.txt").write_text("t")
    subprocess.run([*git, "add", "-A"], check=True)
    # a submodule's entry is a commit, not a file of this repository
    subprocess.run([*git, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendored"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "files"], check=True)
    tree = Tree.at(tmp_path / "project", "HEAD")  # a project in a subfolder of its repository
    assert (tree.has("project/a.txt"), tree.has("top.txt"), tree.has("a.txt"), tree.has("vendored")) == (
        True,
        True,
        False,
        False,
    )
    with pytest.raises(GitError) as refused:
        Tree.at(tmp_path, "no-such-ref")
    assert str(refused.value) == f"`no-such-ref` names no commit of the repository at {tmp_path}"
