"""Parametrized falsifiers: one ``FALSIFY-*`` entry over several params, one verdict per case, one aggregate.

A falsifier may declare ``parametrize:`` (a grid ``{name: [values]}`` whose cartesian product is
taken, or a list of explicit ``{name: value}`` cases) and ``seeds: N`` (the ``seed`` param over
``N`` consecutive seeds from ``params.seed``).  Each case is its own pytest item,
``FALSIFY-X-001[<case id>]``, with the case's values laid over ``params``; case ids follow pytest's
own convention (the values joined by ``-``) so that ``-k`` can select one.

Every case is judged by ``expect`` alone.  The falsifier's verdict, the one evidence and
``pv promote`` read, is the aggregate :func:`fold` computes once every result is in (on the xdist
controller or from a dead session's journal): a falsified case refutes the claim, a case in error
leaves it unknown, a case that did not run leaves it unjudged, and only when every case survived is
``aggregate:`` evaluated, a predicate in which each observation and each parametrized param is the
sequence of its per-case values (``mean(loss) + 2 * sem(loss) < 0.7 * ln(vocab)``).  The mutant is
judged the same way: it is killed when the falsifier as a whole is falsified under it, by one case
or by the aggregate.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pv import expr
from pv.results import FalsifierResult, MutantResult, Verdict, every_declared
from pv.run_checker import _nonfinite

if TYPE_CHECKING:
    from pv.model import FalsificationTest
    from pv.results import ContractRun

MAX_CASES = 256  # a grid beyond this is a benchmark sweep, not a falsifier
_NAME = re.compile(r"^[A-Za-z_]\w*$")
# the characters pytest's -k grammar accepts in one identifier, so every case id is selectable
_ID_UNSAFE = re.compile(r"[^\w.+:/-]+")
_CASE_NAME = re.compile(r"^(?P<fid>[^\[]+)\[(?P<case>.+)\]$")


class CaseError(ValueError):
    """A ``parametrize:``/``seeds:`` declaration that yields no well-formed set of cases."""

    def __init__(self, message: str, key: str = "parametrize") -> None:
        super().__init__(message)
        self.key = key  # the falsifier key the problem sits under, for a diagnostic's position


@dataclass(frozen=True)
class Case:
    id: str
    values: dict[str, Any]  # laid over the falsifier's params


def _id_part(name: str, value: Any, index: int) -> str:
    if isinstance(value, bool | int | float | str):
        text = _ID_UNSAFE.sub("_", str(value))
        if text:
            return text
    return f"{name}{index}"  # pytest's own fallback for values it cannot print


def expand(f: FalsificationTest) -> list[Case]:
    """The falsifier's cases in declaration order; ``[]`` when it is not parametrized."""
    return expand_spec(f.parametrize, f.seeds, f.params)


def expand_spec(
    parametrize: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None,
    seeds: int | None,
    params: Mapping[str, Any],
) -> list[Case]:
    """Cases from the raw declaration (``pv validate`` calls it before the model exists).

    Raises :class:`CaseError` for an empty axis, a name that is not a param name, a case id that
    repeats, ``seeds`` together with a ``seed`` axis, or more than :data:`MAX_CASES` cases.
    """
    rows = _rows(parametrize)
    if seeds is not None:
        if any("seed" in row for row in rows):
            raise CaseError("`seeds:` and a `seed` in parametrize both set the seed; keep one", "seeds")
        first = params.get("seed", 0)
        if not isinstance(first, int) or isinstance(first, bool):
            raise CaseError(f"`seeds:` counts up from params.seed, which is {first!r}, not a whole number", "seeds")
        if seeds > MAX_CASES:
            raise CaseError(f"{seeds} seeds; a falsifier may have at most {MAX_CASES} cases", "seeds")
        seeds_rows = [{"seed": first + k} for k in range(seeds)]
        rows = [{**row, **s} for row in (rows or [{}]) for s in seeds_rows]
    if not rows:
        return []
    if len(rows) > MAX_CASES:
        raise CaseError(f"{len(rows)} cases; a falsifier may have at most {MAX_CASES}")
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for n, row in enumerate(rows):
        cid = "-".join(_id_part(name, value, n) for name, value in row.items())
        if cid in seen:
            raise CaseError(f"cases {seen[cid] + 1} and {n + 1} both have the id [{cid}]; every case must differ")
        seen[cid] = n
        cases.append(Case(cid, dict(row)))
    return cases


def _rows(spec: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    if spec is None:
        return []
    if isinstance(spec, Mapping):
        if not spec:
            raise CaseError("parametrize is empty; give each param the values to run it with")
        for name, values in spec.items():
            _check_name(name)
            if not values:
                raise CaseError(f"parametrize: {name} has no values; the falsifier would run zero times")
        total = 1
        for values in spec.values():
            total *= len(values)
            if total > MAX_CASES:
                raise CaseError(f"the grid has more than {MAX_CASES} cases (a falsifier may have at most {MAX_CASES})")
        names = list(spec)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*spec.values())]
    if not spec:
        raise CaseError("parametrize is an empty list; give at least one case")
    rows = []
    for n, row in enumerate(spec):
        if not row:
            raise CaseError(f"case {n + 1} of parametrize sets nothing")
        for name in row:
            _check_name(name)
        rows.append(dict(row))
    return rows


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise CaseError(f"parametrize: {name!r} is not a param name (letters, digits and _)")


def parametrized_names(f: FalsificationTest) -> list[str]:
    """The param names the falsifier's cases set, in the order they are first declared."""
    rows = [f.parametrize] if isinstance(f.parametrize, dict) else list(f.parametrize or [])
    names = list(dict.fromkeys(k for row in rows for k in row))
    return names + (["seed"] if f.seeds is not None and "seed" not in names else [])


def case_params(f: FalsificationTest, case: Case | None) -> dict[str, Any]:
    return {**f.params, **case.values} if case is not None else dict(f.params)


def find_case(f: FalsificationTest, case_id: str) -> Case:
    """The case named ``case_id`` (a torchrun rank's way back to its params)."""
    for case in expand(f):
        if case.id == case_id:
            return case
    raise CaseError(f"{f.id} has no case [{case_id}]")


def item_name(falsify_id: str, case_id: str | None) -> str:
    return f"{falsify_id}[{case_id}]" if case_id is not None else falsify_id


def split_name(name: str) -> tuple[str, str | None]:
    """``FALSIFY-X-001[0-small]`` → ``("FALSIFY-X-001", "0-small")``; a plain id → ``(id, None)``."""
    m = _CASE_NAME.match(name)
    return (m["fid"], m["case"]) if m else (name, None)


# --- the aggregate ---------------------------------------------------------------------------


def verdicts(results: Iterable[FalsifierResult], contracts: Mapping[str, ContractRun]) -> list[FalsifierResult]:
    """One result per declared falsifier: cases folded (:func:`fold`), the unreported ``not_run``."""
    return every_declared(fold(results, contracts), contracts)


def fold(results: Iterable[FalsifierResult], contracts: Mapping[str, ContractRun]) -> list[FalsifierResult]:
    """Results with each parametrized falsifier's case results folded into one aggregate result."""
    out: list[FalsifierResult] = []
    groups: dict[tuple[str, str], list[FalsifierResult]] = defaultdict(list)
    for r in results:
        if r.case is None:
            out.append(r)
        else:
            groups[(r.contract_id, r.falsify_id)].append(r)
    for (cid, fid), rows in groups.items():
        run = contracts.get(cid)
        declared = list(run.cases.get(fid, [])) if run is not None else []
        out.append(aggregate(rows, declared))
    return out


def aggregate(rows: Sequence[FalsifierResult], declared: Sequence[str]) -> FalsifierResult:
    """One falsifier's verdict from its cases' (every declared case; a missing one did not run)."""
    first = rows[0]
    label = f"{first.contract_id}::{first.falsify_id}"
    by_case = {r.case: r for r in rows}
    order = list(declared) + [r.case for r in rows if r.case not in declared and r.case is not None]
    cases = [
        by_case.get(c)
        or FalsifierResult(first.contract_id, first.falsify_id, Verdict.NOT_RUN, first.ship_blocking, case=c)
        for c in order
    ]
    result = FalsifierResult(
        contract_id=first.contract_id,
        falsify_id=first.falsify_id,
        verdict=Verdict.SURVIVED,
        ship_blocking=first.ship_blocking,
        expect=next((r.expect for r in rows if r.expect), None),
        aggregate=next((r.aggregate for r in rows if r.aggregate), None),
        params=_common(r.params for r in rows),
        duration_s=sum(c.duration_s for c in cases),
        worker=",".join(sorted({c.worker for c in rows})),
        device=first.device,
        timeout_s=first.timeout_s,
        isolation=first.isolation,
        cases=cases,
    )
    result.verdict, result.message, result.skip_reason = _verdict(label, cases)
    if result.verdict is Verdict.SKIPPED:  # a hardware skip only when every skipped case's is one
        skipped = [c for c in cases if c.verdict is Verdict.SKIPPED]
        result.skip_kind = "hardware" if all(c.skip_kind == "hardware" for c in skipped) else "other"
    if result.verdict is Verdict.SURVIVED:
        result.observations = series([c.observations for c in cases])
        if result.aggregate:
            case_rows = [(c.case, c.params, c.observations) for c in cases]
            result.verdict, result.message = judge_aggregate(label, result.aggregate, case_rows, result.observations)
    result.mutant = _mutant(label, result, cases)
    return result


def _verdict(label: str, cases: Sequence[FalsifierResult]) -> tuple[Verdict, str, str | None]:
    n = len(cases)

    def ids(v: Verdict) -> list[str]:
        return [f"[{c.case}]" for c in cases if c.verdict is v]

    for verdict, word in ((Verdict.FALSIFIED, "FALSIFIED"), (Verdict.ERROR, "ERROR")):
        hit = [c for c in cases if c.verdict is verdict]
        if hit:
            head = f"{word} {label}: {len(hit)} of {n} cases {verdict.value}: {', '.join(ids(verdict))}"
            return verdict, "\n".join([head, *(c.message for c in hit if c.message)]), None
    missing = ids(Verdict.NOT_RUN)
    if missing:
        return Verdict.NOT_RUN, f"{n - len(missing)} of {n} cases ran; not run: {', '.join(missing)}", None
    unsure = [c for c in cases if c.verdict is Verdict.INCONCLUSIVE]
    if unsure:  # no case falsified, but one undecided case leaves the claim unproven
        head = f"INCONCLUSIVE {label}: {len(unsure)} of {n} cases inconclusive: {', '.join(ids(Verdict.INCONCLUSIVE))}"
        return Verdict.INCONCLUSIVE, "\n".join([head, *(c.message for c in unsure if c.message)]), None
    skipped = [c for c in cases if c.verdict is Verdict.SKIPPED]
    if skipped:
        reasons = sorted({c.skip_reason or "no reason given" for c in skipped})
        return Verdict.SKIPPED, "", f"{len(skipped)} of {n} cases skipped: {'; '.join(reasons)}"
    return Verdict.SURVIVED, "", None


def series(dicts: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Each observation as the list of its per-case values (only names every case observed)."""
    names = [k for k in dicts[0] if all(k in d for d in dicts[1:])] if dicts else []
    return {k: [d[k] for d in dicts] for k in names}


CaseRow = tuple[str | None, Mapping[str, Any], Mapping[str, Any]]  # (case id, params, observations)


def judge_aggregate(
    label: str, text: str, rows: Sequence[CaseRow], observations: Mapping[str, list[Any]]
) -> tuple[Verdict, str]:
    """``aggregate:`` over the cases' ``rows``; ``observations`` is :func:`series` of their observations."""

    env = {**aggregate_env([params for _, params, _ in rows]), **observations}
    try:
        parsed = expr.parse(text)
    except expr.ExprError as exc:
        return Verdict.ERROR, f"ERROR {label}: aggregate {text!r} does not parse: {exc}"
    missing = sorted(n for n in parsed.names - set(env) if n not in expr.CONSTANTS)
    if missing:
        seen = ", ".join(sorted(env)) or "(nothing)"
        return Verdict.ERROR, f"ERROR {label}: aggregate reads {', '.join(missing)}, which not every case has ({seen})"
    bad = sorted(n for n in parsed.names if n in observations and _nonfinite(observations[n]))
    if bad:
        return Verdict.ERROR, f"ERROR {label}: aggregate reads non-finite per-case values of {', '.join(bad)}"
    try:
        held = parsed.holds(env)
    except expr.ExprError as exc:
        return Verdict.ERROR, f"ERROR {label}: aggregate {text!r} could not be evaluated: {exc}"
    if held:
        return Verdict.SURVIVED, ""
    shown = "\n".join(f"    [{case}] {dict(obs)}" for case, _, obs in rows)
    return Verdict.FALSIFIED, (
        f"FALSIFIED {label}: every case held, the aggregate did not\n"
        f"  aggregate:    {text}\n  with values:  {parsed.substitute(env, summarise=True)}\n  per case:\n{shown}"
    )


def aggregate_env(params: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What ``aggregate:`` reads of the cases' params: those every case shares as themselves, the
    parametrized ones as per-case lists, and ``n_cases``."""
    common = _common(params)
    varying = {k for p in params for k in p if k not in common}
    return {**common, **{k: [p.get(k) for p in params] for k in sorted(varying)}, "n_cases": len(params)}


def _common(params: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    rows = list(params)
    if not rows:
        return {}
    return {k: v for k, v in rows[0].items() if all(k in r and r[k] == v for r in rows[1:])}


def _mutant(label: str, result: FalsifierResult, cases: Sequence[FalsifierResult]) -> MutantResult | None:
    """The falsifier's mutant verdict: killed when the falsifier as a whole is falsified under it."""
    runs = [c.mutant for c in cases]
    if result.verdict is not Verdict.SURVIVED or not runs or any(m is None for m in runs):
        return None  # not judged: the mutant is only run after a case survives
    ms = [m for m in runs if m is not None]
    name = ms[0].mutant
    observations = series([m.observations for m in ms])
    killers = [f"[{c.case}]" for c, m in zip(cases, ms, strict=True) if m.killed]
    if killers:
        return MutantResult(name, Verdict.FALSIFIED, observations, f"killed by case {', '.join(killers)}")
    broken = [m for m in ms if m.verdict is not Verdict.SURVIVED]
    if broken:
        return MutantResult(name, broken[0].verdict, observations, broken[0].message)
    if result.aggregate:
        rows = [(c.case, c.params, m.observations) for c, m in zip(cases, ms, strict=True)]
        verdict, message = judge_aggregate(label, result.aggregate, rows, observations)
        if verdict is Verdict.FALSIFIED:
            return MutantResult(name, verdict, observations, "killed by the aggregate")
        if verdict is Verdict.ERROR:
            return MutantResult(name, verdict, observations, message)
    return MutantResult(
        name,
        Verdict.SURVIVED,
        observations,
        f"VACUOUS: every case and the aggregate survived the mutant {name}; this falsifier cannot detect that fault",
    )


def aggregate_failures(results: Iterable[FalsifierResult]) -> list[str]:
    """What only the aggregate found: a failure no case's pytest item reported on its own."""
    out: list[str] = []
    for r in results:
        if not r.cases:
            continue
        case_failed = any(c.verdict in (Verdict.FALSIFIED, Verdict.ERROR) for c in r.cases)
        if r.verdict in (Verdict.FALSIFIED, Verdict.ERROR) and not case_failed:
            out.append(r.message)
        elif r.mutant is not None and not r.mutant.killed and not r.mutant.undecided:
            word = "BROKEN" if r.mutant.message.startswith("broken reference") else "VACUOUS"
            out.append(f"{word} {r.contract_id}::{r.falsify_id}: {r.mutant.message}")
    return out
