"""More layouts ``pv promote``'s text edit meets: an empty status value (bare, anchored or tagged)
gets its new value set apart from the key, an old value of any spelling is replaced whole, a stray
CR in an LF file does not change the file's line breaks, a metadata of one key or without a
version takes the status after its last key, an empty changelog under an explicit key (``?
changelog``) gets its entry below the colon, and a changelog written as an empty string is not an
empty changelog."""

from __future__ import annotations

import pytest
import yaml

from pv.model import Status
from pv.promote import PromoteError, edit_text

ENTRY = {"version": "1.0.0", "date": "2026-12-02", "change": "status DRAFT -> ACTIVE"}
NEW = '{version: 1.0.0, date: "2026-12-02", change: "status DRAFT -> ACTIVE"}'
HEAD = "metadata:\n  id: a-v1\n  version: 1.0.0\n"
LOG = f"  changelog:\n    - {NEW}\n"


@pytest.mark.parametrize(
    ("status", "edited"),
    [
        ("status:", "status: ACTIVE"),
        ("status: &s", "status: &s ACTIVE"),
        ("status: &s  ", "status: &s ACTIVE  "),
        ("status: !!str", "status: !!str ACTIVE"),
        ("status: &Xs XOLD", "status: &Xs ACTIVE"),  # an anchor and an old value that start with X
        ("status: XOLD", "status: ACTIVE"),
        ("status: &s  !!str  DRAFT", "status: &s  !!str  ACTIVE"),
        ("status: !", "status: ! ACTIVE"),  # the non-specific tag, one character after the space
        ("status: &X", "status: &X ACTIVE"),
    ],
    ids=[
        "empty",
        "anchor-only",
        "anchor-and-spaces",
        "tag-only",
        "x-anchor-x-value",
        "x-value",
        "anchor-tag-gaps",
        "bare-tag",
        "x-anchor-only",
    ],
)
def test_the_status_value_is_replaced_whole_and_set_apart_from_its_key(status: str, edited: str) -> None:
    out = edit_text(f"{HEAD}  {status}\n  owner: me\n", Status.ACTIVE, ENTRY)
    assert out == f"{HEAD}  {edited}\n  owner: me\n{LOG}"
    assert yaml.safe_load(out)["metadata"]["status"] == "ACTIVE"


def test_a_stray_cr_in_an_lf_file_keeps_the_inserted_lines_lf() -> None:
    text = HEAD + "  status: DRAFT\n\rrest: 1\n"  # "\n\r": a blank line to YAML, and no CRLF anywhere
    assert edit_text(text, Status.ACTIVE, ENTRY) == HEAD + "  status: ACTIVE\n" + LOG + "\rrest: 1\n"


@pytest.mark.parametrize(
    ("text", "edited"),
    [
        ("metadata:\n  id: a-v1\n", f"metadata:\n  id: a-v1\n  status: ACTIVE\n{LOG}"),
        (
            "metadata:\n  id: a-v1\n  title: t\n  owner: o\nrest: 1\n",
            f"metadata:\n  id: a-v1\n  title: t\n  owner: o\n  status: ACTIVE\n{LOG}rest: 1\n",
        ),
    ],
    ids=["one-key", "no-version"],
)
def test_without_a_version_the_status_goes_after_the_last_key(text: str, edited: str) -> None:
    assert edit_text(text, Status.ACTIVE, ENTRY) == edited


def test_a_changelog_written_as_an_empty_string_is_refused() -> None:
    with pytest.raises(PromoteError, match=r"^metadata\.changelog is neither a list nor empty; "):
        edit_text(HEAD + '  status: DRAFT\n  changelog: ""\n', Status.ACTIVE, ENTRY)


def test_an_empty_changelog_under_an_explicit_key_gets_its_entry_below_the_colon() -> None:
    text = HEAD + "  status: DRAFT\n  ? changelog\n  :\nrest: 1\n"
    out = edit_text(text, Status.ACTIVE, ENTRY)
    assert out == HEAD + f"  status: ACTIVE\n  ? changelog\n  :\n    - {NEW}\nrest: 1\n"
    assert yaml.safe_load(out)["metadata"]["changelog"] == [ENTRY]
