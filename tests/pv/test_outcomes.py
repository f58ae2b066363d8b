"""Each verdict as the pytest outcome a user sees: which exception, which status word, which text."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pv.outcomes import (
    BrokenMutant,
    CheckerError,
    ContractFailure,
    Falsified,
    VacuousFalsifier,
    raise_outcome,
    skip_is_verdict,
)
from pv.results import FalsifierResult, MutantResult, Verdict
from pv.run_checker import BROKEN_REFERENCE


def _run(
    verdict: Verdict, *, message: str = "", skip_reason: str | None = None, mutant: MutantResult | None = None
) -> SimpleNamespace:
    result = FalsifierResult(
        "c-v1", "FALSIFY-1", verdict, True, message=message, skip_reason=skip_reason, mutant=mutant
    )
    falsifier = SimpleNamespace(expect="x < 1")
    return SimpleNamespace(result=result, label="c-v1::FALSIFY-1", falsifier=falsifier, params={})


def _skipped(run: SimpleNamespace) -> str:
    with pytest.raises(pytest.skip.Exception) as caught:
        raise_outcome(run)  # type: ignore[arg-type]
    return str(caught.value.msg)


def test_passes_and_skips() -> None:
    assert raise_outcome(_run(Verdict.SURVIVED)) is None  # type: ignore[func-returns-value, arg-type]
    assert raise_outcome(_run(Verdict.SURVIVED, mutant=MutantResult("m:f", Verdict.FALSIFIED))) is None  # type: ignore[func-returns-value, arg-type]
    assert _skipped(_run(Verdict.SKIPPED, skip_reason="no CUDA")) == "no CUDA"
    assert _skipped(_run(Verdict.SKIPPED)) == "skipped"
    assert (
        _skipped(_run(Verdict.INCONCLUSIVE, message="inconclusive: x in [0, 2]\nmore")) == "inconclusive: x in [0, 2]"
    )
    assert _skipped(_run(Verdict.INCONCLUSIVE)) == "inconclusive"
    undecided = MutantResult("m:f", Verdict.INCONCLUSIVE, message="first\nnoise left it open")
    assert (
        _skipped(_run(Verdict.SURVIVED, mutant=undecided))
        == "survived, but its mutant run was inconclusive: noise left it open"
    )


@pytest.mark.parametrize(
    ("run", "kind", "cls", "start"),
    [
        (_run(Verdict.FALSIFIED, message="FALSIFIED x"), "falsified", Falsified, "FALSIFIED x"),
        (_run(Verdict.ERROR, message="ERROR boom"), "error", CheckerError, "ERROR boom"),
        (
            _run(Verdict.SURVIVED, mutant=MutantResult("m:f", Verdict.SURVIVED, {"x": 0.5})),
            "vacuous",
            VacuousFalsifier,
            "VACUOUS c-v1::FALSIFY-1",
        ),
        (
            _run(Verdict.SURVIVED, mutant=MutantResult("m:f", Verdict.ERROR, message=f"{BROKEN_REFERENCE} no fault f")),
            "broken",
            BrokenMutant,
            "BROKEN c-v1::FALSIFY-1",
        ),
    ],
)
def test_failures(run: SimpleNamespace, kind: str, cls: type[ContractFailure], start: str) -> None:
    with pytest.raises(ContractFailure) as caught:
        raise_outcome(run)  # type: ignore[arg-type]
    assert type(caught.value) is cls and caught.value.kind == kind
    assert caught.value.text.startswith(start) and str(caught.value) == caught.value.text


def test_which_results_become_skips() -> None:
    assert skip_is_verdict(_run(Verdict.SKIPPED).result) and skip_is_verdict(_run(Verdict.INCONCLUSIVE).result)
    undecided = MutantResult("m:f", Verdict.INCONCLUSIVE)
    assert skip_is_verdict(_run(Verdict.SURVIVED, mutant=undecided).result)
    assert not skip_is_verdict(_run(Verdict.SURVIVED).result)
    assert not skip_is_verdict(_run(Verdict.SURVIVED, mutant=MutantResult("m:f", Verdict.FALSIFIED)).result)
    assert not skip_is_verdict(_run(Verdict.FALSIFIED, mutant=undecided).result)
