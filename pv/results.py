"""Result records: what the pytest plugin hands to the evidence writer and the reporters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    SURVIVED = "survived"  # the prediction held: the only verdict that is evidence for a claim
    FALSIFIED = "falsified"  # the prediction failed
    # the measurement's noise (pv.noise) left the bound undecided: never survived, never demotes
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"  # the checker crashed, hung or returned malformed observations
    SKIPPED = "skipped"  # a `requires` is unmet; carries the reason
    NOT_RUN = "not_run"  # deselected or interrupted


@dataclass
class MutantResult:
    mutant: str  # "module:fault"
    verdict: Verdict  # FALSIFIED means the mutant was killed, as required
    observations: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def killed(self) -> bool:
        return self.verdict is Verdict.FALSIFIED

    @property
    def undecided(self) -> bool:
        """The mutant run's noise left its bound undecided: neither killed nor vacuous."""
        return self.verdict is Verdict.INCONCLUSIVE


@dataclass
class FalsifierResult:
    contract_id: str
    falsify_id: str
    verdict: Verdict
    ship_blocking: bool
    expect: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    observations: dict[str, Any] = field(default_factory=dict)
    # observation -> {"interval": [low, high], "figures": {...}} for those measured with noise (pv.noise)
    noise: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int | None = None
    duration_s: float = 0.0
    message: str = ""  # failure explanation: substituted expression, error text
    skip_reason: str | None = None
    # "hardware" (an unmet GPU requirement: may back ACTIVE_ALGORITHM_LEVEL) or "other"; set where
    # the skip is decided, never guessed from the reason's words
    skip_kind: str | None = None
    mutant: MutantResult | None = None
    artifacts: list[str] = field(default_factory=list)  # absolute paths of files the checker wrote
    hypothesis: dict[str, Any] | None = None  # settings used, and a counterexample if any
    worker: str = "master"
    device: str = "cpu"
    timeout_s: float | None = None  # the deadline it ran under
    isolation: str | None = None  # "thread", "process" or "launch"
    # parametrized falsifiers (pv.cases): a case's result names its case; the falsifier's
    # aggregate result carries its `aggregate:` predicate and every case's result
    case: str | None = None
    aggregate: str | None = None
    cases: list[FalsifierResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        if self.mutant is not None:
            data["mutant"]["verdict"] = self.mutant.verdict.value
        data["cases"] = [c.to_json() for c in self.cases]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FalsifierResult:
        data = dict(data)
        data["verdict"] = Verdict(data["verdict"])
        if data.get("mutant") is not None:
            m = dict(data["mutant"])
            m["verdict"] = Verdict(m["verdict"])
            data["mutant"] = MutantResult(**m)
        data["cases"] = [cls.from_json(c) for c in data.get("cases") or []]
        return cls(**data)


@dataclass
class ContractRun:
    """A contract as it stood when the run started: what its evidence is bound to."""

    contract_id: str
    path: str
    sha256: str  # of the contract file's exact bytes
    version: str
    status: str
    declared: list[str] = field(default_factory=list)  # every FALSIFY id the contract declares
    ship_blocking: list[str] = field(default_factory=list)
    cases: dict[str, list[str]] = field(default_factory=dict)  # parametrized FALSIFY id -> its case ids
    # the code the run measures (pv.evidence.code_binding), taken when the run collected the contract
    code: dict[str, Any] | None = None


@dataclass
class RunRecord:
    """Everything one pytest session measured, gathered from every xdist worker exactly once."""

    run_id: str
    started_at: str  # UTC, ISO 8601
    finished_at: str
    contracts: dict[str, ContractRun] = field(default_factory=dict)
    results: list[FalsifierResult] = field(default_factory=list)
    mutants_enabled: bool = False
    selection: str = ""  # the -m / -k expressions that chose the items
    interrupted: bool = False
    settings: dict[str, Any] = field(default_factory=dict)  # pv.bundle.model.RunSettings fields
    recovered: bool = False  # rebuilt from a dead session's journal


def every_declared(results: Iterable[FalsifierResult], contracts: Mapping[str, ContractRun]) -> list[FalsifierResult]:
    """``results`` in (contract, falsifier) order, then an explicit ``not_run`` for every falsifier
    that ``contracts`` declare and no result covers: every declared id gets a verdict.

    Parametrized falsifiers' case results must be folded first (:func:`pv.cases.verdicts` does both)."""
    rows = sorted(results, key=lambda r: (r.contract_id, r.falsify_id))
    seen = {(r.contract_id, r.falsify_id) for r in rows}
    for cid, run in sorted(contracts.items()):
        for fid in run.declared:
            if (cid, fid) not in seen:
                rows.append(FalsifierResult(cid, fid, Verdict.NOT_RUN, ship_blocking=fid in run.ship_blocking))
    return rows
