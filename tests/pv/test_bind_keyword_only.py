"""Binding a checker's arguments refuses what it cannot pass, naming it: a parameter the harness
cannot pass by keyword (positional-only, or ``*args``), and every param the checker does not take."""

from __future__ import annotations

from typing import Any

import pytest

from pv.run_checker import BindingError, bind_arguments


def _positional_only(seed: int, /) -> None: ...


def _star_args(*values: Any) -> None: ...


@pytest.mark.parametrize(("checker", "name"), [(_positional_only, "seed"), (_star_args, "values")])
def test_a_parameter_that_cannot_be_a_keyword_is_named(checker: Any, name: str) -> None:
    with pytest.raises(BindingError) as caught:
        bind_arguments(checker, {}, lambda fixture: None)
    assert str(caught.value) == f"checker parameter {name!r} cannot be passed by keyword"


def test_every_param_the_checker_cannot_take_is_named() -> None:
    def checker(a: int) -> None: ...

    with pytest.raises(BindingError) as caught:
        bind_arguments(checker, {"a": 1, "b": 2, "cc": 3}, lambda fixture: None)
    assert str(caught.value) == (
        "param 'b' is not a parameter of the checker; param 'cc' is not a parameter of the checker"
    )
