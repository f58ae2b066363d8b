"""The comment: verdict first, changed rows only, cut to GitHub's limit at a row with a note."""

from __future__ import annotations

from pathlib import Path

from pv.review.cells import sparkline
from pv.review.compare import ContractReview, Value
from pv.review.markdown import COMMENT_LIMIT, MARKER, render
from tests.pv.review.golden_review import golden_review
from tests.pv.review.helpers import review, row


def test_sparkline_scales_between_the_extremes() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5, 5, 5]) == "▄▄▄" and sparkline([]) == ""


def test_unchanged_rows_are_folded_and_the_callout_comes_first() -> None:
    rows = [row(f"FALSIFY-DEMO-{i:03d}") for i in range(50)]
    bad = Value("loss", 1.0, 3.0, 2.0, 2.0, 2.0, "lower", 1.5, 0.5, moved="worse")
    rows.append(row("FALSIFY-DEMO-999", "regressed", head="falsified", values=[bad]))
    text = render(review(rows, "ACTIVE", "DRAFT"))
    assert text.startswith(MARKER)
    assert text.index("> [!CAUTION]") < text.index("### Regressed (1)")
    assert "> **1 regressed** · 0 improved · 50 unchanged · 0 new · 0 missing · 0 bounds moved" in text
    assert "> Status: `demo-v1` ACTIVE → **DRAFT**" in text
    assert "| loss | 1 | 3 | +2 | +200.0 % | ≤ 2 | 150 % |" in text
    assert "FALSIFY-DEMO-000" not in text  # unchanged: counted, not listed
    assert "reproduce: `pytest contracts/demo-v1.yaml::FALSIFY-DEMO-999`" in text


def test_a_comment_over_the_limit_is_cut_at_a_row_with_a_note_and_the_link() -> None:
    values = [Value("loss", 1.0, 3.0, 2.0, 2.0, 2.0, "lower", 1.5, 0.5, moved="worse")]
    rows = [row(f"FALSIFY-DEMO-{i:04d}", "regressed", head="falsified", values=values) for i in range(3000)]
    whole = render(review(rows))
    assert len(whole) > COMMENT_LIMIT
    cut = render(review(rows), COMMENT_LIMIT, "https://example.invalid/review.html")
    assert len(cut) <= COMMENT_LIMIT
    assert cut.startswith(MARKER) and "> [!CAUTION]" in cut
    last_row = [line for line in cut.splitlines() if line.startswith("| `FALSIFY-DEMO-")][-1]
    assert last_row.endswith("|")  # never a row cut in half
    shown = sum(line.startswith("| `FALSIFY-DEMO-") for line in cut.splitlines())
    left = 3000 - shown + 1  # and the folded table of the evidence read, one row per contract
    assert f"_Cut to GitHub's 65,535-character limit: {left} more table rows are in" in cut
    assert "[the HTML report](https://example.invalid/review.html)" in cut


def test_without_a_base_the_review_says_so() -> None:
    r = review([row("FALSIFY-DEMO-001")])
    r.base_ref = r.base_commit = None
    assert "## pv review: `dddddddddddd` (no base given)" in render(r)


def test_a_claim_failing_at_base_and_head_is_shown_with_its_command() -> None:
    text = render(review([row("FALSIFY-DEMO-001", "unchanged", head="falsified", base="falsified")]))
    assert "### Still failing (1)" in text
    assert "reproduce: `pytest contracts/demo-v1.yaml::FALSIFY-DEMO-001`" in text


def test_missing_rows_are_grouped_by_contract_and_reason() -> None:
    from pv.review.markdown import _missing

    rows = [row(f"F{i}", "missing", base=None, why="changed here and not measured in this run") for i in range(8)]
    rows.append(row("G1", "missing", why="changed here and not measured in this run"))  # has a base
    r = review(rows)
    r.contracts[0].base_missing = "no run measured abc"
    ((kind, lines),) = _missing(r, rows)
    assert kind == "text" and lines[0] == "### Missing (9)"
    assert lines[2] == (
        "- `demo-v1`: 8 falsifiers (`F0`, `F1`, `F2`, `F3`, `F4`, `F5` and 2 more): no base: no run measured abc"
    )
    assert lines[3] == "- `demo-v1`: 1 falsifier (`G1`): changed here and not measured in this run"
    r.contracts[0].base_missing = ""
    ((_, lines),) = _missing(r, rows[:1])
    assert lines[2] == "- `demo-v1`: 1 falsifier (`F0`): changed here and not measured in this run"


def test_missing_rows_are_a_block_of_their_own_lines_with_six_ids_shown_whole() -> None:
    from pv.review.markdown import _missing

    why = "changed here and not measured in this run"
    for n, shown in ((6, "`F0`, `F1`, `F2`, `F3`, `F4`, `F5`"), (7, "`F0`, `F1`, `F2`, `F3`, `F4`, `F5` and 1 more")):
        rows = [row(f"F{i}", "missing", why=why) for i in range(n)]
        assert _missing(review(rows), rows) == [
            ("text", [f"### Missing ({n})", "", f"- `demo-v1`: {n} falsifiers ({shown}): {why}", ""])
        ]


GOLDEN = Path(__file__).parent / "golden"


def test_the_comment_writes_every_section_note_and_cell_as_the_golden_file() -> None:
    text = render(golden_review(), link="https://example.invalid/r.html")
    assert text == (GOLDEN / "review.md").read_text(encoding="utf-8")


def test_a_comment_cut_mid_section_ends_at_a_line_with_the_count_of_rows_left_out() -> None:
    assert render(golden_review(), limit=2600) == (GOLDEN / "review-cut-2600.md").read_text(encoding="utf-8")


def test_a_cut_inside_the_folded_evidence_table_closes_the_fold() -> None:
    r = golden_review()
    r.contracts += [
        ContractReview(f"c{i:03d}-v1", f"contracts/c{i:03d}-v1.yaml", "ACTIVE", "ACTIVE", "verified", f"run-{i}",
                       "ab" * 32, "", [f"head-{i}"])
        for i in range(60)
    ]  # fmt: skip
    whole = render(r)
    cut = render(r, limit=len(whole) - 1000).splitlines()
    note = cut[-1]
    assert cut[-3] == "</details>" and cut[-2] == ""
    kept = sum(line.startswith("| `c") for line in cut)
    assert 0 < kept < 60 and note == (
        f"_Cut to GitHub's {len(whole) - 1000:,}-character limit: {60 - kept} more table rows are in "
        "the HTML report (`pv report --format html`)._"
    )
