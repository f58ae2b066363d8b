"""A set in checker output is written in one order on every run: its members sorted by their
``repr``, never in the order the set iterates (hash order, which for strings changes from one
process to the next), so the same measurement digests the same in every bundle."""

from __future__ import annotations

from pv.bundle.digest import dumps, jsonable


def test_set_members_sorted_by_repr_not_iteration_order() -> None:
    members = {9, 10}
    assert list(members) == [9, 10]  # hash order: the order an unsorted copy would keep
    assert jsonable(members) == [10, 9]  # by repr: "10" < "9"
    assert jsonable(frozenset(members)) == [10, 9]
    assert dumps({"s": members}) == dumps({"s": frozenset([10, 9])})


def test_set_of_members_that_do_not_compare_is_written() -> None:
    # 1 < "a" raises; their reprs ("1", "'a'", "None") still have one order.
    assert jsonable({1, "a", None}) == ["a", 1, None]
