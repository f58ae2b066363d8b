"""How a value is written into a failure message or a report cell: a list is shortened only past
the limit, to its length and its first characters; a value the evaluator cannot take is its type."""

from __future__ import annotations

from pv.expr import format_value


def test_a_list_at_the_limit_is_written_whole() -> None:
    at_limit = ("a" * 55,)  # its repr, ('aaa…',), is 60 characters
    assert len(repr(at_limit)) == 60
    assert format_value(list(at_limit)) == repr(at_limit)


def test_a_list_past_the_limit_is_its_length_and_its_first_characters() -> None:
    past = ("a" * 57, "b")
    assert format_value(list(past)) == f"[2 items: {repr(past)[:40]}…]"
    assert format_value(list(past), limit=100) == repr(past)


def test_a_value_the_evaluator_cannot_take_is_written_as_its_type() -> None:
    assert format_value(object()) == "<object>"
    assert format_value({"a": 1}) == "<dict>"
