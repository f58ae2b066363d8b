"""How deep a contract may nest, and what it costs to know: libyaml composes in C recursion, so text
that could nest past its safe depth is walked event by event first; a long line of prose is no
reason to walk, deep block nesting (by indentation or `- ` on one line) always is."""

from __future__ import annotations

import pytest

from pv.loader import _C_SAFE_DEPTH, MAX_DEPTH, _nesting_bound, load_contract_bytes

PROSE = "metadata: {id: demo-v1, version: 1.0.0, description: demo}\nnotes: >-\n  " + "word " * 2000 + "\n"


def test_a_long_line_of_prose_does_not_count_as_nesting() -> None:
    assert len(max(PROSE.splitlines(), key=len)) > _C_SAFE_DEPTH
    assert _nesting_bound(PROSE) <= _C_SAFE_DEPTH  # composed without the walk


@pytest.mark.parametrize(
    "text",
    [
        "deep:\n" + "".join(" " * n + f"k{n}:\n" for n in range(1, 700)) + " " * 700 + "leaf: 1\n",  # indentation
        "deep: 1\nlist:\n" + "- " * 1200 + "x\n",  # `- ` after `- ` on one line
    ],
    ids=["indented", "inline"],
)
def test_deep_block_nesting_is_refused_before_it_is_composed(text: str) -> None:
    assert _nesting_bound(text) > _C_SAFE_DEPTH
    loaded = load_contract_bytes(text.encode(), "deep.yaml")
    assert loaded.data is None
    assert [d.message for d in loaded.diagnostics] == [f"nesting is deeper than {MAX_DEPTH} levels"]
