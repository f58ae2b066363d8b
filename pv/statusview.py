"""Where each contract stands: its declared status against its evidence, falsifier by falsifier.

The evidence is judged by :mod:`pv.evidence.status` (bundles that verify and are bound to the
contract as it stands) and nothing else.  Each declared falsifier lands in one bucket:

- its counting verdict (``survived``, ``falsified``, ``error``, ``inconclusive``, ``skipped`` with a reason): the
  newest current bundle that measured it, exactly as promotion and lint read it;
- ``stale`` when no current bundle ran it but an intact bundle of an earlier edit of the
  contract did: it was measured, against a claim that has since changed;
- ``never_run`` otherwise: no evidence for it at all.

``pv status`` and ``pv coverage`` both read this view.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.model import FalsifierEntry
from pv.evidence.status import RANK, Assessment, assess, status_mismatch
from pv.loader import CONTRACT_SUFFIXES, contract_stem
from pv.model import FalsificationTest, Status
from pv.project import Project

BUCKETS = ("survived", "falsified", "error", "inconclusive", "skipped", "stale", "never_run")


class SelectionError(Exception):
    """A contract named on the command line does not exist (a usage error: exit 2)."""


@dataclass
class FalsifierState:
    id: str
    ship_blocking: bool
    bucket: str  # one of BUCKETS
    obligation: str | None = None
    mutant: str | None = None  # the declared mutant
    mutant_killed: bool | None = None  # in the evidence that put it in its bucket
    skip_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ship_blocking": self.ship_blocking,
            "state": self.bucket,
            "obligation": self.obligation,
            "mutant": self.mutant,
            "mutant_killed": self.mutant_killed,
            "skip_reason": self.skip_reason,
        }


@dataclass
class ContractView:
    path: Path
    rel: str
    id: str
    version: str | None = None
    declared: Status | None = None
    backing: Status = Status.DRAFT
    bundle: str | None = None  # the bundle backing the status, relative to the root
    reasons: list[str] = field(default_factory=list)  # why the evidence supports no more
    falsifiers: list[FalsifierState] = field(default_factory=list)
    obligations: list[str] = field(default_factory=list)  # ids (``proof_obligations[i]`` without one)
    depends_on: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the file does not load as a contract

    @property
    def loaded(self) -> bool:
        return not self.errors

    mismatch: str | None = None  # status_mismatch: the rule lint and promote --check apply

    @property
    def unbacked(self) -> bool:
        """The declared status is above what the evidence supports."""
        return self.declared in RANK and RANK[self.declared] > RANK[self.backing]

    def count(self, bucket: str) -> int:
        return sum(1 for f in self.falsifiers if f.bucket == bucket)

    @property
    def ship_blocking(self) -> int:
        return sum(1 for f in self.falsifiers if f.ship_blocking)

    @property
    def skip_reasons(self) -> Counter[str]:
        return Counter(f.skip_reason or "no reason given" for f in self.falsifiers if f.bucket == "skipped")

    @property
    def covered_obligations(self) -> list[str]:
        linked = {f.obligation for f in self.falsifiers if f.obligation}
        return [o for o in self.obligations if o in linked]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.rel,
            "loaded": self.loaded,
            "errors": self.errors,
            "version": self.version,
            "status": self.declared.value if self.declared else None,
            "evidence_status": self.backing.value,
            "unbacked": self.unbacked,
            "bundle": self.bundle,
            "reasons": self.reasons,
            "falsifiers": {
                "total": len(self.falsifiers),
                "ship_blocking": self.ship_blocking,
                "advisory": len(self.falsifiers) - self.ship_blocking,
                **{b: self.count(b) for b in BUCKETS},
                "skip_reasons": dict(sorted(self.skip_reasons.items())),
            },
            "falsifier_states": [f.to_json() for f in self.falsifiers],
        }


# --- which contracts ----------------------------------------------------------------------------


def select_contracts(project: Project, names: Sequence[str] | None) -> list[Path]:
    """Contract files for ``names`` (paths, folders, contract ids or file stems); all when empty."""
    config = project.config
    if not names:
        if not config.contracts.is_dir():
            raise SelectionError(f"contracts folder {config.contracts} does not exist")
        files = project.files([config.contracts])
        if not files:
            raise SelectionError(f"no contract files (*.yaml, *.yml) under {config.contracts}")
        return files
    every: list[Path] | None = None
    out: list[Path] = []
    for name in names:
        as_path = Path(name)
        if as_path.is_file() and not name.endswith(CONTRACT_SUFFIXES):
            raise SelectionError(f"{name} is not a contract file (*.yaml, *.yml)")
        if as_path.exists():
            found = project.files([as_path])
            if not found:
                raise SelectionError(f"no contract files (*.yaml, *.yml) under {name}")
            out.extend(found)
            continue
        if every is None:
            every = project.files([config.contracts]) if config.contracts.is_dir() else []
        match = [p for p in every if contract_stem(p) == name] or [p for p in every if project.contract(p).id == name]
        if not match:
            raise SelectionError(f"{name}: no such file, and no contract with that id under {config.contracts}")
        out.extend(match)
    return list(dict.fromkeys(out))


# --- the view -----------------------------------------------------------------------------------


def _ran(entry: FalsifierEntry | None) -> bool:
    return entry is not None and entry.selected and entry.verdict != "not_run"


def _evidence_buckets(falsifiers: Iterable[FalsificationTest], found: Assessment) -> list[FalsifierState]:
    """Each falsifier's counting verdict, else ``stale`` when only bundles of an earlier edit ran
    it, else ``never_run``."""
    states = [FalsifierState(f.id, f.ship_blocking, "never_run", f.obligation, f.mutant) for f in falsifiers]
    history = [r.bundle for r in found.rejected if r.intact and r.bundle is not None]
    for state in states:
        source = found.sources.get(state.id)
        if source is not None and _ran(source.entry):
            entry = source.entry
            state.bucket = entry.verdict
            state.skip_reason = entry.skip_reason if entry.verdict == "skipped" else None
            state.mutant_killed = entry.mutant.killed
        elif any(_ran(b.falsifier(state.id)) for b in history):
            state.bucket = "stale"
    return states


def contract_view(project: Project, path: Path) -> ContractView:
    """``path`` as the project read it: its declared state beside what its evidence supports."""
    config = project.config
    current = project.contract(path)
    loaded = current.loaded
    assert loaded is not None  # ProjectContract.read always keeps the loader's result
    view = ContractView(path=path, rel=config.relpath(path), id=loaded.id)
    contract = loaded.contract
    if contract is None:
        errors = [d for d in loaded.diagnostics if d.is_error] or loaded.diagnostics
        view.errors = [f"{config.relpath(Path(d.path))}:{d.line}:{d.col}: {d.code} {d.message}" for d in errors]
        if not view.errors:
            view.errors = ["the file does not load as a contract"]
        return view
    meta = contract.metadata
    view.version = meta.version
    view.declared = meta.status
    view.depends_on = list(meta.depends_on)
    view.obligations = [o.id or f"proof_obligations[{i}]" for i, o in enumerate(contract.proof_obligations)]
    found = assess(config.evidence, path, loaded.id, config.root, keys=config.key_ring(), current=current)
    view.backing = found.status
    view.bundle = config.relpath(found.bundle_path) if found.bundle_path is not None else None
    view.reasons = list(found.reasons)
    view.mismatch = status_mismatch(meta.status, found)
    view.falsifiers = _evidence_buckets(contract.falsification_tests, found)
    return view


def contract_views(project: Project, paths: Sequence[Path]) -> list[ContractView]:
    return [contract_view(project, p) for p in paths]


# --- text ---------------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def status_line(view: ContractView, widths: tuple[int, int, int] = (0, 0, 0)) -> str:
    """One line: id, status, version, falsifiers and where each stands in the evidence."""
    wid, wstatus, wversion = widths
    if not view.loaded:
        return f"{view.id:<{wid}}  {'INVALID':<{wstatus}}  {'-':<{wversion}}  {view.errors[0]}"
    declared = view.declared.value if view.declared else "?"
    n = len(view.falsifiers)
    parts = [
        f"{_plural(n, 'falsifier')} ({view.ship_blocking} ship-blocking, {n - view.ship_blocking} advisory)",
        f"{view.count('survived')} survived",
    ]
    for bad in ("falsified", "error", "inconclusive"):
        if view.count(bad):
            parts.append(f"{view.count(bad)} {bad}")
    parts.append(f"{view.count('stale')} stale")
    skipped = view.count("skipped")
    reasons = "; ".join(f"{r}" + (f" x{k}" if k > 1 else "") for r, k in sorted(view.skip_reasons.items()))
    parts.append(f"{skipped} skipped" + (f" ({reasons})" if skipped else ""))
    parts.append(f"{view.count('never_run')} never run")
    line = f"{view.id:<{wid}}  {declared:<{wstatus}}  {view.version or '?':<{wversion}}  " + ", ".join(parts)
    if view.unbacked:
        line += f"  [UNBACKED: evidence supports {view.backing.value}]"
    elif view.declared is not view.backing and view.declared is not Status.RETIRED:
        line += f"  [evidence supports {view.backing.value}: run pv promote]"
    return line


def status_lines(views: Sequence[ContractView]) -> list[str]:
    widths = (
        max((len(v.id) for v in views), default=0),
        max((len(v.declared.value if v.declared else "INVALID") for v in views), default=0),
        max((len(v.version or "-") for v in views), default=0),
    )
    lines = [status_line(v, widths) for v in views]
    total = sum(len(v.falsifiers) for v in views)
    counts = {b: sum(v.count(b) for v in views) for b in BUCKETS}
    invalid = sum(1 for v in views if not v.loaded)
    unbacked = sum(1 for v in views if v.unbacked)
    summary = f"{_plural(len(views), 'contract')}, {_plural(total, 'falsifier')}: " + ", ".join(
        f"{counts[b]} {b.replace('_', ' ')}" for b in BUCKETS
    )
    if invalid:
        summary += f"; {invalid} invalid"
    if unbacked:
        summary += f"; {unbacked} with an unbacked status"
    lines.append(summary)
    return lines


def exit_code(views: Sequence[ContractView]) -> int:
    """1 when a contract does not load or declares a status above what its evidence supports.

    A status *below* its evidence is shown (``run pv promote``) but is not an error of this view;
    ``pv lint`` and ``pv promote --check`` fail on it."""
    return 1 if any(not v.loaded or v.unbacked for v in views) else 0
