"""A scripted clock: time moves only when the instrumented callable says a call took its cost."""

from __future__ import annotations


class _ScriptedClock:
    """A clock that moves only when the instrumented callable says a call took its cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
