"""A checker parameter the harness cannot pass by keyword (positional-only, or ``*args``) is a
binding defect that names the parameter."""

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
