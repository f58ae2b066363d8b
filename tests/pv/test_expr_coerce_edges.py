"""What an observation becomes before an expression reads it: a sequence of up to MAX_SEQUENCE
items is a tuple and a longer one is refused with its length; a number of a type outside the
builtins (an Integral, a Fraction) becomes an int or a float; and None or an unknown type is
refused in words that name it."""

from __future__ import annotations

import numbers
from fractions import Fraction

import pytest

from pv.expr import MAX_SEQUENCE, EvalError, coerce


class _Count:
    """An integer type of a library's own, registered as an Integral and with no ``tolist()``."""

    def __int__(self) -> int:
        return 7


numbers.Integral.register(_Count)


def test_a_sequence_of_the_longest_length_allowed_is_a_tuple() -> None:
    assert coerce([1] * MAX_SEQUENCE) == (1,) * MAX_SEQUENCE


def test_a_longer_sequence_is_refused_with_its_length() -> None:
    with pytest.raises(EvalError) as info:
        coerce([1] * (MAX_SEQUENCE + 1))
    assert info.value.message == f"sequence of {MAX_SEQUENCE + 1} items is longer than {MAX_SEQUENCE}"


def test_an_integral_of_another_type_is_an_int() -> None:
    value = coerce(_Count())
    assert value == 7 and type(value) is int


def test_a_fraction_is_a_float() -> None:
    value = coerce(Fraction(1, 4))
    assert value == 0.25 and type(value) is float


def test_none_is_refused_as_none() -> None:
    with pytest.raises(EvalError) as info:
        coerce(None)
    assert info.value.message == "value is None"


def test_an_unknown_type_is_refused_by_its_name() -> None:
    with pytest.raises(EvalError) as info:
        coerce({"a": 1})
    assert info.value.message == "values of type dict cannot be used in an expression"
