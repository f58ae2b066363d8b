"""A ledger line's bytes are the chain: the next line carries their digest and git's diffs show
them.  A line is compact JSON with sorted keys, in UTF-8 as typed, and the file breaks at ``\\n``
alone, so a reason holding a character that ``str.splitlines`` also breaks at (U+2028, U+2029,
U+0085) reads back whole instead of cutting the ledger in two."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pv.evidence import ledger as lg

ODD = "lost in a rebase\u2028see the notes\u2029of the day\x85after"


def pairs(line: str) -> list[tuple[str, object]]:
    return json.loads(line, object_pairs_hook=list)


def test_a_line_is_compact_json_with_sorted_keys_in_utf8_as_typed(tmp_path: Path) -> None:
    with lg.locked(tmp_path) as led:
        lg.append(
            led, "forgotten", "r1", "d-r1", verdicts={"F2": "survived", "F1": "falsified"}, reason="perdu à la fusion"
        )
    raw = (tmp_path / lg.LEDGER_FILE).read_bytes()
    assert "perdu à la fusion".encode() in raw and b"\\u00e0" not in raw
    line = raw.decode().removesuffix("\n")
    keys = [k for k, _ in pairs(line)]
    assert keys == sorted(keys) == ["at", "digest", "kind", "prev_line", "reason", "run_id", "seq", "verdicts"]
    verdicts = dict(pairs(line))["verdicts"]
    assert isinstance(verdicts, list) and [k for k, _ in verdicts] == ["F1", "F2"]
    assert ", " not in line and '": ' not in line


def test_a_reason_with_line_separators_reads_back_whole_and_the_chain_goes_on(tmp_path: Path) -> None:
    with lg.locked(tmp_path) as led:
        lg.append(led, "bundle", "r1", "d-r1")
        lg.append(led, "forgotten", "r1", "d-r1", reason=ODD)
    with lg.locked(tmp_path) as led:
        assert led.problems == []
        lg.append(led, "bundle", "r2", "d-r2")
    ledger = lg.read(tmp_path)
    assert ledger.problems == []
    assert [(e.seq, e.kind, e.reason) for e in ledger.entries] == [
        (1, "bundle", ""),
        (2, "forgotten", ODD),
        (3, "bundle", ""),
    ]
    assert ledger.entries[2].prev_line == lg.line_digest(ledger.lines[1])


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("committed", [False, True], ids=["working-tree", "commit"])
def test_a_removed_line_holding_a_line_separator_is_named_by_its_run_id(tmp_path: Path, committed: bool) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True)

    folder = tmp_path / "evidence" / "c-v1"
    git("init", "-q")
    with lg.locked(folder) as led:
        lg.append(led, "bundle", "r1", "d-r1")
        lg.append(led, "bundle", "r2", "d-r2")
        lg.append(led, "forgotten", "r1", "d-r1", reason=ODD)
    git("add", "-A")
    git("commit", "-q", "-m", "evidence")
    path = folder / lg.LEDGER_FILE
    first, second, forgot = lg.lines_of(path.read_text(encoding="utf-8"))
    path.write_text(first + "\n" + second + "\n", encoding="utf-8")
    if committed:
        git("commit", "-q", "-am", "cut back")
    found = lg.history(path)
    where = "commit " if committed else "the working tree"
    assert len(found.problems) == 1 and where in found.problems[0]
    assert "removed the line of bundle r1;" in found.problems[0]
    assert found.lost == {"r1": forgot}


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a\nb\n", ["a", "b"]),
        ("a\nb", ["a", "b"]),  # torn: read() says so apart
        ("a\n\nb\n", ["a", "", "b"]),  # an empty line is a line (read() finds it is not JSON)
        ("a\r\nb\r\n", ["a", "b"]),  # git's output of a file committed with CRLF endings
        (f"{ODD}\n", [ODD]),
    ],
)
def test_lines_break_at_newline_alone(text: str, lines: list[str]) -> None:
    assert lg.lines_of(text) == lines


def test_a_ledger_deleted_under_the_lock_is_not_started_afresh(tmp_path: Path) -> None:
    with lg.locked(tmp_path) as led:
        lg.append(led, "bundle", "r1", "d-r1")
        (tmp_path / lg.LEDGER_FILE).unlink()
        with pytest.raises(FileNotFoundError):
            lg.append(led, "bundle", "r2", "d-r2")
    assert not (tmp_path / lg.LEDGER_FILE).exists()
