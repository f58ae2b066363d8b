"""The shared word-for-word refusal loop reports every way a call can miss its refusal."""

from __future__ import annotations

from falsifiers.shared.refusals import refusals_differing


def _raise(exc: Exception) -> None:
    raise exc


def test_each_way_to_miss_a_refusal_is_a_difference() -> None:
    differing = refusals_differing(
        [
            (lambda: _raise(ValueError("x must be positive")), ValueError, "x must be positive"),  # as written
            (lambda: _raise(ValueError("x must be > 0")), ValueError, "x must be positive"),  # other words
            (lambda: None, ValueError, "y is missing"),  # no refusal
            (lambda: _raise(FileNotFoundError("gone")), ValueError, "z is refused"),  # a crash instead
        ]
    )
    assert differing == [
        "'x must be > 0' != 'x must be positive'",
        "not refused: 'y is missing'",
        "FileNotFoundError: 'gone' instead of the refusal 'z is refused'",
    ]
