"""Mutation testing of a system under test by its contracts: which falsifiers kill which mutants.

A mutation tool (mutmut) generates mutants of the system's source and runs the ship-blocking
contract suite once per mutant.  The tool only knows "some test failed"; pv adds the other half:

- While a suite runs under a mutant (``--pv-mutation-log PATH``, mutant name from
  ``MUTANT_UNDER_TEST`` as mutmut sets it, or ``--pv-mutant-id``), the plugin appends one JSON line
  per run: the mutant and the verdict of every falsifier that ran (:func:`append_run`).
- ``pv mutation report`` joins that log with the tool's own per-mutant outcome
  (:func:`read_mutmut`) and prints the kill ratio per module, which falsifiers killed each mutant,
  the survivors, and the falsifiers that killed nothing (:func:`summarize`).

Mutants reviewed as equivalent (no behaviour a contract could observe changes) are listed in a
text file, one name per line with the reason after a ``#``; they leave the denominator.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# mutmut's exit-code meaning (mutmut.stats.status_by_exit_code), kept here so that reading a
# finished run needs no mutmut import.  Anything else is "suspicious", as mutmut says.
_STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    None: "not checked",
    0: "survived",
    1: "killed",
    3: "killed",  # pytest's internal error under a mutant
    2: "interrupted",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    -24: "timeout",  # SIGXCPU: the CPU-time limit
    24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "caught by type check",
    -11: "segfault",
    -9: "segfault",
}
# A mutant that makes the suite hang or crash the interpreter is detected (mutation-testing
# convention, and mutmut's own score); one the type checker rejects never reached the suite.
KILLED = frozenset({"killed", "timeout", "segfault"})
NOT_COUNTED = frozenset({"not checked", "skipped", "interrupted", "caught by type check"})
KILLING_VERDICTS = frozenset({"falsified", "error"})
ENV_MUTANT = "MUTANT_UNDER_TEST"
CHILD_HITS_ENV = "PV_MUTMUT_CHILD_HITS"  # a folder where child processes leave the functions they called
REASON_CHARS = 1000
_MUTMUT_SENTINELS = frozenset({"", "fail", "stats", "list_all_tests", "mutant_generation"})


class MutationReportError(Exception):
    """The mutation tool's results or pv's log cannot be read."""


def status_of(exit_code: int | None) -> str:
    return _STATUS_BY_EXIT_CODE.get(exit_code, "suspicious")


def record_child_hits() -> None:
    """During mutmut's stats run, leave the functions this (child) process called in
    ``$PV_MUTMUT_CHILD_HITS/<pid>.hits`` for the test that started it (:mod:`pv.mutation_hooks`
    adds them to that test's).  Called at a child's exit: a forked checker's ``os._exit`` runs no
    ``atexit`` handler, so it calls this itself."""
    folder = os.environ.get(CHILD_HITS_ENV, "")
    if not folder or os.environ.get(ENV_MUTANT) != "stats":
        return
    try:
        # optional: mutmut exists only in a mutation run (the [mutation] extra)
        from mutmut.state import state
    except ImportError:
        return
    hits = sorted(state()._stats)
    if hits:
        path = Path(folder) / f"{os.getpid()}.hits"
        partial = path.with_name(path.name + ".tmp")
        partial.write_text("\n".join(hits) + "\n", encoding="utf-8")
        os.replace(partial, path)  # the test process never reads half a file


def mutant_id_from_env() -> str | None:
    """The mutant this process runs under, as mutmut announces it; None outside a mutant run."""
    name = os.environ.get(ENV_MUTANT, "")
    return None if name in _MUTMUT_SENTINELS else name


def append_run(log: Path, mutant: str, verdicts: Mapping[str, str], reasons: Mapping[str, str] | None = None) -> None:
    """Append one run's falsifier verdicts under ``mutant`` to the JSON-lines ``log``.

    ``reasons`` (falsifier -> failure message) are kept for the verdicts that kill, without the
    lines restating the contract and cut to :data:`REASON_CHARS`: a kill that does not reproduce
    outside the mutation tool can then be traced to the observation that failed.  Mutation tools
    run several suites at once: one ``O_APPEND`` write per run keeps lines whole.
    """
    record: dict[str, Any] = {"mutant": mutant, "verdicts": dict(sorted(verdicts.items()))}
    why = {k: _reason(v) for k, v in sorted((reasons or {}).items()) if verdicts.get(k) in KILLING_VERDICTS}
    if why:
        record["why"] = why
    line = json.dumps(record, sort_keys=True) + "\n"
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


# A failure report's lines that restate the contract, not what was measured.
_RESTATED = ("  rule:", "  prediction:", "  if it fails:")


def _reason(message: str) -> str:
    """What failed, from a falsifier's failure report: its expect, values and observations."""
    kept = [line for line in message.splitlines() if not line.startswith(_RESTATED)]
    return "\n".join(kept)[:REASON_CHARS]


def read_log(log: Path) -> dict[str, dict[str, str]]:
    """mutant -> {falsifier: verdict} from the newest run of each mutant; a torn last line is skipped."""
    runs: dict[str, dict[str, str]] = {}
    if not log.is_file():
        return runs
    lines = log.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            runs[str(data["mutant"])] = {str(k): str(v) for k, v in data["verdicts"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if number == len(lines):
                continue  # a run killed mid-write (its CPU limit) leaves at most the last line torn
            raise MutationReportError(f"{log}:{number}: not a pv mutation record ({exc})") from None
    return runs


def read_equivalent(path: Path) -> dict[str, str]:
    """Reviewed equivalent mutants: ``name  # reason`` per line; a line without a reason is an error."""
    found: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition("#")
        if not reason.strip():
            raise MutationReportError(f"{path}:{number}: say why {name.strip()!r} is equivalent (`name  # reason`)")
        found[name.strip()] = reason.strip()
    return found


@dataclass(frozen=True)
class MutantOutcome:
    name: str  # the tool's mutant name, e.g. engine.quant.x_quantize_model__mutmut_3
    module: str  # source file relative to the project, e.g. engine/quant.py
    status: str  # killed, survived, no tests, timeout, ... (mutmut's words)


def read_mutmut(mutants_dir: Path) -> list[MutantOutcome]:
    """Every mutant mutmut generated under ``mutants_dir`` (its ``*.py.meta`` files) with its outcome."""
    if not mutants_dir.is_dir():
        raise MutationReportError(f"{mutants_dir} does not exist: run the mutation tool first (`mutmut run`)")
    outcomes: list[MutantOutcome] = []
    for meta in sorted(mutants_dir.rglob("*.py.meta")):
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            codes = data["exit_code_by_key"]
        except (ValueError, KeyError, TypeError) as exc:
            raise MutationReportError(f"{meta}: not a mutmut results file ({exc})") from None
        module = meta.relative_to(mutants_dir).as_posix().removesuffix(".meta")
        outcomes.extend(MutantOutcome(str(name), module, status_of(code)) for name, code in codes.items())
    if not outcomes:
        raise MutationReportError(f"{mutants_dir} holds no mutmut results (no *.py.meta files)")
    return outcomes


def read_results(path: Path) -> tuple[list[MutantOutcome], dict[str, dict[str, str]]]:
    """A results file kept across runs: one JSON object per line with ``mutant``, ``module``,
    ``status`` and the ``killers`` (falsifiers that failed under it); as outcomes and a log."""
    outcomes: list[MutantOutcome] = []
    log: dict[str, dict[str, str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise MutationReportError(f"{path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            outcome = MutantOutcome(str(data["mutant"]), str(data["module"]), str(data["status"]))
            killers = [str(k) for k in data.get("killers", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise MutationReportError(f"{path}:{number}: not a mutation result ({exc})") from None
        outcomes.append(outcome)
        log[outcome.name] = dict.fromkeys(killers, "falsified")
    if not outcomes:
        raise MutationReportError(f"{path} holds no mutation results")
    return outcomes, log


def function_of(mutant: str) -> str:
    """The mutated function in mutmut's readable form: ``engine.model.xǁAttentionǁforward__mutmut_3``
    -> ``Attention.forward``; a name in another form is returned as it is."""
    base, sep, _ = mutant.rpartition("__mutmut_")
    if not sep:
        return mutant
    name = base.rpartition(".")[2]
    name = name.removeprefix("x_") if "ǁ" not in name else name.removeprefix("xǁ")
    return name.replace("ǁ", ".")


@dataclass
class ModuleScore:
    module: str
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    equivalent: int = 0

    @property
    def tested(self) -> int:
        """Mutants that count: checked, not skipped, not reviewed as equivalent."""
        return sum(n for status, n in self.counts.items() if status not in NOT_COUNTED)

    @property
    def killed(self) -> int:
        return sum(n for status, n in self.counts.items() if status in KILLED)

    @property
    def ratio(self) -> float | None:
        """Killed over the mutants that count, the reviewed equivalent ones left out."""
        return self.killed / self.tested if self.tested else None

    @property
    def raw_ratio(self) -> float | None:
        """Killed over every checked mutant, the reviewed equivalent ones counted as survivors."""
        counted = self.tested + self.equivalent
        return self.killed / counted if counted else None


@dataclass
class MutationSummary:
    modules: dict[str, ModuleScore]
    killers: dict[str, list[str]]  # killed mutant -> falsifiers that falsified or errored under it
    survivors: list[MutantOutcome]  # survived or reached by no falsifier, not equivalent
    kills_by_falsifier: dict[str, int]  # every falsifier the log saw, with its kill count
    unexplained: list[str]  # killed per the tool, yet no falsifier in the log failed under it
    equivalent: dict[str, str]
    # listed as equivalent, yet killed: counted as killed (a falsifier told it apart); the entry is
    # wrong, or stale (the function changed and mutmut numbered its mutants anew)
    contradicted: list[str] = field(default_factory=list)

    @property
    def total(self) -> ModuleScore:
        total = ModuleScore("all")
        for score in self.modules.values():
            for status, n in score.counts.items():
                total.counts[status] += n
            total.equivalent += score.equivalent
        return total

    def survivors_by_function(self) -> dict[tuple[str, str], int]:
        """(module, function) -> surviving mutants, most first."""
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for m in self.survivors:
            counts[(m.module, function_of(m.name))] += 1
        return dict(sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])))

    def to_json(self) -> dict[str, Any]:
        def row(s: ModuleScore) -> dict[str, Any]:
            return {
                "module": s.module,
                "killed": s.killed,
                "tested": s.tested,
                "ratio": s.ratio,
                "raw_ratio": s.raw_ratio,
                "equivalent": s.equivalent,
                "by_status": dict(sorted(s.counts.items())),
            }

        return {
            "modules": [row(s) for s in self.modules.values()],
            "total": row(self.total),
            "killers": self.killers,
            "survivors": [
                {"name": m.name, "module": m.module, "function": function_of(m.name), "status": m.status}
                for m in self.survivors
            ],
            "kills_by_falsifier": self.kills_by_falsifier,
            "unexplained": self.unexplained,
            "equivalent": self.equivalent,
            "contradicted": self.contradicted,
        }


def summarize(
    outcomes: Iterable[MutantOutcome],
    log: Mapping[str, Mapping[str, str]],
    equivalent: Mapping[str, str] | None = None,
    *,
    only: Iterable[str] = (),
) -> MutationSummary:
    """Score per module; ``only`` keeps the named mutants (a sample), ignoring the rest."""
    equivalent = dict(equivalent or {})
    keep = set(only)
    modules: dict[str, ModuleScore] = {}
    killers: dict[str, list[str]] = {}
    survivors: list[MutantOutcome] = []
    unexplained: list[str] = []
    contradicted: list[str] = []
    kills: dict[str, int] = defaultdict(int)
    for verdicts in log.values():
        for falsifier in verdicts:
            kills[falsifier] += 0
    for m in outcomes:
        if keep and m.name not in keep:
            continue
        score = modules.setdefault(m.module, ModuleScore(m.module))
        if m.name in equivalent:
            if m.status not in KILLED:
                score.equivalent += 1
                continue
            contradicted.append(m.name)
        score.counts[m.status] += 1
        if m.status in KILLED:
            by = sorted(f for f, v in log.get(m.name, {}).items() if v in KILLING_VERDICTS)
            killers[m.name] = by
            for f in by:
                kills[f] += 1
            if not by and m.status == "killed":
                unexplained.append(m.name)
        elif m.status not in NOT_COUNTED:
            survivors.append(m)
    return MutationSummary(
        modules=dict(sorted(modules.items())),
        killers=killers,
        survivors=survivors,
        kills_by_falsifier=dict(sorted(kills.items(), key=lambda kv: (-kv[1], kv[0]))),
        unexplained=unexplained,
        equivalent={k: v for k, v in equivalent.items() if not keep or k in keep},
        contradicted=contradicted,
    )
