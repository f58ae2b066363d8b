"""A shard's part on disk: written whole or not at all, read back as written, and an unfinished one
(left by a shard that stopped while writing it) never merged."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pv.app import app
from pv.bundle.signing import KeyRing, Signer, generate
from pv.cli import COMMAND_MODULES
from pv.evidence.shards import (
    PART_ENVELOPE,
    PART_FILE,
    PARTS_DIR,
    UNFINISHED_PREFIX,
    ShardError,
    find_parts,
    merge,
    read_part,
    write_part,
)
from pv.results import FalsifierResult, Verdict
from tests.pv.evidence.conftest import ENV, IDS, Project, record, result

for _name in COMMAND_MODULES:  # the commands register on the app when their modules load
    importlib.import_module(_name)

MACHINE = ENV.model_copy(update={"git_commit": "c0ffee" * 6 + "c0ff"})
PLAN = {f"demo-v1::{fid}": 1 + (i % 2) for i, fid in enumerate(IDS)}  # 001 and 003 in shard 1, 002 in 2


def _shard_results(project: Project, shard: int, tmp_path: Path) -> list[FalsifierResult]:
    """Shard ``shard``'s falsifiers run, the others not_run; 001's artifacts: one missing, one written."""
    log = tmp_path / f"train-{shard}.log"
    log.write_text(f"loss of shard {shard}\n")
    out = []
    for fid in IDS:
        if PLAN[f"demo-v1::{fid}"] == shard:
            r = result(fid, Verdict.SURVIVED)
            if fid == "FALSIFY-DEMO-001":
                r.artifacts = [str(tmp_path / "never-written.log"), str(log)]
        else:
            r = result(fid, Verdict.NOT_RUN, mutant=None)
        out.append(r)
    return out


def _write(project: Project, shard: int, tmp_path: Path) -> Path:
    run = record(project, _shard_results(project, shard, tmp_path))
    return write_part(run, project.evidence, shard, 2, PLAN, MACHINE)


def test_a_part_is_read_back_as_written(project: Project, tmp_path: Path) -> None:
    folder = _write(project, 1, tmp_path)
    assert folder == project.evidence / PARTS_DIR / "session-1-shard-1-of-2"
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # nothing unfinished left beside it
    part = read_part(folder, None)
    assert (part.shard, part.shards, part.plan, part.commit) == (1, 2, PLAN, MACHINE.git_commit)
    assert part.environment == json.loads(MACHINE.model_dump_json())
    assert [(r.falsify_id, r.verdict) for r in part.run.results] == [
        ("FALSIFY-DEMO-001", Verdict.SURVIVED),
        ("FALSIFY-DEMO-002", Verdict.NOT_RUN),
        ("FALSIFY-DEMO-003", Verdict.SURVIVED),
    ]
    # the artifact that exists is copied in even though the one listed before it was never written
    [artifact] = part.run.results[0].artifacts
    assert Path(artifact).parent == folder / "files" and Path(artifact).read_text() == "loss of shard 1\n"
    assert read_part(folder / PART_FILE, None).shard == 1


def test_a_part_written_again_replaces_the_old_one_and_a_leftover_unfinished_one(
    project: Project, tmp_path: Path
) -> None:
    folder = _write(project, 1, tmp_path)
    (folder / "stale.txt").write_text("from the first write")
    leftover = folder.with_name(UNFINISHED_PREFIX + folder.name)
    (leftover / "files").mkdir(parents=True)
    (leftover / PART_FILE).write_text("{half written")
    again = _write(project, 1, tmp_path)
    assert again == folder and not (folder / "stale.txt").exists() and not leftover.exists()
    assert read_part(again, None).shard == 1


def test_an_unfinished_part_is_never_found_nor_read(project: Project, tmp_path: Path) -> None:
    one, two = _write(project, 1, tmp_path), _write(project, 2, tmp_path)
    unfinished = two.with_name(UNFINISHED_PREFIX + two.name)
    shutil.copytree(two, unfinished)
    assert find_parts(project.evidence / PARTS_DIR) == ([one, two], [unfinished])
    assert find_parts(one / PART_FILE) == ([one], [])
    assert find_parts(unfinished) == ([], [unfinished])
    with pytest.raises(ShardError, match="unfinished part"):
        read_part(unfinished, None)


def test_merge_skips_an_unfinished_part_and_says_so(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = _write(project, 1, tmp_path), _write(project, 2, tmp_path)
    shutil.move(two, two.with_name(UNFINISHED_PREFIX + two.name))  # shard 2 stopped before its rename
    monkeypatch.chdir(project.root)
    result = CliRunner().invoke(app, ["evidence", "merge", "evidence/.parts"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"skipped evidence/.parts/{UNFINISHED_PREFIX}{two.name}: an unfinished part" in result.output
    assert "shard 1 of 2" in result.output and "shard 2 of 2" not in result.output
    assert "partial" in result.output  # shard 2's falsifier was not run: the merged run supersedes nothing
    only = CliRunner().invoke(
        app, ["evidence", "merge", f"evidence/.parts/{UNFINISHED_PREFIX}{two.name}"], catch_exceptions=False
    )
    assert only.exit_code == 2 and "holds no finished part" in only.output
    assert one.is_dir()


def _parts_of_three(project: Project, tmp_path: Path, commits: tuple[str, str, str]) -> list[Path]:
    """Three shards' parts (the third ran nothing), each written by a machine at its own commit."""
    folders = []
    for shard, commit in zip((1, 2, 3), commits, strict=True):
        results = _shard_results(project, shard, tmp_path)
        run = record(project, results)
        run.run_id = f"session-{shard}"
        machine = ENV.model_copy(update={"git_commit": commit})
        folders.append(write_part(run, project.evidence, shard, 3, PLAN, machine))
    return folders


def test_parts_of_other_commits_are_refused_naming_which_shards_hold_which(project: Project, tmp_path: Path) -> None:
    a, b = "a" * 90, "b" * 40
    parts = [read_part(f, None) for f in _parts_of_three(project, tmp_path, (a, b, a))]
    with pytest.raises(ShardError) as refused:
        merge(parts)
    quoted_a = json.dumps(a)[:80]
    assert str(refused.value) == (
        f'the parts are not one run: their commits differ (shards 1, 3: {quoted_a}; shards 2: "{b}")'
    )


def test_the_same_split_in_another_key_order_is_the_same_split(project: Project, tmp_path: Path) -> None:
    folders = _parts_of_three(project, tmp_path, ("c" * 40,) * 3)
    part_file = folders[1] / PART_FILE
    data = json.loads(part_file.read_text())
    data["plan"] = dict(reversed(list(data["plan"].items())))  # equal, listed the other way round
    part_file.write_text(json.dumps(data))  # unsigned parts, no trusted keys: read as they are
    merged = merge([read_part(f, None) for f in folders])
    assert merged.present == [1, 2, 3] and merged.not_run == []
    assert merged.run.selection == "ship_blocking shards 1,2,3 of 3"


def test_a_signed_part_says_who_signed_it_and_whether_that_was_checked(project: Project, tmp_path: Path) -> None:
    private, public = generate()
    (tmp_path / "trusted.pem").write_bytes(public)
    ring = KeyRing.from_file(tmp_path / "trusted.pem")
    run = record(project, _shard_results(project, 1, tmp_path))
    folder = write_part(run, project.evidence, 1, 2, PLAN, MACHINE, Signer.from_pem(private))
    trusted = read_part(folder, ring)
    assert trusted.signed_by is not None and trusted.notes == []
    unchecked = read_part(folder, None)  # no ring to check it against: signed, by whom, said as a note
    assert unchecked.signed_by is None and unchecked.notes == [f"signed by {trusted.signed_by[:16]}"]
    (folder / PART_ENVELOPE).write_text("{not json")
    with pytest.raises(ShardError, match=f"{PART_ENVELOPE} unreadable"):
        read_part(folder, None)
