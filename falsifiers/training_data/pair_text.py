"""Instruction pairs as text: the response is the body as its source spells it, and the length
bound is met exactly.

FALSIFY-DATA-005 compares each response with the function's statements by Python's ast, which
cannot see what parsing forgets: a line inside brackets written left of the body's margin, the
whitespace a line ends with, a trailing newline.  Here a module written in the falsifier holds such
bodies, and each response must be the text written out here.  ``extract_instruction_pairs`` keeps a
pair whose docstring is exactly its length bound (2000 characters by default) and drops one a
character longer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.data import extract_instruction_pairs
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BOUND = 2000
SOURCE = '''def dedented(items):
    """Sum items."""
    total = sum(
  items)
    return total


def trailing(x):
    """Double x."""
    y = x * 2   
    return y   # done

   

def at_bound():
    """{at}"""
    return 1


def past_bound():
    """{past}"""
    return 2


def narrow_bound():
    """{narrow}"""
    return 3
'''  # noqa: W291, W293 (the whitespace at the ends of lines is what is read)
EXPECTED = [
    ("Sum items.", "total = sum(\nitems)\nreturn total"),
    ("Double x.", "y = x * 2   \nreturn y   # done"),
    ("a" * BOUND, "return 1"),
    ("c" * 10, "return 3"),
]


@checker(observes=["pairs", "pairs_differing", "narrow_pairs_differing"], ids=["FALSIFY-DATA-006"])
def pairs_as_source_text(tmp_path: Path) -> dict[str, Any]:
    """The module above through extract_instruction_pairs, with the default bound and with a bound of 10."""

    path = fresh_dir(tmp_path, "pair-text-") / "edges.py"
    path.write_text(SOURCE.format(at="a" * BOUND, past="b" * (BOUND + 1), narrow="c" * 10), encoding="utf-8")
    got = [(p.prompt, p.response) for p in extract_instruction_pairs([str(path)])]
    narrow = [p.prompt for p in extract_instruction_pairs([path], max_chars=10)]
    return {
        "pairs": len(got),
        "pairs_differing": sum(g != w for g, w in zip(got, EXPECTED, strict=False)) + abs(len(got) - len(EXPECTED)),
        "narrow_pairs_differing": narrow != ["c" * 10],  # the others' responses are longer than 10
    }
