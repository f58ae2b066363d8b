"""The status gate's message names every reason the evidence gives for a lower status, each once."""

from __future__ import annotations

from pv.evidence.status import Assessment, status_mismatch
from pv.model import Status


def test_every_reason_is_named_in_the_mismatch() -> None:
    found = Assessment(Status.DRAFT, None, reasons=["FALSIFY-A: not run", "FALSIFY-B: falsified"])
    assert status_mismatch(Status.ACTIVE, found) == (
        "status ACTIVE but the verified evidence backs only DRAFT (FALSIFY-A: not run; FALSIFY-B: falsified)"
    )


def test_a_lower_status_without_a_recorded_reason_says_so() -> None:
    found = Assessment(Status.DRAFT, None)
    assert status_mismatch(Status.ACTIVE, found) == (
        "status ACTIVE but the verified evidence backs only DRAFT (no reason recorded)"
    )
