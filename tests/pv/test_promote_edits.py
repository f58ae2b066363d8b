"""``pv promote``'s edit of a contract's text, layout by layout: the status set where it is written
(quoted, anchored, tagged), the entry made the newest of a changelog written empty, in flow style or
not at all, line endings kept; and each layout pv does not edit refused with the way to fix it."""

from __future__ import annotations

import pytest

from pv.model import Status
from pv.promote import PromoteError, edit_text

ENTRY = {"version": "1.0.0", "date": "2026-12-02", "change": "status DRAFT -> ACTIVE"}
NEW = '{version: 1.0.0, date: "2026-12-02", change: "status DRAFT -> ACTIVE"}'
HEAD = "metadata:\n  id: a-v1\n  version: 1.0.0\n"


@pytest.mark.parametrize(
    ("text", "edited"),
    [
        (
            HEAD + "  status: DRAFT\n  changelog:\nrest: 1\n",
            HEAD + f"  status: ACTIVE\n  changelog:\n    - {NEW}\nrest: 1\n",
        ),
        (
            HEAD + "  status: DRAFT\n  changelog: [{version: 0.9.0, date: '2026-01-01', change: x}]\n",
            HEAD + f"  status: ACTIVE\n  changelog: [{NEW}, {{version: 0.9.0, date: '2026-01-01', change: x}}]\n",
        ),
        (HEAD + "  status: DRAFT\n  changelog: []\n", HEAD + f"  status: ACTIVE\n  changelog: [{NEW}]\n"),
        (HEAD + "  status: &s !!str DRAFT\n", HEAD + f"  status: &s !!str ACTIVE\n  changelog:\n    - {NEW}\n"),
        (HEAD + "  status: 'DRAFT'\n", HEAD + f"  status: 'ACTIVE'\n  changelog:\n    - {NEW}\n"),
        (
            "metadata:\n    id: a-v1\n    version: 1.0.0\n    changelog:\n",
            f"metadata:\n    id: a-v1\n    version: 1.0.0\n    status: ACTIVE\n    changelog:\n      - {NEW}\n",
        ),
        (
            HEAD.replace("\n", "\r") + "  status: DRAFT\r",
            HEAD.replace("\n", "\r") + f"  status: ACTIVE\r  changelog:\r    - {NEW}\r",
        ),
    ],
    ids=["empty-changelog", "flow-changelog", "empty-flow-changelog", "anchor-and-tag", "quoted", "no-status", "cr"],
)
def test_the_edit_keeps_the_layout_it_finds(text: str, edited: str) -> None:
    assert edit_text(text, Status.ACTIVE, ENTRY) == edited


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (
            "metadata: {id: a-v1, version: 1.0.0}\n",
            "metadata is written in flow style (`metadata: {...}`), which pv does not edit; write it as a block "
            "mapping (one key per line), then run `pv promote` again",
        ),
        (
            "metadata:\n  id: a\n  status: |\n    DRAFT\n",
            "metadata.status is not written as a one-line value, which pv does not edit; write it as "
            "`status: DRAFT` on one line, then run `pv promote` again",
        ),
        (
            "metadata:\n  id: a\n  changelog: none\n",
            "metadata.changelog is neither a list nor empty; make it a list of `{version, date, change}` entries "
            "(or delete it: pv promote writes one), then run `pv promote` again",
        ),
        (
            "- a\n- b\n",
            "the contract has no `metadata:` mapping, so there is no status to set; add one with `id`, `version` "
            "and `status: DRAFT` (`pv validate` says what it needs), then run `pv promote` again",
        ),
    ],
    ids=["flow-metadata", "block-status", "scalar-changelog", "no-mapping"],
)
def test_a_layout_pv_does_not_edit_is_refused_with_the_fix(text: str, refusal: str) -> None:
    with pytest.raises(PromoteError) as refused:
        edit_text(text, Status.ACTIVE, ENTRY)
    assert str(refused.value) == refusal
