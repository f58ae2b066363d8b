"""The ledger file line by line: each way it can be edited, and the words pv uses for it; the
chain against the bundle folders.  A status rests on this file, so each problem is pinned."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pv.evidence import ledger as lg


def _built(folder: Path, *kinds: tuple[str, str]) -> lg.Ledger:
    with lg.locked(folder) as led:
        for kind, run_id in kinds:
            lg.append(led, kind, run_id, f"d-{run_id}", verdicts={"F1": "survived"})  # type: ignore[arg-type]
    return lg.read(folder)


def _problems_after(folder: Path, edit: object) -> list[str]:
    path = folder / lg.LEDGER_FILE
    lines = path.read_text().splitlines()
    path.write_text(edit(lines))  # type: ignore[operator]
    return lg.read(folder).problems


def test_a_good_ledger(tmp_path: Path) -> None:
    led = _built(tmp_path, ("bundle", "r1"), ("bundle", "r2"), ("pruned", "r1"))
    assert led.problems == [] and led.exists
    assert [(e.seq, e.kind, e.run_id, e.digest) for e in led.entries] == [
        (1, "bundle", "r1", "d-r1"),
        (2, "bundle", "r2", "d-r2"),
        (3, "pruned", "r1", "d-r1"),
    ]
    assert led.entries[0].prev_line is None and led.entries[1].prev_line == lg.line_digest(led.lines[0])
    assert led.entries[0].verdicts == {"F1": "survived"} and led.entries[0].at.endswith("Z")
    assert list(led.recorded()) == ["r2"] and list(led.removed()) == ["r1"]
    assert led.last_bundle() is not None and led.last_bundle().run_id == "r2"  # type: ignore[union-attr]
    assert led.previous_bundle(2).run_id == "r1" and led.previous_bundle(1) is None  # type: ignore[union-attr]
    assert lg.read(tmp_path / "none").problems == [] and not lg.read(tmp_path / "none").exists


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda ls: "\n".join(ls), "the last line is torn (no newline): a write was interrupted or the file edited"),
        (lambda ls: "\n".join([ls[0], "{not json", ls[1]]) + "\n", "line 2 is not JSON"),
        (lambda ls: "\n".join([ls[0], "[1, 2]"]) + "\n", "line 2 is not a JSON object"),
        (
            lambda ls: "\n".join([ls[0], json.dumps({"seq": 2, "kind": "bundle"})]) + "\n",
            "line 2 lacks a field or has a wrong one ('run_id')",
        ),
        (
            lambda ls: "\n".join([ls[0], ls[1].replace('"kind":"bundle"', '"kind":"moved"')]) + "\n",
            "line 2: unknown kind 'moved'",
        ),
        (lambda ls: "\n".join([ls[1]]) + "\n", "line 1 says seq 2: lines were removed, added or reordered"),
        (
            lambda ls: "\n".join([ls[0].replace("d-r1", "d-rX"), ls[1]]) + "\n",
            "line 2 does not carry the digest of the line before it: the chain was edited",
        ),
        (lambda ls: "\n".join([*ls, ls[1].replace('"seq":2', '"seq":3')]) + "\n", "bundle r2 is recorded twice"),
    ],
)
def test_each_edit_is_named(tmp_path: Path, edit: object, problem: str) -> None:
    _built(tmp_path, ("bundle", "r1"), ("bundle", "r2"))
    assert problem in _problems_after(tmp_path, edit)


def test_removals_must_name_a_recorded_bundle_under_its_digest(tmp_path: Path) -> None:
    _built(tmp_path, ("bundle", "r1"))
    with lg.locked(tmp_path) as led:
        lg.append(led, "pruned", "r9", "d-r9")  # never recorded
    assert lg.read(tmp_path).problems == ["line 2 removes r9, which no earlier line records"]
    other = tmp_path / "other"
    _built(other, ("bundle", "r1"))
    with lg.locked(other) as led:
        lg.append(led, "pruned", "r1", "d-elsewhere")
    assert lg.read(other).problems == ["line 2 removes r1 under another digest than it was recorded"]
    lost = tmp_path / "lost"
    _built(lost, ("forgotten", "r5"))  # a bundle whose line was lost with it: forgetting it is in order
    assert lg.read(lost).problems == []


def test_a_broken_ledger_takes_no_line_unless_forced(tmp_path: Path) -> None:
    _built(tmp_path, ("bundle", "r1"))
    path = tmp_path / lg.LEDGER_FILE
    path.write_text(path.read_text() + "{torn")
    with lg.locked(tmp_path) as led, pytest.raises(lg.LedgerError) as caught:
        lg.append(led, "bundle", "r2", "d-r2")
    torn = "the last line is torn (no newline): a write was interrupted or the file edited"
    assert str(caught.value) == f"{path}: the ledger is broken ({torn}); nothing appended"
    with lg.locked(tmp_path) as led:
        entry = lg.append(led, "forgotten", "r1", "d-r1", force=True, reason="lost")
    assert entry.seq == 3 and entry.reason == "lost"


def _bundle(seq: int, previous: str | None) -> SimpleNamespace:
    return SimpleNamespace(chain=SimpleNamespace(seq=seq, previous=previous))


def test_the_chain_against_the_folders(tmp_path: Path) -> None:
    folders = {}
    for run_id in ("r1", "r2", "r3", "r4", "r5"):
        folder = tmp_path / run_id
        folder.mkdir()
        (folder / "MANIFEST.sha256").write_text(run_id)
        folders[run_id] = folder
    digests = {r: lg.bundle_digest(f) for r, f in folders.items()}
    with lg.locked(tmp_path) as led:
        for kind, run_id in (("bundle", "r1"), ("bundle", "r2"), ("adopted", "r3"), ("bundle", "r4")):
            lg.append(led, kind, run_id, digests[run_id] or "")  # type: ignore[arg-type]
    led = lg.read(tmp_path)
    good = {
        "r1": _bundle(1, None),
        "r2": _bundle(2, digests["r1"]),
        "r3": SimpleNamespace(chain=None),
        "r4": _bundle(4, digests["r3"]),  # the adopted bundle before it counts
    }
    found = lg.check(led, folders, good)  # type: ignore[arg-type]
    assert (
        found.problems == []
        and found.unrecorded == [folders["r5"]]
        and list(found.recorded) == ["r1", "r2", "r3", "r4"]
    )

    spliced = {
        **good,
        "r4": _bundle(4, digests["r1"]),
        "r3": _bundle(3, digests["r2"]),
        "r2": _bundle(9, digests["r1"]),
    }
    assert lg.check(led, folders, spliced).problems == [  # type: ignore[arg-type]
        "bundle r2 does not name its place in the chain (ledger line 2): the chain was reordered or spliced",
        "bundle r3 carries a chain link but is recorded as adopted",
        "bundle r4 does not name its place in the chain (ledger line 4): the chain was reordered or spliced",
    ]
    unlinked = {**good, "r1": SimpleNamespace(chain=None), "r2": None}  # r2 did not load: verify says why
    assert lg.check(led, folders, unlinked).problems == [  # type: ignore[arg-type]
        "bundle r1 does not name its place in the chain (ledger line 1): the chain was reordered or spliced"
    ]
    (folders["r2"] / "MANIFEST.sha256").write_text("edited")
    del folders["r1"]
    assert lg.check(led, folders, good).problems == [  # type: ignore[arg-type]
        "bundle r1 (ledger line 1) is gone: deleted or lost; if it was lost by accident, `pv evidence forget r1 "
        "--reason ...` records that and its falsifiers run again",
        "bundle r2 (ledger line 2) was replaced or edited after it was recorded",
    ]
    (tmp_path / lg.LEDGER_FILE).write_text((tmp_path / lg.LEDGER_FILE).read_text() + "{")
    assert lg.check(lg.read(tmp_path), folders, good).problems[0] == (  # type: ignore[arg-type]
        "ledger.jsonl: the last line is torn (no newline): a write was interrupted or the file edited"
    )


def test_the_verdicts_a_line_records(tmp_path: Path) -> None:
    falsifiers = [
        SimpleNamespace(id="F1", selected=True, verdict="survived"),
        SimpleNamespace(id="F2", selected=False, verdict="survived"),
        SimpleNamespace(id="F3", selected=True, verdict="not_run"),
        SimpleNamespace(id="F4", selected=True, verdict="falsified"),
    ]
    assert lg.verdicts_of(SimpleNamespace(falsifiers=falsifiers)) == {"F1": "survived", "F4": "falsified"}  # type: ignore[arg-type]


def test_a_line_git_saw_and_the_file_lost(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    folder = tmp_path / "evidence" / "c-v1"
    _built(folder, ("bundle", "r1"), ("bundle", "r2"))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "evidence"], check=True)
    path = folder / lg.LEDGER_FILE
    kept = path.read_text().splitlines()[0]
    path.write_text(kept + "\n{not json}\n")  # the second line removed, a line no one can read added
    found = lg.history(path)
    assert found.problems == [
        "evidence/c-v1/ledger.jsonl: the working tree removed the line of bundle r2; if that was an accident, "
        "`pv evidence forget r2 --reason ...` records it"
    ]
    assert list(found.lost) == ["r2"] and found.notes == []
    subprocess.run([*git, "commit", "-q", "-am", "lose it"], check=True)
    committed = lg.history(path)
    assert len(committed.problems) == 1 and "commit " in committed.problems[0] and list(committed.lost) == ["r2"]
    assert lg.history(tmp_path.parent / "elsewhere" / "ledger.jsonl").notes[0].startswith("not in a git repository")
