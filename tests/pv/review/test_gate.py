"""The merge gate and the annotations, to the field: what GitHub is told decides whether a pull
request can merge and where a reviewer's eye lands."""

from __future__ import annotations

import pytest

from pv.review.compare import Value
from pv.review.github import (
    WORKFLOW_ANNOTATION_CAP,
    annotation,
    capped_bytes,
    conclusion,
    find_annotations,
    workflow_commands,
)
from tests.pv.review.helpers import review, row


@pytest.mark.parametrize(
    ("rows", "before", "after", "expected"),
    [
        ([row("F1")], "ACTIVE", "ACTIVE", "success"),
        ([row("F1", "improved"), row("F2", "new")], "ACTIVE", "ACTIVE", "success"),
        ([row("F1", "regressed")], "ACTIVE", "ACTIVE", "failure"),
        ([row("F1", head="falsified")], "DRAFT", "DRAFT", "failure"),  # failing at the head, even unchanged
        ([row("F1", head="error")], "DRAFT", "DRAFT", "failure"),
        ([row("F1", "regressed", ship_blocking=False)], "ACTIVE", "ACTIVE", "neutral"),
        ([row("F1", head="falsified", ship_blocking=False)], "ACTIVE", "ACTIVE", "success"),
        ([row("F1", "missing")], "ACTIVE", "ACTIVE", "neutral"),
        ([row("F1", "missing", ship_blocking=False)], "ACTIVE", "ACTIVE", "neutral"),
        ([row("F1")], "ACTIVE", "DRAFT", "failure"),  # a status that drops
        ([row("F1")], "ACTIVE", "ACTIVE_ALGORITHM_LEVEL", "failure"),
        ([row("F1")], "ACTIVE_ALGORITHM_LEVEL", "DRAFT", "failure"),
        ([row("F1")], "DRAFT", "ACTIVE", "success"),
        ([row("F1")], "RETIRED", "DRAFT", "success"),  # not on the ladder
        ([row("F1")], "DRAFT", "RETIRED", "success"),
    ],
)
def test_conclusion(rows: list, before: str, after: str, expected: str) -> None:
    assert conclusion(review(rows, before, after)) == expected


def test_an_annotation_of_a_failing_ship_blocking_claim() -> None:
    values = [Value(f"v{i}", float(i), float(i + 1)) for i in range(4)] + [Value("same", 1.0, 1.0)]
    r = row("F1", "regressed", head="falsified", why="survived → falsified", message="loss(=3) <= 2", values=values)
    assert annotation(r) == {
        "path": "contracts/demo-v1.yaml",
        "start_line": 7,
        "end_line": 7,
        "annotation_level": "failure",
        "title": "F1 regressed: survived → falsified",
        "message": "survived → falsified (v0 0.0 → 1.0, v1 1.0 → 2.0, v2 2.0 → 3.0)\nloss(=3) <= 2\n"
        "Reproduce: pytest contracts/demo-v1.yaml::F1",
    }


def test_annotations_of_advisory_missing_and_unplaced_claims() -> None:
    advisory = annotation(row("F2", "regressed", head="error", ship_blocking=False, why="w", values=[]))
    assert advisory["annotation_level"] == "warning" and advisory["message"].startswith("w\nReproduce: ")
    unplaced_row = row("F3", "regressed", base=None, line=None, why="w", values=[])
    unplaced_row.head_verdict = None
    unplaced = annotation(unplaced_row)
    assert (unplaced["start_line"], unplaced["end_line"], unplaced["annotation_level"]) == (1, 1, "warning")
    assert unplaced["title"] == "F3 regressed: — → not run" and unplaced["message"] == "w"
    long = annotation(row("F4", "regressed", why="x" * 70_000, values=[]))
    assert len(long["message"]) == 64_000


def test_which_claims_are_annotated_and_in_what_order() -> None:
    rows = [
        row("F5", "regressed", ship_blocking=False),
        row("F4", head="falsified", ship_blocking=False),
        row("F3", "improved"),
        row("F2", head="error"),
        row("F1", "regressed"),
        row("F0", "missing"),
    ]
    assert [a["title"].split()[0] for a in find_annotations(review(rows))] == ["F2", "F1", "F4", "F5"]


def test_workflow_commands_escape_and_cap() -> None:
    found = [
        {
            "path": "contracts/a,b:c.yaml",
            "start_line": 3,
            "title": "F1 regressed: a, b",
            "message": "50% worse\r\nnext: line",
            "annotation_level": "failure",
        },
        {"path": "p", "start_line": 1, "title": "t", "message": "m", "annotation_level": "warning"},
    ]
    assert workflow_commands(found) == [
        "::error file=contracts/a%2Cb%3Ac.yaml,line=3,title=F1 regressed%3A a%2C b::50%25 worse%0D%0Anext: line",
        "::warning file=p,line=1,title=t::m",
    ]
    assert len(workflow_commands(found * 20)) == WORKFLOW_ANNOTATION_CAP


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("ACTIVE", "RETIRED", "failure"),  # leaving the ladder from a rung on it drops the claim
        ("ACTIVE_ALGORITHM_LEVEL", "RETIRED", "failure"),
        ("ACTIVE", "ACTIVE_ALGORITHM_LEVEL", "failure"),
        ("ACTIVE_ALGORITHM_LEVEL", "ACTIVE", "success"),
    ],
)
def test_a_status_leaving_the_ladder_or_stepping_down_it_fails_the_gate(before: str, after: str, expected: str) -> None:
    assert conclusion(review([row("F1")], before, after)) == expected


def test_ship_blocking_failures_are_annotated_first_then_by_id() -> None:
    rows = [
        row("F1", "regressed", head="survived"),  # regressed in a value, not failing
        row("F2", "regressed", head="falsified", ship_blocking=False),
        row("F3", "regressed", head="falsified"),
        row("F4", "unchanged", head="error"),
    ]
    assert [a["title"].split(" ")[0] for a in find_annotations(review(rows))] == ["F3", "F4", "F1", "F2"]


def test_a_text_is_capped_at_a_line_so_that_it_and_its_note_fit() -> None:
    text = "a\n" * 6  # 12 bytes
    assert capped_bytes(text, 12, "N") == text  # exactly at the limit: whole
    assert capped_bytes(text, 11, "N") == "a\n" * 4 + "N\n"  # room 11 - 1 - 1 = 9 bytes: 4 lines
    assert capped_bytes("é\n" * 4, 7, "N") == "é\n" + "N\n"  # bytes, not characters: é is 2
