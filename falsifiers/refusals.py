"""Refusals read word for word: each call must raise the exception named, with exactly the message.

Falsifiers that hold a refusal's whole message (not only a name in it) to the text they write out
share this loop; what differs is returned as readable lines for the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

Refusal = tuple[Callable[[], object], type[BaseException] | tuple[type[BaseException], ...], str]


def refusals_differing(requests: Iterable[Refusal]) -> list[str]:
    """For each ``(call, exception type(s), message)``: "not refused" when the call returns, the
    message and the expected text when they differ, the exception when the call fails another way
    (a crash where a refusal was due is a difference, not an error of the falsifier); nothing when
    the refusal is word for word."""
    differing = []
    for call, refused, message in requests:
        try:
            call()
        except refused as exc:
            if str(exc) != message:
                differing.append(f"{str(exc)!r} != {message!r}")
            continue
        except Exception as exc:
            differing.append(f"{type(exc).__name__}: {str(exc)!r} instead of the refusal {message!r}")
            continue
        differing.append(f"not refused: {message!r}")
    return differing
