"""A falsifier's result as a pytest outcome: the one place verdicts become passes, skips and failures.

``survived`` passes; ``skipped`` is a pytest skip reported at the falsifier's YAML line, and so
is ``inconclusive`` (the noise left the bound undecided: no failure that the neighbours' load
caused, and no pass either; pv's summary line counts it apart);
``falsified``, ``error``, a vacuous falsifier (its mutant survived) and a broken mutant reference
fail with a preformatted report (:class:`ContractFailure`, no Python traceback) whose ``kind`` the
plugin's report hooks show as the item's status word.
"""

from __future__ import annotations

from typing import NoReturn

import pytest

from pv.results import FalsifierResult, Verdict
from pv.runner import FalsifierRun, mutant_failure


class ContractFailure(Exception):
    """Raised by an item to fail with a preformatted report (no Python traceback)."""

    kind = "failure"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Falsified(ContractFailure):
    kind = "falsified"


class CheckerError(ContractFailure):
    kind = "error"


class VacuousFalsifier(ContractFailure):
    kind = "vacuous"


class BrokenMutant(ContractFailure):
    """The falsifier's ``mutant:`` names no fault that exists: a broken reference, not a vacuous check."""

    kind = "broken"


class InvalidContract(ContractFailure):
    kind = "invalid"


def raise_outcome(run: FalsifierRun) -> None:
    """Return for a pass; raise the pytest outcome of anything else."""
    result = run.result
    if result.verdict is Verdict.SKIPPED:
        # Reported at the falsifier's YAML line (as skip markers are), not at this line.
        skip(result.skip_reason or "skipped")
    if result.verdict is Verdict.INCONCLUSIVE:
        skip(result.message.splitlines()[0] if result.message else "inconclusive")
    if result.verdict is Verdict.ERROR:
        raise CheckerError(result.message)
    if result.verdict is Verdict.FALSIFIED:
        raise Falsified(result.message)
    failure = mutant_failure(run)
    if failure is not None:
        kind, text = failure
        if kind == "inconclusive":
            skip(text)
        raise (BrokenMutant if kind == "broken" else VacuousFalsifier)(text)


def skip_is_verdict(result: FalsifierResult) -> bool:
    """Whether :func:`raise_outcome` turns ``result`` into a pytest skip: a skip, an inconclusive
    run, or a survived run whose mutant run was inconclusive."""
    if result.verdict in (Verdict.SKIPPED, Verdict.INCONCLUSIVE):
        return True
    m = result.mutant
    return result.verdict is Verdict.SURVIVED and m is not None and m.undecided


def skip(reason: str) -> NoReturn:
    raise pytest.skip.Exception(reason, _use_item_location=True)
