"""The comment's edges: where a cut falls to the character and how many table rows it says it left
out, a row with no observation, and the notes a row gets or does not get."""

from __future__ import annotations

import dataclasses

import pytest

from pv.review.compare import Row, Value
from pv.review.markdown import Block, _callout, _cell, _heading, _notes, _table, fit, row_lines
from tests.pv.review.helpers import review, row

W = 99  # every line 99 characters: each takes 100 with its newline


def _line(c: str) -> str:
    return c * W


TEXT, TABLE = "text", "table"
PARTS: list[Block] = [
    (TEXT, [_line("a"), _line("b")]),
    (TABLE, [_line("h"), _line("-"), _line("1"), _line("2"), _line("3")]),  # a head of two lines, 3 rows
    (TEXT, [_line("c")]),
    (TABLE, [_line("x"), _line("y"), _line("z")]),  # 1 row
    (TABLE, [_line("H"), _line("=")]),  # a head alone: no rows
]


def _kept_and_note(limit: int) -> tuple[str, str]:
    lines = fit(PARTS, limit).splitlines()
    assert lines[-2] == ""
    return "".join(line[0] for line in lines[:-2]), lines[-1]


def _note(left_out: int, limit: int) -> str:
    where = " the HTML report (`pv report --format html`)"
    return f"_Cut to GitHub's {limit:,}-character limit: {left_out} more table rows are in{where}._"


def test_a_comment_of_exactly_the_limit_is_left_whole() -> None:
    whole = fit(PARTS, 10_000)
    assert len(whole) == 1300 and fit(PARTS, 1300) == whole
    assert fit(PARTS, 1299) != whole


@pytest.mark.parametrize(
    ("limit", "kept", "left_out"),
    [
        (900, "abh-1", 3),  # 400 for the note: 500 of room, the fifth line ends exactly at it
        (899, "abh-", 4),  # one short: the table's first row goes too
        (1100, "abh-123", 1),  # the cut in the text after the table: the next table's row is counted
    ],
)
def test_a_cut_falls_at_the_last_whole_line_and_counts_the_rows_left_out(limit: int, kept: str, left_out: int) -> None:
    assert _kept_and_note(limit) == (kept, _note(left_out, limit))


def test_an_open_details_is_closed_once() -> None:
    parts: list[Block] = [(TEXT, ["<details><summary>s</summary>", _line("a")]), (TEXT, ["</details>", _line("b")])]
    parts += [(TEXT, [_line("c")] * 6)]
    closed = fit(parts, 700).splitlines()
    assert closed.count("</details>") == 1 and closed[:4] == [
        "<details><summary>s</summary>",
        _line("a"),
        "</details>",
        _line("b"),
    ]
    open_ = fit(parts[:1] + parts[2:], 700).splitlines()
    assert open_.count("</details>") == 1 and open_.index("</details>") == len(open_) - 3


def test_a_row_without_observations_has_one_line_of_dashes() -> None:
    assert row_lines(row("FALSIFY-DEMO-001", values=[], history=[])) == [
        "| `FALSIFY-DEMO-001`<br>ship-blocking · `demo-v1` |  | — | — | — | — |  | — |  |  | ✅ survived | caught |"
    ]
    lone = row("FALSIFY-DEMO-002", values=[Value("loss", None, 1.0, None, None, 2.0, "lower")], history=[])
    assert row_lines(lone)[0].split(" | ")[1:6] == ["loss", "—", "1", "—", "—"]


def test_the_notes_a_row_gets() -> None:
    moved = row("FALSIFY-DEMO-001", bound_moved=True, base_expect=None, head_expect="loss <= 3")
    assert _notes(moved) == ["bound moved: `` → `loss <= 3`"]
    assert _notes(row("FALSIFY-DEMO-001", bound_moved=True, base_expect="loss <= 2", head_expect=None)) == [
        "bound moved: `loss <= 2` → ``"
    ]
    survived = row("FALSIFY-DEMO-001", message="a survivor's message", expect_now="loss(=1) <= 2")
    assert _notes(survived) == []
    long = "x" * 400
    failed = row("FALSIFY-DEMO-001", head="falsified", message=long, reproduce="pytest c.yaml::F")
    assert _notes(failed) == [f"falsified: {'x' * 300}", "reproduce: `pytest c.yaml::F`"]
    errored = row("FALSIFY-DEMO-001", head="error", message="boom", reproduce="pytest c.yaml::F")
    assert _notes(errored) == ["error: boom", "reproduce: `pytest c.yaml::F`"]


def test_the_notes_under_a_table_list_each_row_s_why_then_its_notes() -> None:
    rows = [
        row("FALSIFY-DEMO-001", "regressed", why="survived → falsified", head="falsified", reproduce="pytest a"),
        row("FALSIFY-DEMO-002", "regressed", why="", head="error", message="boom", reproduce="pytest b"),
    ]
    (_, heading), (_, table), (_, notes) = _table("Regressed", rows)
    assert heading == ["### Regressed (2)", ""] and len(table) == 4
    assert notes == [
        "",
        "- `FALSIFY-DEMO-001`: survived → falsified",
        "  - reproduce: `pytest a`",
        "- error: boom",
        "  - reproduce: `pytest b`",
        "",
    ]


def _callout_of(rows: list[Row], before: str = "ACTIVE", after: str = "ACTIVE") -> list[str]:
    return _callout(review(rows, before, after))


def test_the_callout_s_kind_follows_what_a_reviewer_must_act_on() -> None:
    quiet = _callout_of([row("FALSIFY-DEMO-001")])
    assert quiet[0] == "> [!NOTE]" and quiet[2] == "> No contract changes status."
    assert _callout_of([row("FALSIFY-DEMO-001", "missing", head_verdict=None)])[0] == "> [!WARNING]"
    dropped = _callout_of([row("FALSIFY-DEMO-001")], "ACTIVE", "DRAFT")
    assert dropped[0] == "> [!CAUTION]" and dropped[2] == "> Status: `demo-v1` ACTIVE → **DRAFT** (why)"
    promoted = _callout_of([row("FALSIFY-DEMO-001")], "DRAFT", "ACTIVE")
    assert promoted[0] == "> [!NOTE]" and promoted[2] == "> Status: `demo-v1` DRAFT → **ACTIVE** (why)"
    missing_and_dropped = _callout_of([row("FALSIFY-DEMO-001", "missing", head_verdict=None)], "ACTIVE", "DRAFT")
    assert missing_and_dropped[0] == "> [!CAUTION]"


def test_the_heading_names_the_working_tree_and_an_unknown_base_commit_as_such() -> None:
    r = dataclasses.replace(review([row("FALSIFY-DEMO-001")]), head_commit=None, base_commit=None)
    assert _heading(r) == "## pv review: `main` (``) → the working tree"


def test_a_cell_keeps_to_one_line_and_its_pipes_escaped() -> None:
    assert _cell("a | b\nc") == "a \\| b c"
