"""The full mutation run's results, kept in the repository so that the run can span sessions.

mutmut keeps its verdicts in ``mutants/`` (ignored by git, gone with the clone).  After each chunk
``scripts/mutation/run.py`` copies every decided mutant into ``mutation/results.jsonl``, one line
per mutant, with what the verdict depended on:

- ``function_digest``: mutmut's digest of the mutated function's source.  A mutant of a function
  that has changed since is run again (mutmut's own rule: edits elsewhere in the engine do not
  reset a verdict).
- a **killed** mutant names the falsifiers that failed under it and, per falsifier, the digest of
  what decides its verdict: its own entry in its contract (params, expect, ...; its ``check`` by
  function name alone), the definitions its checker runs wherever they live
  (``checker_digest.py``: the checker function and every definition of ``falsifiers`` it reaches,
  directly or through a helper module, as syntax trees, imports as what they bind) and the shared
  fixtures and inputs (``contracts/conftest.py``, ``conftest.py``, by what they run, and
  ``recipes/``).  The verdict stands while those are unchanged, whatever else the suite gains (a
  new falsifier in the same contract included) and wherever the checker moves (a family package,
  a helper split out into a shared module, an import hoisted or commented).  Lines written under
  an earlier definition of the digest (the whole contract; the checker's whole module; the
  checker's view without the modules it imports; the checker's view and the files of the modules
  it imports) are restated once, while that earlier digest still holds (:func:`migrate`;
  ``run.py --restate`` does it for the checkers as they are in the repository, before a move).
- any other outcome (survived, reached by no falsifier, a hang or crash with no falsifier named)
  names the falsifiers that reached the mutated function in mutmut's coverage stats
  (``mutants/mutmut-stats.json``) with the same per-falsifier digests: it stands while the same
  falsifiers, unchanged, are all that reach the function.  A new or edited falsifier that reaches
  it (``scripts/mutation/run.py`` re-collects the stats of every falsifier whose digest changed before
  it decides what is current) re-runs it; one that does not, leaves it standing.  The stats of
  an unchanged falsifier are collected again too when it reached an engine function whose source
  changed since (mutmut's digests, kept beside the stats): the function may call others now, a
  helper split out of it included, and mutmut alone would never see the falsifier reach them.  Older lines hold
  the digest of the whole suite instead and are run again once any contract or checker changes.

A verdict that no longer holds is dropped, but who killed the mutant is kept in
``mutation/killers.json`` (mutant -> falsifiers, the last run's killers): when the mutant is
run again those falsifiers run first (``pv-mutation-hints.json``, read by pv's mutation hooks), so
a kill that an unrelated edit re-opened costs one falsifier instead of every faster one before it.

Digests are taken from the copies mutmut ran (``mutants/contracts``, ``mutants/falsifiers``), so
editing the repository while a chunk runs never labels a verdict with code it did not run.
The file is read by ``pv mutation report --results``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from checker_digest import CheckerDigests

from pv.bundle.digest import contract_binding_digest
from pv.import_closure import closure
from pv.mutation import KILLED, KILLING_VERDICTS, read_log, status_of

# Not part of the mutation run's suite (see pyproject's [tool.mutmut]): the real-model families.
EXCLUDED_CONTRACTS = ("real-model-",)
SHARED_FIXTURES = ("contracts/conftest.py", "conftest.py")


@dataclass(frozen=True)
class Record:
    mutant: str
    module: str
    function: str
    function_digest: str
    status: str
    killers: list[str] = field(default_factory=list)
    killer_digests: dict[str, str] = field(default_factory=dict)
    suite_digest: str | None = None  # set when the verdict depends on the whole suite
    # falsifier -> digest of those reaching the function; {} (no falsifier reached it) is a value
    reached_by: dict[str, str] | None = None

    def line(self) -> str:
        data = {k: v for k, v in asdict(self).items() if v is not None and (k == "reached_by" or v not in ([], {}))}
        return json.dumps(data, sort_keys=True, ensure_ascii=False)

    @property
    def key(self) -> str:
        """mutmut's name of the mutated function: ``engine.train.state.x_f``."""
        return function_key(self.module, self.function)


def function_key(module: str, function: str) -> str:
    """mutmut's name of ``function`` in ``module`` (``engine/train/state.py``): ``engine.train.state.x_f``."""
    return module.removesuffix(".py").replace("/", ".") + "." + function


def function_of(mutant: str) -> str:
    """``engine.model.xǁAttentionǁforward__mutmut_3`` -> ``xǁAttentionǁforward`` (mutmut's key)."""
    return mutant.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[1]


def _sha(parts: Iterable[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in parts:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def _is_checker(decorator: ast.expr) -> bool:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(func, ast.Name) and func.id == "checker") or (
        isinstance(func, ast.Attribute) and func.attr == "checker"
    )


def checker_view(source: bytes, function: str) -> bytes:
    """``source`` (a checker module) as ``function`` depends on it: without the definitions of the
    module's other ``@checker`` functions, except those the rest of the module names (a checker
    that calls another keeps it).  Helpers, constants and imports stay: they may be shared."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    spans: dict[str, tuple[int, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(map(_is_checker, node.decorator_list)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            spans[node.name] = (start, node.end_lineno or node.lineno)
    if function not in spans:
        return source
    lines = source.decode("utf-8").splitlines(keepends=True)
    drop = set(spans) - {function}
    while True:
        gone = {i for name in drop for i in range(*spans[name])}
        kept = "".join(line for i, line in enumerate(lines) if i not in gone)
        named = {name for name in drop if re.search(rf"\b{re.escape(name)}\b", kept)}
        if not named:
            return kept.encode("utf-8")
        drop -= named


def imported_helpers(root: Path, checker: Path) -> list[tuple[str, bytes]]:
    """The ``falsifiers`` modules under ``root`` that ``checker`` imports, directly or through one
    another, whole: a helper's edit (``falsifiers.shared.refusals``, a checker module another one reuses)
    changes what the checker measures.  The ``_`` modules are left out (every digest holds them)
    and so is ``checker`` itself (its digest holds its own view of it).  The closure is
    ``pv.import_closure``'s, the one evidence binds a bundle's code with."""
    return closure(root, checker, ("falsifiers",), keep=lambda path: not path.name.startswith("_"))


@dataclass(frozen=True)
class SuiteDigests:
    """Digests of the contract suite a chunk ran: the whole suite, and what decides each falsifier."""

    suite: str
    by_falsifier: dict[str, str]
    # pytest node id (``contracts/a-v1.yaml::FALSIFY-A-001``) -> falsifier (``a-v1::FALSIFY-A-001``)
    by_node: dict[str, str] = field(default_factory=dict)
    # the digests as first defined (the whole contract's binding instead of the falsifier's entry)
    legacy: dict[str, str] = field(default_factory=dict)
    # the digests as next defined (the checker's whole module instead of the checker's view of it)
    previous: dict[str, str] = field(default_factory=dict)
    # the digests as defined third (the checker's view without the falsifiers modules it imports)
    viewed: dict[str, str] = field(default_factory=dict)
    # the digests as defined fourth (by the files the checker and its helpers live in, whole)
    located: dict[str, str] = field(default_factory=dict)
    # the digests as defined fifth (the definitions the checker runs, with the fixture files whole)
    defined: dict[str, str] = field(default_factory=dict)

    @classmethod
    def measure(cls, root: Path) -> SuiteDigests:
        """From the copies under ``root`` (mutmut's ``mutants/``)."""
        contracts = sorted(p for p in (root / "contracts").glob("*.yaml") if not p.name.startswith(EXCLUDED_CONTRACTS))
        shared_paths = [root / s for s in SHARED_FIXTURES] + sorted((root / "falsifiers").glob("_*.py"))
        shared_paths += sorted((root / "recipes").glob("*.yaml"))  # the recipes falsifiers train from
        shared_paths.append(root / "falsifiers" / "__init__.py")
        shared = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in shared_paths if p.is_file()]
        by_falsifier: dict[str, str] = {}
        by_node: dict[str, str] = {}
        legacy: dict[str, str] = {}
        previous: dict[str, str] = {}
        viewed: dict[str, str] = {}
        located: dict[str, str] = {}
        defined: dict[str, str] = {}
        fixture_files = [name for name in SHARED_FIXTURES if (root / name).is_file()]
        helpers_of = functools.cache(lambda checker: imported_helpers(root, checker))  # shared by a module's checkers
        definitions = CheckerDigests(root)
        # the fixture files whole, by what they run (the fifth scheme, kept to restate its lines)
        fixtures = [
            piece
            for p in shared_paths
            if p.is_file() and p.parent.name != "falsifiers"
            for piece in (
                definitions.whole(p) if p.suffix == ".py" else [(p.relative_to(root).as_posix(), p.read_bytes())]
            )
        ]
        recipes = [(name, data) for name, data in shared if name.endswith(".yaml")]
        every: list[tuple[str, bytes]] = list(shared)
        for path in contracts:
            raw = path.read_bytes()
            data = yaml.load(raw, Loader=yaml.CSafeLoader)
            binding = contract_binding_digest(raw, path).encode()
            every.append((path.name, binding))
            for falsifier in data.get("falsification_tests") or []:
                module, _, function = str(falsifier.get("check", "")).partition(":")
                own = json.dumps(falsifier, sort_keys=True, default=str).encode()
                checker = root / (module.replace(".", "/") + ".py")
                whole = (
                    [(checker.relative_to(root).as_posix(), checker.read_bytes())]
                    if module and checker.is_file()
                    else []
                )
                view = [(f"{name}#{function}", checker_view(code, function)) for name, code in whole]
                helpers = helpers_of(checker) if whole else []
                key = f"{data['metadata']['id']}::{falsifier['id']}"
                entry = (f"{path.name}#{falsifier['id']}", own)
                runs = definitions.closure(module, [function]) if whole else []
                # the entry with its check named by function alone: where the checker lives is
                # no part of what it runs
                anywhere = json.dumps({**falsifier, "check": function}, sort_keys=True, default=str).encode()
                requested = definitions.fixtures(module, function, fixture_files) if whole else []
                by_falsifier[key] = _sha([*recipes, (entry[0], anywhere), *runs, *requested])
                defined[key] = _sha([*fixtures, (entry[0], anywhere), *runs])
                located[key] = _sha([*shared, entry, *view, *helpers])
                viewed[key] = _sha([*shared, entry, *view])
                previous[key] = _sha([*shared, entry, *whole])
                legacy[key] = _sha([*shared, (path.name, binding), *whole])
                by_node[f"contracts/{path.name}::{falsifier['id']}"] = key
        every += [(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted((root / "falsifiers").rglob("*.py"))]
        return cls(_sha(every), by_falsifier, by_node, legacy, previous, viewed, located, defined)

    def of(self, falsifier: str) -> str | None:
        return self.by_falsifier.get(falsifier)

    @property
    def earlier(self) -> tuple[dict[str, str], ...]:
        """The digests as each earlier scheme defined them, oldest first."""
        return (self.legacy, self.previous, self.viewed, self.located, self.defined)

    def unchanged(self, falsifier: str, digest: str | None) -> bool:
        """Whether ``digest``, taken under this or an earlier scheme, still holds for ``falsifier``."""
        schemes = (self.by_falsifier, *self.earlier)
        return digest is not None and any(scheme.get(falsifier) == digest for scheme in schemes)

    def by_node_id(self) -> dict[str, str]:
        """pytest node id -> the digest of what decides that falsifier."""
        return {node: self.by_falsifier[key] for node, key in self.by_node.items()}

    def reached_by(self, nodes: Iterable[str]) -> dict[str, str] | None:
        """The falsifiers behind ``nodes`` with their digests; None if one is not a falsifier of this suite."""
        keys = [self.by_node.get(n) for n in nodes]
        if any(k is None for k in keys):
            return None
        return {k: self.by_falsifier[k] for k in keys if k is not None}

    def current(self, record: Record, reach: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether ``record``'s verdict still holds for this suite (its function digest aside).

        ``reach`` (mutmut's stats, function -> node ids, current for this suite) decides the
        verdicts that rest on which falsifiers reach the function; without it they are not current.
        """
        if record.suite_digest is not None:
            return record.suite_digest == self.suite
        if record.reached_by is not None:
            return reach is not None and self.reached_by(reach.get(record.key, ())) == record.reached_by
        return bool(record.killers) and all(self.of(k) == record.killer_digests.get(k) for k in record.killers)


def migrate(record: Record, suite: SuiteDigests) -> Record:
    """``record`` with its digests restated in the current scheme where it rests on digests of an
    earlier scheme that still hold for ``suite`` (same inputs, so the new digest is as good)."""

    def restated(digests: dict[str, str]) -> dict[str, str] | None:
        for scheme in suite.earlier:
            if digests and all(scheme.get(k) == d for k, d in digests.items()):
                return {k: suite.by_falsifier[k] for k in digests}
        return None

    if record.killer_digests and (new := restated(record.killer_digests)) is not None:
        return replace(record, killer_digests=new)
    if record.reached_by and (new := restated(record.reached_by)) is not None:
        return replace(record, reached_by=new)
    return record


def restate_survival(survival: Survival, suite: SuiteDigests) -> Survival:
    """``survival`` with its digests restated in the current scheme where an earlier one still holds."""
    for scheme in suite.earlier:
        if survival.reached_by and all(scheme.get(k) == d for k, d in survival.reached_by.items()):
            return replace(survival, reached_by={k: suite.by_falsifier[k] for k in survival.reached_by})
    return survival


@dataclass(frozen=True)
class Chunk:
    """What one mutmut invocation was asked to run, and the suite it ran (``mutants/pv-chunk.json``)."""

    names: list[str]
    suite: SuiteDigests

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"names": self.names, "suite": asdict(self.suite)}), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Chunk | None:
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(list(data["names"]), SuiteDigests(**data["suite"]))


STATS = "mutmut-stats.json"
STATS_SUITE = "pv-stats-suite.json"  # the falsifiers' digests when their stats were collected


def read_reach(mutants: Path) -> dict[str, set[str]]:
    """mutmut's coverage stats: mangled function name -> the node ids of the tests that call it."""
    path = mutants / STATS
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: set(v) for k, v in data.get("tests_by_mangled_function_name", {}).items()}


# How the stats are collected: stats collected another way (2: with what child processes call)
# are collected again for every falsifier.
STATS_VERSION = 2


def function_digests(mutants: Path) -> dict[str, str]:
    """Mangled function name (as mutmut's stats name it) -> mutmut's digest of its source now."""
    digests: dict[str, str] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".py.meta").replace("/", ".")
        data = json.loads(meta.read_text(encoding="utf-8"))
        for name, digest in data.get("hash_by_function_name", {}).items():
            digests[f"{module}.{name}"] = digest
    return digests


def stale_stats(mutants: Path, suite: SuiteDigests) -> list[str]:
    """Node ids of the falsifiers whose stats were collected under other code (or never): a changed
    checker may reach other functions, and mutmut itself only collects stats for new tests.  So may
    an unchanged checker that reached an engine function whose source changed since: the function
    may now call others (a helper split out of it, a new callee), which its stats do not list."""
    path = mutants / STATS_SUITE
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    then: dict[str, str] = doc.get("nodes", {}) if doc.get("version") == STATS_VERSION else {}
    # stats marked under an earlier scheme's digest are as good while that digest holds
    earlier = {node: tuple(scheme.get(key) for scheme in suite.earlier[1:]) for node, key in suite.by_node.items()}
    nodes = suite.by_node_id()
    stale = {node for node, digest in nodes.items() if then.get(node) not in (digest, *earlier[node])}
    if "functions" not in doc:  # stats marked before function digests were kept: nothing says what changed
        return sorted(nodes) if then else sorted(stale)
    before: dict[str, str] = doc["functions"]
    changed = {name for name, digest in function_digests(mutants).items() if before.get(name) != digest}
    reach = read_reach(mutants)
    stale |= {node for name in changed for node in reach.get(name, ()) if node in nodes}
    return sorted(stale)


def drop_stats(mutants: Path, nodes: Iterable[str]) -> None:
    """Remove ``nodes`` from mutmut's stats, so that its next run collects them as new tests."""
    path = mutants / STATS
    gone = set(nodes)
    if not gone or not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tests_by_mangled_function_name"] = {
        k: sorted(set(v) - gone) for k, v in data["tests_by_mangled_function_name"].items()
    }
    data["duration_by_test"] = {k: v for k, v in data["duration_by_test"].items() if k not in gone}
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")


def mark_stats_current(mutants: Path, suite: SuiteDigests) -> None:
    doc = {"version": STATS_VERSION, "nodes": suite.by_node_id(), "functions": function_digests(mutants)}
    (mutants / STATS_SUITE).write_text(json.dumps(doc, sort_keys=True, indent=1), encoding="utf-8")


def read(path: Path) -> dict[str, Record]:
    records: dict[str, Record] = {}
    if not path.is_file():
        return records
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = Record(**json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a mutation result ({exc})") from None
        records[record.mutant] = record
    return records


def without_verdicts(records: Mapping[str, Record], names: Iterable[str]) -> dict[str, Record]:
    """``records`` less the verdicts of ``names``, which the next chunk then judges again; a name
    with no verdict is refused (KeyError naming it) rather than silently ignored, as a typo would be."""
    drop = set(names)
    if unknown := sorted(drop - set(records)):
        raise KeyError(f"no verdict recorded for {', '.join(unknown)}")
    return {name: r for name, r in records.items() if name not in drop}


def write(path: Path, records: Mapping[str, Record]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(records[k].line() + "\n" for k in sorted(records)), encoding="utf-8")
    tmp.replace(path)


def harvest(mutants: Path, chunk: Chunk) -> list[Record]:
    """The mutants of ``chunk`` that mutmut has decided under ``mutants/``, as records of its suite."""
    log = read_log(mutants / "pv-mutation-log.jsonl")
    reach = read_reach(mutants)
    wanted, suite = set(chunk.names), chunk.suite
    found: list[Record] = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes: dict[str, str] = data.get("hash_by_function_name", {})
        for name, code in data["exit_code_by_key"].items():
            status = status_of(code)
            if name not in wanted or status in ("not checked", "interrupted"):
                continue
            function = function_of(name)
            killers = sorted(f for f, v in log.get(name, {}).items() if v in KILLING_VERDICTS)
            record = Record(name, module, function, hashes.get(function, ""), status, killers)
            if status in KILLED and killers and all(suite.of(k) for k in killers):
                record = replace(record, killer_digests={k: suite.of(k) or "" for k in killers})
            else:
                reached = suite.reached_by(reach.get(record.key, ())) if suite.by_node and reach else None
                record = replace(record, suite_digest=None if reached is not None else suite.suite, reached_by=reached)
            found.append(record)
    return found


def function_hashes(mutants: Path) -> dict[str, str]:
    """mutmut's hash of every function it generated mutants for, keyed as its stats key them
    (``engine.train.loop.x_lr_factor``), read from the ``.meta`` files under ``mutants``."""
    hashes: dict[str, str] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".py.meta").replace("/", ".")
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes |= {f"{module}.{name}": digest for name, digest in data.get("hash_by_function_name", {}).items()}
    return hashes


def current_function_digests(mutants: Path) -> dict[str, tuple[str, str]]:
    """mutant -> (module, digest of its function now), for every mutant mutmut generated."""
    names: dict[str, tuple[str, str]] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes: dict[str, str] = data.get("hash_by_function_name", {})
        for name in data["exit_code_by_key"]:
            names[name] = (module, hashes.get(function_of(name), ""))
    return names


def block_stray_none(folder: Path) -> None:
    """A mutant that turns a path into ``str(None)`` writes or reads ``None`` in mutmut's working
    folder.  Left there, a file one mutant wrote is read by the next (a load of ``str(None)`` finding
    the very checkpoint a save mutant wrote, equal to the one it was asked for), and that mutant
    survives what fails anywhere else.  A folder of that name makes the write and the read fail, as
    both fail where no such file lies."""
    stray = folder / "None"
    if stray.is_symlink() or stray.is_file():
        stray.unlink()
    stray.mkdir(exist_ok=True)


def forget(mutants: Path, names: Iterable[str]) -> None:
    """Clear mutmut's own verdicts for ``names``, so that a chunk stopped early leaves none it did not reach."""
    wanted = set(names)
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes: dict[str, int | None] = data["exit_code_by_key"]
        hit = [n for n in codes if n in wanted and codes[n] is not None]
        if hit:
            for name in hit:
                codes[name] = None
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")


def read_lists(path: Path) -> dict[str, list[str]]:
    """A committed JSON object of string lists keyed by mutant ({} when the file is absent)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(k): [str(x) for x in v] for k, v in data.items()}


def write_lists(path: Path, lists: Mapping[str, Any]) -> None:
    """``lists`` (a JSON value per mutant: killers, or a survival) as a JSON object, one mutant a
    line in name order, so that a diff shows the mutants it changed; replaced atomically."""
    lines = (
        f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(lists[k], ensure_ascii=False, sort_keys=True)}"
        for k in sorted(lists)
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    tmp.replace(path)


def read_killers(path: Path) -> dict[str, list[str]]:
    """mutant -> the falsifiers (``contract::FALSIFY-ID``) that last killed it."""
    return read_lists(path)


def remember_killers(path: Path, records: Iterable[Record]) -> dict[str, list[str]]:
    """Fold the killers of ``records`` into ``path`` (a later kill replaces an earlier one's)."""
    killers = read_killers(path) | {r.mutant: r.killers for r in records if r.killers}
    write_lists(path, killers)
    return killers


def write_hints(path: Path, names: Iterable[str], killers: Mapping[str, list[str]], suite: SuiteDigests) -> int:
    """pv's hint file for a chunk: mutant -> node ids of its earlier killers still in ``suite``;
    how many of ``names`` have one."""
    node_of = {key: node for node, key in suite.by_node.items()}
    hints = {n: [node_of[k] for k in killers.get(n, []) if k in node_of] for n in names}
    hints = {n: nodes for n, nodes in hints.items() if nodes}
    path.write_text(json.dumps(hints, ensure_ascii=False), encoding="utf-8")
    return len(hints)


@dataclass(frozen=True)
class Survival:
    """A mutant that every falsifier reaching its function let live: the function's digest then,
    and each of those falsifiers with the digest of what decided it."""

    function_digest: str
    reached_by: dict[str, str]


def read_survivals(path: Path) -> dict[str, Survival]:
    """mutant -> its last survival ({} when the file is absent)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(k): Survival(str(v["function_digest"]), {str(f): str(d) for f, d in v["reached_by"].items()})
            for k, v in data.items()}  # fmt: skip


def remember_survivals(path: Path, records: Iterable[Record]) -> dict[str, Survival]:
    """Fold the survivors among ``records`` whose verdict rests on the falsifiers that reached them
    into ``path``; a mutant decided otherwise since (killed) is forgotten there."""
    known = read_survivals(path)
    for r in records:
        if r.status == "survived" and r.reached_by:
            known[r.mutant] = Survival(r.function_digest, dict(r.reached_by))
        elif r.status != "survived":
            known.pop(r.mutant, None)
    write_lists(path, {k: asdict(s) for k, s in known.items()})
    return known


def write_skips(
    path: Path,
    names: Iterable[str],
    survivals: Mapping[str, Survival],
    generated: Mapping[str, tuple[str, str]],
    suite: SuiteDigests,
    reach: Mapping[str, Iterable[str]],
) -> int:
    """pv's skip file for a chunk: mutant -> node ids of the falsifiers that already let it live,
    its function and what decides each of them unchanged since; how many of ``names`` have one.

    A mutant re-opened only because a new or changed falsifier reaches its function then runs
    that falsifier alone instead of every one again.  One whose every reaching falsifier would be
    skipped gets no entry (it runs them all): a run must test something."""
    skips: dict[str, list[str]] = {}
    for name in names:
        survival = survivals.get(name)
        if survival is None or name not in generated or generated[name][1] != survival.function_digest:
            continue
        nodes = sorted(set(reach.get(function_key(generated[name][0], function_of(name)), ())))
        same = [
            node
            for node in nodes
            if (key := suite.by_node.get(node)) is not None and suite.unchanged(key, survival.reached_by.get(key))
        ]
        if same and len(same) < len(nodes):
            skips[name] = same
    path.write_text(json.dumps(skips, ensure_ascii=False), encoding="utf-8")
    return len(skips)


def equivalents_later(todo: list[str], reviewed: Iterable[str]) -> tuple[list[str], list[str]]:
    """``todo`` split into the mutants to run now and the reviewed equivalents left for later, each
    in ``todo``'s order.  An equivalent runs every falsifier that reaches it, while a killable
    mutant stops at its first killer, so a chunk without them decides more mutants."""
    later = set(reviewed)
    return [n for n in todo if n not in later], [n for n in todo if n in later]
