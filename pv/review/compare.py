"""Base against head for every falsifier: the rows a review is made of.

**Head** is the newest current verdict per falsifier in the evidence folder: bundles that verify
intact and are bound to the contract and the code of the working tree (a pull request's own
unsigned run among them; it is reported, it backs no status).  **Base** is the newest verdict per
falsifier among the runs that measured the base commit's code (:func:`pv.review.runs.runs_of_commit`);
**history** the runs of commits on the base's line, oldest first.

Each row's class, first match wins:

- ``new``: the base has no such falsifier (a new claim or contract);
- ``missing``: no base run measured it, or the change touches it and the head did not measure it;
- ``regressed`` / ``improved``: the verdict got worse / better (survived → falsified or error, a
  mutant no longer caught), else a value with a direction moved beyond the noise by more than the
  threshold (intervals that overlap are "within noise"; a value without an interval moved by more
  than ``threshold`` of its base);
- ``unchanged``: everything else, a falsifier the change does not touch and the head did not run included.

A moved bound is said on its row whatever its class.
"""

from __future__ import annotations

import math
import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pv.bundle.signing import KeyRing
from pv.evidence.status import bundle_time, pick_sources
from pv.evidence.verify import verify_path
from pv.expr import ExprError, format_value, parse
from pv.git import GitError, run_git
from pv.project import Project
from pv.review.bounds import Limit, limit_of
from pv.review.changed import Changed, changed_falsifiers
from pv.review.runs import Run, Tree, read_runs, runs_of_commit
from pv.review.sections import ReportError, Section, build

Kind = Literal["regressed", "improved", "unchanged", "new", "missing"]
KINDS: tuple[Kind, ...] = ("regressed", "improved", "unchanged", "new", "missing")
DEFAULT_THRESHOLD = 0.05  # a value with no interval must move by more than 5 % of its base to count
DEFAULT_HISTORY = 20
_RAN = ("survived", "falsified", "error")
_RANK = {"survived": 2, "inconclusive": 1, "skipped": 1, "not_run": 1, "falsified": 0, "error": 0}
SIGNIFICANT = 4
JSON_SCHEMA = "pv-review/1"


@dataclass
class Point:
    """One run in a falsifier's history."""

    run_id: str
    commit: str | None
    verdict: str
    values: dict[str, float]


@dataclass
class Value:
    """One observation the expect reads, base against head."""

    name: str
    base: float | str | None
    head: float | str | None
    delta: float | None = None
    delta_pct: float | None = None
    limit: float | None = None
    better: str | None = None  # "higher", "lower", or None when the expect gives no direction
    used: float | None = None  # the head's share of the limit (1.0: at it)
    base_used: float | None = None
    base_interval: list[float] | None = None
    head_interval: list[float] | None = None
    within_noise: bool | None = None  # None: neither side has an interval
    moved: str = ""  # "better", "worse" or "" (within noise or threshold, or no direction)


@dataclass
class Row:
    contract_id: str
    contract_path: str
    falsifier_id: str
    ship_blocking: bool
    line: int | None  # the line of `id: FALSIFY-…` in the contract file
    kind: Kind
    why: str
    base_verdict: str | None
    head_verdict: str | None
    base_mutant: bool | None  # was its mutant caught (None: not run or none declared)
    head_mutant: bool | None
    base_expect: str | None
    head_expect: str | None
    bound_moved: bool
    changed: list[str]  # why the change touches it (empty: it does not)
    values: list[Value] = field(default_factory=list)
    history: list[Point] = field(default_factory=list)
    base_run: str | None = None
    head_run: str | None = None
    message: str = ""
    reproduce: str = ""
    mutant: str | None = None  # the mutant the contract names, module:fault
    mutant_line: int | None = None  # the line of its `mutant:` in the contract file
    expect_now: str = ""  # the head's expect with its values written in: `allowed(=79) <= 30`
    note: str = ""  # a skip's reason, what left it inconclusive, the mutant's fate
    cases: list[str] = field(default_factory=list)  # a parametrized falsifier's cases: `[id] verdict: bound`


@dataclass
class ContractReview:
    id: str
    path: str
    before: str
    after: str
    reason: str
    base_run: str | None  # the newest run that measured the base code
    base_digest: str | None
    base_missing: str  # why there is no base ("" when there is)
    head_runs: list[str]


@dataclass
class Review:
    base_ref: str | None
    base_commit: str | None
    head_commit: str | None
    contracts: list[ContractReview]
    rows: list[Row]
    threshold: float
    trust: str

    def counts(self) -> Counter[str]:
        return Counter(r.kind for r in self.rows)

    def status_changes(self) -> list[ContractReview]:
        return [c for c in self.contracts if c.before != c.after]

    def bounds_moved(self) -> list[Row]:
        return [r for r in self.rows if r.bound_moved]

    def to_json(self) -> dict[str, Any]:
        """What the Markdown and the HTML show, as data (``pv report --format json``)."""
        return {
            "schema": JSON_SCHEMA,
            "base": {"ref": self.base_ref, "commit": self.base_commit},
            "head": {"commit": self.head_commit},
            "threshold": self.threshold,
            "trust": self.trust,
            "counts": {k: self.counts()[k] for k in KINDS} | {"bounds_moved": len(self.bounds_moved())},
            "status_changes": [{"contract": c.id, "before": c.before, "after": c.after} for c in self.status_changes()],
            "contracts": [asdict(c) for c in self.contracts],
            "rows": [asdict(r) for r in self.rows],
        }


def _numeric(value: Any) -> float | None:
    if isinstance(value, dict) and value.get("value") is not None:  # a Measured written as JSON
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _shown(value: Any) -> float | str | None:
    number = _numeric(value)
    if number is not None:
        return number
    return None if value is None else format_value(value, digits=SIGNIFICANT)


def _interval(entry: Mapping[str, Any] | None, name: str) -> list[float] | None:
    noise = (entry or {}).get("noise") or {}
    found = noise.get(name) if isinstance(noise, dict) else None
    interval = found.get("interval") if isinstance(found, dict) else None
    if isinstance(interval, list) and len(interval) == 2 and all(_numeric(v) is not None for v in interval):
        return [float(interval[0]), float(interval[1])]
    return None


def _names(entry: Mapping[str, Any]) -> list[str]:
    """The observations the expect reads (else every one that is a number), in the expect's order."""
    observations = entry.get("observations") or {}
    expect = entry.get("expect")
    if expect:
        try:
            read = parse(expect).names_in_order()
        except ExprError:
            read = []
        named = [n for n in read if n in observations]  # by position: `a` is not found inside `rate`
        if named:
            return named
    return [n for n, v in observations.items() if _numeric(v) is not None]


def _mutant(entry: Mapping[str, Any] | None) -> bool | None:
    mutant = (entry or {}).get("mutant") or {}
    killed = mutant.get("killed") if isinstance(mutant, dict) else None
    return killed if isinstance(killed, bool) else None


def compare_value(name: str, base: Mapping[str, Any] | None, head: Mapping[str, Any] | None, threshold: float) -> Value:
    head_entry, base_entry = head or {}, base or {}
    b_raw = (base_entry.get("observations") or {}).get(name)
    h_raw = (head_entry.get("observations") or {}).get(name)
    value = Value(name, _shown(b_raw), _shown(h_raw))
    value.base_interval, value.head_interval = _interval(base, name), _interval(head, name)
    entry = head_entry or base_entry
    limit: Limit | None = limit_of(entry.get("expect"), name, entry.get("params") or {})
    b, h = _numeric(b_raw), _numeric(h_raw)
    if limit is not None:
        value.limit, value.better = limit.limit, limit.better
        value.used = limit.used(h) if h is not None else None
        base_limit = limit_of(base_entry.get("expect"), name, base_entry.get("params") or {}) or limit
        value.base_used = base_limit.used(b) if b is not None else None
    if b is None or h is None:
        return value
    value.delta = h - b
    value.delta_pct = (h - b) / abs(b) if b else None
    bi, hi = value.base_interval, value.head_interval
    if bi or hi:
        low_b, high_b = bi or [b, b]
        low_h, high_h = hi or [h, h]
        value.within_noise = not (high_h < low_b or high_b < low_h)
        beyond = not value.within_noise
    else:
        beyond = abs(h - b) > threshold * abs(b) if b else h != b
    if beyond and limit is not None:
        value.moved = "better" if (h > b) == (limit.better == "higher") else "worse"
    return value


def _classify(row: Row, base: Mapping[str, Any] | None, head: Mapping[str, Any] | None, base_known: bool) -> None:
    if not base_known:
        row.kind, row.why = "new", "not in the base's contract"
        return
    head_ran = head is not None and head.get("verdict") in (*_RAN, "inconclusive", "skipped")
    if base is None:
        if head_ran or row.changed:
            row.kind, row.why = "missing", "no base: no run of the base's code decided it"
        else:
            row.kind, row.why = "unchanged", "run neither at the base nor at the head"
        return
    if not head_ran:
        if row.changed:
            row.kind, row.why = "missing", "changed here and not measured in this run"
        else:
            row.kind, row.why = "unchanged", "not touched by the change; not run"
        return
    bv, hv = str(base.get("verdict")), str((head or {}).get("verdict"))
    if _RANK.get(hv, 1) != _RANK.get(bv, 1) and {bv, hv} & {"falsified", "error"}:
        row.kind = "regressed" if _RANK.get(hv, 1) < _RANK.get(bv, 1) else "improved"
        row.why = f"{bv} → {hv}"
        return
    if row.base_mutant is True and row.head_mutant is False:
        row.kind, row.why = "regressed", "its mutant is no longer caught"
        return
    if row.base_mutant is False and row.head_mutant is True:
        row.kind, row.why = "improved", "its mutant is caught now"
        return
    worse = [v.name for v in row.values if v.moved == "worse"]
    better = [v.name for v in row.values if v.moved == "better"]
    if worse:
        row.kind, row.why = "regressed", f"{', '.join(worse)} moved toward the bound beyond the noise"
    elif better:
        row.kind, row.why = "improved", f"{', '.join(better)} moved away from the bound beyond the noise"
    else:
        row.kind, row.why = "unchanged", "within the noise" if any(v.within_noise for v in row.values) else "same"


def _head_entries(project: Project, contract_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per falsifier: the newest current verdict (as JSON) and the run it came from."""
    if not contract_dir.is_dir():
        return {}, {}
    reports = [r for r in verify_path(contract_dir, project.root, None, project) if r.ok and r.bundle is not None]
    reports.sort(key=lambda r: bundle_time(r.bundle) if r.bundle else ("", "", ""), reverse=True)
    sources = pick_sources(reports)
    return (
        {fid: s.entry.model_dump(mode="json") for fid, s in sources.items()},
        {fid: s.run_id for fid, s in sources.items()},
    )


def _base_entries(matching: list[Run]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    entries: dict[str, dict[str, Any]] = {}
    runs: dict[str, str] = {}
    for run in matching:  # newest first: a partial run never hides a fuller earlier one
        for fid, entry in run.falsifiers.items():
            if fid not in entries and entry.get("verdict") in (*_RAN, "inconclusive"):
                entries[fid], runs[fid] = entry, run.run_id
    return entries, runs


def _history(runs: list[Run], on_line: set[str] | None, fid: str, names: list[str], limit: int) -> list[Point]:
    points = []
    for run in runs:
        if on_line is not None and (run.commit is None or run.commit not in on_line or run.dirty):
            continue
        entry = run.falsifiers.get(fid)
        if entry is None or entry.get("verdict") not in (*_RAN, "inconclusive"):
            continue
        obs = entry.get("observations") or {}
        values = {n: v for n in names if (v := _numeric(obs.get(n))) is not None}
        points.append(Point(run.run_id, run.commit, str(entry.get("verdict")), values))
    return points[-limit:] if limit else []


def id_lines(path: Path) -> dict[str, tuple[int, int | None]]:
    """Per falsifier, the line of its ``id:`` in a contract file and of the ``mutant:`` after it
    (1-based), for annotations and mutation dashboards."""
    out: dict[str, tuple[int, int | None]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    current = ""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().lstrip("-").strip()
        if stripped.startswith("id:"):
            current = stripped[3:].strip().strip("'\"")
            out.setdefault(current, (n, None))
        elif stripped.startswith("mutant:") and current in out and out[current][1] is None:
            out[current] = (out[current][0], n)
    return out


def reproduce_command(contract_path: str, fid: str) -> str:
    return f"pytest {shlex.quote(f'{contract_path}::{fid}')} --pv-mutants -p no:cacheprovider"


def _ancestry(root: Path, commit: str) -> set[str]:
    try:
        return set(run_git(root, "rev-list", "--max-count=5000", commit).split())
    except GitError:
        return set()


def _head_commit(root: Path) -> str | None:
    try:
        return run_git(root, "rev-parse", "HEAD").strip() or None
    except GitError:
        return None


@dataclass
class _Sides:
    """What one contract's rows are read from: the head, the base, the history, the change."""

    head: dict[str, dict[str, Any]]
    head_runs: dict[str, str]
    base: dict[str, dict[str, Any]]
    base_runs: dict[str, str]
    runs: list[Run]
    changed: dict[str, Changed]
    on_line: set[str] | None  # the commits of the base's line; None: no base, every run is history
    has_base: bool


def _row(t: dict[str, Any], cid: str, rel: str, lines: dict[str, tuple[int, int | None]], sides: _Sides) -> Row:
    fid = str(t.get("id"))
    h, b, ch = sides.head.get(fid), sides.base.get(fid), sides.changed.get(fid)
    id_line, mutant_line = lines.get(fid, (None, None))
    message = str((h or {}).get("message") or "")
    return Row(
        cid, rel, fid, bool(t.get("ship_blocking")), id_line, "unchanged", "",
        str(b["verdict"]) if b else None, str(h["verdict"]) if h else None,
        _mutant(b), _mutant(h),
        ch.bound[0] if ch and ch.bound else (b or {}).get("expect"),
        str(t.get("expect")) if t.get("expect") is not None else None,
        bool(ch and ch.bound), ch.reasons if ch else [],
        base_run=sides.base_runs.get(fid), head_run=sides.head_runs.get(fid),
        message=message.splitlines()[0] if message else "",
        reproduce=reproduce_command(rel, fid),
        mutant=t.get("mutant") if isinstance(t.get("mutant"), str) else None, mutant_line=mutant_line,
    )  # fmt: skip


def _rows(
    path: Path, section: Section, declared: list[dict[str, Any]], sides: _Sides, threshold: float, limit: int
) -> list[Row]:
    lines = id_lines(path)
    shown = {r.id: r for r in section.rows}
    out = []
    for t in declared:
        row = _row(t, section.contract_id, section.path, lines, sides)
        fid = row.falsifier_id
        h, b, ch = sides.head.get(fid), sides.base.get(fid), sides.changed.get(fid)
        if fid in shown:
            row.expect_now, row.note = shown[fid].bound, shown[fid].note
        cases = [r for r in section.rows if r.id.startswith(f"{fid}[")]
        row.cases = [f"{r.id[len(fid) :]} {r.verdict}: {r.bound or r.observation}" for r in cases]
        names = _names(h or b or {})
        row.values = [compare_value(n, b, h, threshold) for n in names]
        row.history = _history(sides.runs, sides.on_line, fid, names, limit)
        if not sides.has_base:
            failing = h is not None and h.get("verdict") in ("falsified", "error")
            row.kind, row.why = ("regressed", "falsified") if failing else ("unchanged", "")
        else:
            _classify(row, b, h, not (ch and ch.new))
        out.append(row)
    return out


def review(
    project: Project,
    contracts: list[Path],
    base: str | None = None,
    keys: KeyRing | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    history: int = DEFAULT_HISTORY,
) -> Review:
    """Every falsifier of ``contracts``, head against ``base`` (None: head alone, every row unchanged
    unless its verdict fails), with the history of the base's line."""
    root, evidence_dir = project.root, project.config.evidence
    report = build(project, contracts, keys)
    tree: Tree | None = None
    changed: dict[tuple[str, str], Changed] = {}
    on_line: set[str] | None = None
    if base is not None:
        try:
            tree = Tree.at(root, base)
        except GitError as exc:
            raise ReportError(f"--base {base}: {exc}") from None
        changed = {(c.contract_id, c.falsifier_id): c for c in changed_falsifiers(project, base, contracts)}
        on_line = _ancestry(root, tree.commit)
    all_runs = read_runs(evidence_dir, root, [s.contract_id for s in report.sections])
    out = Review(base, tree.commit if tree else None, _head_commit(root), [], [], threshold, report.trust)
    for path, section in zip(contracts, report.sections, strict=True):
        cid, runs = section.contract_id, all_runs.get(section.contract_id, [])
        head, head_runs = _head_entries(project, evidence_dir / cid)
        matching, missing = runs_of_commit(runs, tree, section.path) if tree is not None else ([], "")
        newest = matching[0] if matching else None
        out.contracts.append(
            ContractReview(
                cid, section.path, section.before, section.after, section.reason,
                newest.run_id if newest else None, newest.digest if newest else None, missing,
                sorted(set(head_runs.values())),
            )
        )  # fmt: skip
        mine = {fid: c for (c_id, fid), c in changed.items() if c_id == cid}
        sides = _Sides(head, head_runs, *_base_entries(matching), runs, mine, on_line, tree is not None)
        data = project.contract(path).data or {}
        declared = [t for t in data.get("falsification_tests") or [] if isinstance(t, dict)]
        out.rows += _rows(path, section, declared, sides, threshold, history)
    return out


def changed_selection(project: Project, base: str, contracts: list[Path]) -> list[Changed]:
    """:func:`changed_falsifiers`, raising :class:`ReportError` for a ref git does not know."""
    try:
        return changed_falsifiers(project, base, contracts)
    except GitError as exc:
        raise ReportError(f"--base {base}: {exc}") from None
