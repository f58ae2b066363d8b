"""``pv validate``: load every contract, check each file, then check the tree as a whole.

Per-file rules read the plain data (not only the pydantic model), so that one schema error in a
falsifier does not hide a duplicate id or a bad ``expect`` elsewhere in the same file.  Nothing is
imported from the contracts' ``check:``/``mutant:`` references: whether they import is lint's job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pv import expr, rules
from pv.cases import CaseError, expand_spec
from pv.checkers import in_packages
from pv.config import DEFAULT_CHECKER_PACKAGES, DEFAULT_MAX_NPROC, PvConfig, load_config
from pv.diagnostics import Diagnostic, Severity, count, sort_diagnostics, suggest
from pv.dialect import relax
from pv.gc_passes import without_gc_passes
from pv.loader import CONTRACT_SUFFIXES, LoadedContract, find_contract_files, load_contract_file
from pv.model import CONTRACT_ID_RE, FALSIFY_ID_RE, KANI_ID_RE, OBLIGATION_ID_RE, REF_RE, SEMVER_RE
from pv.project import Project, ProjectContract
from pv.requirements import RequirementError, parse_requirement

DEFAULT_PATHS = ("contracts",)

KeyPath = tuple[str | int, ...]


@dataclass
class ValidationReport:
    """What ``pv validate`` found: the loaded files, the diagnostics and the denominator."""

    contracts: list[LoadedContract]
    diagnostics: list[Diagnostic]
    strict: bool = False
    checker_packages: tuple[str, ...] = DEFAULT_CHECKER_PACKAGES
    n_falsifiers: int = 0
    n_obligations: int = 0
    missing_paths: list[str] = field(default_factory=list)  # named on the command line, not there
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why it is not a contract (Rust dialect)
    dialect: str = "pv"

    @property
    def n_contracts(self) -> int:
        return len(self.contracts)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.is_error]

    @property
    def exit_code(self) -> int:
        """0 clean, 1 errors found, 2 a named path does not exist (a usage error)."""
        if self.missing_paths:
            return 2
        return 1 if self.errors else 0

    @property
    def counts(self) -> dict[str, int]:
        errors, warnings = count(self.diagnostics)
        return {
            "contracts": self.n_contracts,
            "falsifiers": self.n_falsifiers,
            "obligations": self.n_obligations,
            "errors": errors,
            "warnings": warnings,
        }

    def summary(self) -> str:
        c = self.counts
        text = (
            f"{_plural(c['contracts'], 'contract')}, {_plural(c['falsifiers'], 'falsifier')}, "
            f"{_plural(c['obligations'], 'obligation')}: {_plural(c['errors'], 'error')}, "
            f"{_plural(c['warnings'], 'warning')}"
        )
        if self.skipped:
            text += f"; {_plural(len(self.skipped), 'data file')} without metadata skipped"
        if self.dialect != "pv":
            text += f" ({self.dialect} dialect)"
        return text

    def diagnostics_for(self, path: str | os.PathLike[str]) -> list[Diagnostic]:
        key = os.fspath(path)
        return [d for d in self.diagnostics if d.path == key]

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.counts,
            "ok": self.exit_code == 0,
            "strict": self.strict,
            "contracts": [
                {
                    "path": os.fspath(c.path),
                    "id": c.id,
                    "sha256": c.sha256,
                    "loaded": c.contract is not None,
                }
                for c in self.contracts
            ],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "skipped": [{"path": path, "reason": why} for path, why in sorted(self.skipped.items())],
            "dialect": self.dialect,
        }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- per-file rules ----------------------------------------------------------------------------


def _items(data: dict[str, Any], key: str) -> Iterator[tuple[int, dict[str, Any]]]:
    section = data.get(key)
    if isinstance(section, list):
        for i, item in enumerate(section):
            if isinstance(item, dict):
                yield i, item


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    meta = data.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _expect_position(loaded: LoadedContract, keypath: KeyPath, col_in_text: int) -> tuple[int, int]:
    """Map a column inside an ``expect`` string to the file's line:col where that can be done exactly."""
    node = loaded.node_at(keypath)
    if not isinstance(node, yaml.ScalarNode) or node.start_mark is None or node.end_mark is None:
        return loaded.locate(keypath)
    line, col = node.start_mark.line + 1, node.start_mark.column + 1
    single_line = node.start_mark.line == node.end_mark.line
    if single_line and node.style in ("", None):
        return line, col + col_in_text - 1
    if single_line and node.style in ("'", '"') and "\\" not in node.value and "'" not in node.value:
        return line, col + col_in_text  # one more for the opening quote
    return line, col


def check_file(
    loaded: LoadedContract,
    packages: Sequence[str] = DEFAULT_CHECKER_PACKAGES,
    fault_packages: Sequence[str] = (),
    max_nproc: int = DEFAULT_MAX_NPROC,
) -> list[Diagnostic]:
    """Rules that need only this file: ids, versions, predictions, expect, code references."""
    data = loaded.data
    if data is None:
        return []
    out: list[Diagnostic] = []
    meta = _metadata(data)
    if not meta:
        return out  # the schema already reports the missing or malformed metadata

    declared = meta.get("id")
    if isinstance(declared, str):
        if not CONTRACT_ID_RE.match(declared):
            out.append(
                loaded.diagnostic(
                    rules.INVALID_ID,
                    ("metadata", "id"),
                    f"contract id `{declared}` is not a lower-case slug ([a-z0-9][a-z0-9._-]*)",
                )
            )
        if declared != loaded.stem:
            out.append(
                loaded.diagnostic(
                    rules.STEM_MISMATCH,
                    ("metadata", "id"),
                    f"metadata.id `{declared}` differs from the file stem `{loaded.stem}`",
                    hint=f"rename the file to `{declared}{loaded.path.suffix}` or set `id: {loaded.stem}`",
                )
            )

    version = meta.get("version")
    # a non-string version (``1.0`` parses as a float) is already a schema error; report it once
    if isinstance(version, str) and not SEMVER_RE.match(version):
        out.append(
            loaded.diagnostic(rules.INVALID_SEMVER, ("metadata", "version"), f"version `{version}` is not semver")
        )
    for i, entry in _items(meta, "changelog"):
        v = entry.get("version")
        if isinstance(v, str) and not SEMVER_RE.match(v):
            out.append(
                loaded.diagnostic(
                    rules.INVALID_SEMVER,
                    ("metadata", "changelog", i, "version"),
                    f"changelog version `{v}` is not semver",
                )
            )

    refs = meta.get("references")
    if refs is None or (isinstance(refs, list) and not any(isinstance(r, str) and r.strip() for r in refs)):
        where: KeyPath = ("metadata", "references") if "references" in meta else ("metadata",)
        out.append(
            loaded.diagnostic(
                rules.EMPTY_REFERENCES, where, "metadata.references is empty", key="references" not in meta
            )
        )

    for i, ob in _items(data, "proof_obligations"):
        oid = ob.get("id")
        if isinstance(oid, str) and not OBLIGATION_ID_RE.match(oid):
            out.append(
                loaded.diagnostic(
                    rules.INVALID_ID,
                    ("proof_obligations", i, "id"),
                    f"obligation id `{oid}` does not match <PREFIX>-NNN (e.g. QLORA-INV-001)",
                )
            )

    for i, kani in _items(data, "kani_harnesses"):
        kid = kani.get("id")
        if isinstance(kid, str) and not KANI_ID_RE.match(kid):
            out.append(
                loaded.diagnostic(
                    rules.INVALID_ID,
                    ("kani_harnesses", i, "id"),
                    f"Kani harness id `{kid}` does not match KANI-<PREFIX>-NNN",
                )
            )

    for i, f in _items(data, "falsification_tests"):
        out.extend(_check_falsifier(loaded, i, f, packages, fault_packages))
        launch = f.get("launch")
        nproc = launch.get("nproc") if isinstance(launch, dict) else None
        if isinstance(nproc, int) and not isinstance(nproc, bool) and nproc > max_nproc:
            out.append(
                loaded.diagnostic(
                    rules.LAUNCH_TOO_MANY,
                    ("falsification_tests", i, "launch", "nproc"),
                    f"{f.get('id', f'falsification_tests[{i}]')}: launch asks for {nproc} processes; the cap is "
                    f"{max_nproc} (max_nproc)",
                )
            )
    return out


# The fixtures every pv project has: pytest's own, its common plugins' and pv's.  A project's
# conftest fixtures are known only to a pytest run, which refuses those collisions itself.
KNOWN_FIXTURES = frozenset(
    {
        "cache",
        "capfd",
        "capfdbinary",
        "caplog",
        "capsys",
        "capsysbinary",
        "doctest_namespace",
        "monkeypatch",
        "pytestconfig",
        "pytester",
        "record_property",
        "record_testsuite_property",
        "record_xml_attribute",
        "recwarn",
        "request",
        "subtests",
        "testdir",
        "testrun_uid",
        "tmp_path",
        "tmp_path_factory",
        "tmpdir",
        "tmpdir_factory",
        "worker_id",
        "pv_artifacts",
        "pv_hypothesis",
    }
)


def _check_fixture_names(loaded: LoadedContract, base: KeyPath, label: str, f: dict[str, Any]) -> Iterator[Diagnostic]:
    """PV127: a ``params`` key or ``parametrize`` axis with a fixture's name."""
    for section in ("params", "parametrize"):
        block = f.get(section)
        names = list(block) if isinstance(block, dict) else []
        if section == "parametrize" and isinstance(block, list):
            names = sorted({k for row in block if isinstance(row, dict) for k in row})
        for name in names:
            if name in KNOWN_FIXTURES:
                where: KeyPath = (*base, section, name) if isinstance(block, dict) else (*base, section)
                yield loaded.diagnostic(
                    rules.PARAM_NAMED_LIKE_FIXTURE,
                    where,
                    f"{label}: {section} `{name}` has the name of a pytest fixture; a contract's params may "
                    "never replace a fixture (rename the param)",
                )


def _check_falsifier(
    loaded: LoadedContract, i: int, f: dict[str, Any], packages: Sequence[str], fault_packages: Sequence[str] = ()
) -> Iterator[Diagnostic]:
    base: KeyPath = ("falsification_tests", i)
    fid = f.get("id")
    label = fid if isinstance(fid, str) else f"falsification_tests[{i}]"
    yield from _check_fixture_names(loaded, base, label, f)
    if isinstance(fid, str) and not FALSIFY_ID_RE.match(fid):
        yield loaded.diagnostic(
            rules.INVALID_ID, (*base, "id"), f"falsifier id `{fid}` does not match FALSIFY-<PREFIX>-NNN"
        )
    prediction = f.get("prediction")
    # a null prediction is already a schema error (not a string); report each problem once
    if isinstance(prediction, str) and not prediction.strip():
        yield loaded.diagnostic(rules.EMPTY_PREDICTION, (*base, "prediction"), f"{label}: prediction is empty")
    expect = f.get("expect")
    if expect is None and isinstance(f.get("check"), str):
        # the plugin refuses to run a bound checker with nothing to judge its observations by
        yield loaded.diagnostic(rules.NO_EXPECT, (*base, "check"), f"{label} binds a checker but has no `expect`")
    if isinstance(expect, str):
        yield from _unparsable(loaded, base, label, "expect", expect)
    yield from _check_cases(loaded, base, label, f)
    for key in ("check", "mutant"):
        ref = f.get(key)
        if not isinstance(ref, str):
            continue
        if not REF_RE.match(ref):
            yield loaded.diagnostic(
                rules.BAD_REFERENCE, (*base, key), f"{label}: {key} `{ref}` is not of the form module:function"
            )
        elif key == "check" and not in_packages(ref.partition(":")[0], packages):
            yield loaded.diagnostic(
                rules.CHECK_OUTSIDE,
                (*base, key),
                f"{label}: checker module `{ref.partition(':')[0]}` is outside the checker packages "
                f"({', '.join(packages)}); it was not imported",
            )
        elif key == "mutant" and not in_packages(ref.partition(":")[0], (*packages, *fault_packages)):
            allowed = ", ".join((*packages, *fault_packages))
            yield loaded.diagnostic(
                rules.MUTANT_OUTSIDE,
                (*base, key),
                f"{label}: mutant module `{ref.partition(':')[0]}` is outside the checker and fault packages "
                f"({allowed}); it was not imported",
            )
    requires = f.get("requires")
    entries = [requires] if isinstance(requires, str) else requires if isinstance(requires, list) else []
    for j, entry in enumerate(entries):
        if not isinstance(entry, str):
            continue
        try:
            parse_requirement(entry)
        except RequirementError as exc:
            where: KeyPath = (*base, "requires", j) if isinstance(requires, list) else (*base, "requires")
            yield loaded.diagnostic(rules.SCHEMA, where, f"{label}: requires: {exc}")


def _check_cases(loaded: LoadedContract, base: KeyPath, label: str, f: dict[str, Any]) -> Iterator[Diagnostic]:
    """``parametrize:``/``seeds:`` must yield well-formed cases; ``aggregate:`` needs them and must parse."""
    spec, seeds, params = f.get("parametrize"), f.get("seeds"), f.get("params") or {}
    shapes_ok = (
        (spec is None or (isinstance(spec, dict) and all(isinstance(v, list) for v in spec.values())))
        or (isinstance(spec, list) and all(isinstance(row, dict) for row in spec))
    ) and isinstance(params, dict)
    seeds_ok = seeds is None or (isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1)
    cases: list[Any] = []
    if shapes_ok and seeds_ok:  # a wrong type is already a schema error: report each problem once
        try:
            cases = expand_spec(spec, seeds, params)
        except CaseError as exc:
            yield loaded.diagnostic(rules.BAD_PARAMETRIZE, (*base, exc.key), f"{label}: {exc}")
            return
    aggregate = f.get("aggregate")
    if not isinstance(aggregate, str):
        return
    if not cases and shapes_ok and seeds_ok:
        yield loaded.diagnostic(
            rules.BAD_PARAMETRIZE,
            (*base, "aggregate"),
            f"{label}: aggregate needs cases to aggregate; declare parametrize: or seeds:",
        )
    yield from _unparsable(loaded, base, label, "aggregate", aggregate)


def _unparsable(loaded: LoadedContract, base: KeyPath, label: str, key: str, text: str) -> Iterator[Diagnostic]:
    """PV109 at the exact column of a predicate (``expect`` or ``aggregate``) that does not parse."""
    try:
        expr.parse(text)
    except expr.ExprError as exc:
        line, col = _expect_position(loaded, (*base, key), exc.col)
        yield rules.EXPECT_SYNTAX.diagnostic(
            loaded.path, line, col, f"{label}: {key} does not parse: {exc.message} (column {exc.col})"
        )


# --- tree-wide rules ---------------------------------------------------------------------------


@dataclass
class _Decl:
    value: str
    loaded: LoadedContract
    keypath: KeyPath
    key: bool = False

    def where(self) -> str:
        line, _ = self.loaded.locate(self.keypath, key=self.key)
        return f"{self.loaded.path}:{line}"


@dataclass
class _Index:
    contracts: dict[str, list[_Decl]] = field(default_factory=dict)
    falsifiers: dict[str, list[_Decl]] = field(default_factory=dict)
    obligations: dict[str, list[_Decl]] = field(default_factory=dict)
    kani: dict[str, list[_Decl]] = field(default_factory=dict)


def _index(contracts: Iterable[LoadedContract]) -> _Index:
    idx = _Index()
    for loaded in contracts:
        data = loaded.data
        if data is None:
            continue
        meta = _metadata(data)
        has_id = isinstance(meta.get("id"), str) and meta.get("id")
        # a legacy contract without metadata.id is known by its stem; point at `metadata` then
        cid_path: KeyPath = ("metadata", "id") if has_id else ("metadata",)
        idx.contracts.setdefault(loaded.id, []).append(_Decl(loaded.id, loaded, cid_path, key=not has_id))
        for section, table in (
            ("falsification_tests", idx.falsifiers),
            ("proof_obligations", idx.obligations),
            ("kani_harnesses", idx.kani),
        ):
            for i, item in _items(data, section):
                ident = item.get("id")
                if isinstance(ident, str) and ident:
                    table.setdefault(ident, []).append(_Decl(ident, loaded, (section, i, "id")))
    return idx


def _duplicates(
    table: dict[str, list[_Decl]], rule: rules.Rule, what: str, per_contract: bool = False
) -> Iterator[Diagnostic]:
    """A diagnostic for each repeat of an id.  With ``per_contract`` (the Rust dialect, where ids
    are unique per contract) a repeat within one file is an error and one in another file a warning."""
    for ident, decls in table.items():
        for i, later in enumerate(decls[1:], 1):
            first, severity = decls[0], Severity.ERROR
            if per_contract:
                same_file = next((d for d in decls[:i] if d.loaded is later.loaded), None)
                first, severity = (same_file, Severity.ERROR) if same_file else (decls[0], Severity.WARNING)
            diagnostic = later.loaded.diagnostic(
                rule, later.keypath, f"{what} `{ident}` is already declared at {first.where()}", key=later.key
            )
            yield diagnostic if severity is diagnostic.severity else diagnostic.with_severity(severity)


def _known_stems(contracts: Sequence[LoadedContract]) -> set[str]:
    """Contract stems in the folders of the validated files, so validating one file still resolves
    a dependency on its sibling."""
    stems: set[str] = set()
    for folder in {c.path.parent for c in contracts}:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            for suffix in CONTRACT_SUFFIXES:
                if name.endswith(suffix):
                    stems.add(name[: -len(suffix)])
    return stems


def check_tree(contracts: Sequence[LoadedContract], dialect: str = "pv") -> list[Diagnostic]:
    """Rules over the whole tree: duplicate ids, unresolved references, depends_on and its cycles."""
    idx = _index(contracts)
    out: list[Diagnostic] = []
    per_contract = dialect == "rust"
    out.extend(_duplicates(idx.contracts, rules.DUPLICATE_CONTRACT, "contract id"))
    out.extend(_duplicates(idx.falsifiers, rules.DUPLICATE_FALSIFIER, "FALSIFY id", per_contract))
    out.extend(_duplicates(idx.obligations, rules.DUPLICATE_OBLIGATION, "obligation id", per_contract))
    out.extend(_duplicates(idx.kani, rules.DUPLICATE_KANI, "Kani harness id", per_contract))

    for loaded in contracts:
        data = loaded.data
        if data is None:
            continue
        for section, what in (("falsification_tests", "falsifier"), ("kani_harnesses", "Kani harness")):
            for i, item in _items(data, section):
                ref = item.get("obligation")
                if isinstance(ref, str) and ref not in idx.obligations:
                    label = item.get("id") if isinstance(item.get("id"), str) else f"{section}[{i}]"
                    known = _local_obligations(data)
                    close = suggest(ref, known)
                    out.append(
                        loaded.diagnostic(
                            rules.UNRESOLVED_OBLIGATION,
                            (section, i, "obligation"),
                            f"{what} {label}: obligation `{ref}` is not declared in any contract"
                            + (f"; did you mean `{close}`?" if close else ""),
                        )
                    )

    known_ids = set(idx.contracts)
    stems = _known_stems(contracts)
    edges: dict[str, list[tuple[str, LoadedContract, int]]] = {}
    for loaded in contracts:
        data = loaded.data
        if data is None:
            continue
        deps = _metadata(data).get("depends_on")
        if not isinstance(deps, list):
            continue
        for j, dep in enumerate(deps):
            if not isinstance(dep, str):
                continue
            edges.setdefault(loaded.id, []).append((dep, loaded, j))
            if dep not in known_ids and dep not in stems:
                close = suggest(dep, known_ids)
                out.append(
                    loaded.diagnostic(
                        rules.UNKNOWN_DEPENDENCY,
                        ("metadata", "depends_on", j),
                        f"depends_on names `{dep}`, which is not a contract"
                        + (f"; did you mean `{close}`?" if close else ""),
                    )
                )
    out.extend(_cycles(edges))
    return out


def _local_obligations(data: dict[str, Any]) -> list[str]:
    return [str(o["id"]) for _, o in _items(data, "proof_obligations") if isinstance(o.get("id"), str)]


def _cycles(edges: dict[str, list[tuple[str, LoadedContract, int]]]) -> Iterator[Diagnostic]:
    """Each elementary cycle found by depth-first search, reported once at its smallest member."""
    WHITE, GREY, BLACK = 0, 1, 2
    color: dict[str, int] = {}
    stack: list[str] = []
    reported: set[frozenset[str]] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        # iterative DFS: a long dependency chain must not hit Python's recursion limit
        color[node] = GREY
        stack.append(node)
        work: list[Iterator[tuple[str, LoadedContract, int]]] = [iter(edges.get(node, []))]
        while work:
            advanced = False
            for dep, _, _ in work[-1]:
                state = color.get(dep, WHITE)
                if state == GREY:
                    cycle = stack[stack.index(dep) :]
                    key = frozenset(cycle)
                    if key not in reported:
                        reported.add(key)
                        found.append(cycle)
                elif state == WHITE and dep in edges:
                    color[dep] = GREY
                    stack.append(dep)
                    work.append(iter(edges[dep]))
                    advanced = True
                    break
            if not advanced:
                work.pop()
                color[stack.pop()] = BLACK

    for start in sorted(edges):
        if color.get(start, WHITE) == WHITE:
            visit(start)

    for cycle in found:
        first = min(cycle)
        k = cycle.index(first)
        ordered = cycle[k:] + cycle[:k]
        nxt = ordered[1] if len(ordered) > 1 else ordered[0]
        path = " -> ".join([*ordered, first])
        for dep, loaded, j in edges[first]:
            if dep == nxt:
                yield loaded.diagnostic(
                    rules.DEPENDENCY_CYCLE,
                    ("metadata", "depends_on", j),
                    f"depends_on forms a cycle: {path}",
                )
                break


# --- the entry point ---------------------------------------------------------------------------


def validate_contracts(
    contracts: Sequence[LoadedContract],
    *,
    strict: bool = False,
    packages: Sequence[str] = DEFAULT_CHECKER_PACKAGES,
    fault_packages: Sequence[str] = (),
    max_nproc: int = DEFAULT_MAX_NPROC,
    dialect: str = "pv",
) -> ValidationReport:
    """Validate already-loaded contracts (lint and the plugin load once and call this).

    Files the loader skipped as data files (Rust dialect) are listed in ``skipped``, not checked."""
    skipped = [c for c in contracts if c.skipped]
    contracts = [c for c in contracts if not c.skipped]
    diagnostics: list[Diagnostic] = []
    n_falsifiers = n_obligations = 0
    for loaded in contracts:
        diagnostics.extend(loaded.diagnostics)
        diagnostics.extend(check_file(loaded, packages, fault_packages, max_nproc))
        if loaded.data is not None:
            n_falsifiers += sum(1 for _ in _items(loaded.data, "falsification_tests"))
            n_obligations += sum(1 for _ in _items(loaded.data, "proof_obligations"))
    diagnostics.extend(check_tree(contracts, dialect))
    if not contracts:
        diagnostics.append(rules.NO_CONTRACTS.diagnostic("<none>", 0, 0, "no contract files found"))
    if dialect == "rust":
        diagnostics = relax(diagnostics)
    if strict:
        diagnostics = [d.with_severity(Severity.ERROR) for d in diagnostics]
    return ValidationReport(
        contracts=list(contracts),
        diagnostics=sort_diagnostics(diagnostics),
        strict=strict,
        checker_packages=tuple(packages),
        n_falsifiers=n_falsifiers,
        n_obligations=n_obligations,
        skipped={os.fspath(c.path): str(c.skipped) for c in skipped},
        dialect=dialect,
    )


def validate_paths(
    paths: Iterable[str | os.PathLike[str]] | None = None,
    *,
    strict: bool = False,
    checker_packages: Sequence[str] | None = None,
    fault_packages: Sequence[str] | None = None,
    max_bytes: int | None = None,
    max_nproc: int | None = None,
    dialect: str | None = None,
    config: PvConfig | None = None,
    project: Project | None = None,
) -> ValidationReport:
    """Find, load and validate the contracts under ``paths`` (default ``contracts/``).

    What the arguments leave unset comes from ``project`` (else ``config``, else
    :func:`pv.config.load_config` at the first path that exists), so validate reads the settings
    lint and pytest read, and each file is read once per project.
    Raises :class:`pv.config.ConfigError` for a malformed setting."""
    path_list = [Path(p) for p in (paths or DEFAULT_PATHS)]
    found = find_contract_files(path_list)
    # a path that does not exist is a usage mistake, not a contract: report it, do not count it
    missing = [p for p in found if not os.path.lexists(p)]
    files = [p for p in found if os.path.lexists(p)]
    if project is None:
        project = Project(config or load_config(_config_start(path_list)))
    cfg = project.config
    packages = tuple(checker_packages) if checker_packages else cfg.checker_packages
    faults = tuple(fault_packages) if fault_packages is not None else cfg.fault_packages
    dialect = dialect or cfg.dialect
    with without_gc_passes():
        if max_bytes is None and dialect == cfg.dialect:
            loaded = [_loaded(c) for c in project.read_all(files)]  # the project's one reading
        else:
            loaded = [load_contract_file(f, max_bytes=max_bytes, dialect=dialect) for f in files]
        cap = max_nproc if max_nproc is not None else cfg.max_nproc
        report = validate_contracts(
            loaded, strict=strict, packages=packages, fault_packages=faults, max_nproc=cap, dialect=dialect
        )
    extra = [rules.UNREADABLE.diagnostic(p, 0, 0, f"{p} does not exist") for p in missing]
    if not files:
        shown = ", ".join(os.fspath(p) for p in path_list)
        report.diagnostics = [
            rules.NO_CONTRACTS.diagnostic(shown, 0, 0, f"no contract files (*.yaml, *.yml) found under {shown}")
        ]
    report.missing_paths = [os.fspath(p) for p in missing]
    if extra:
        report.diagnostics = sort_diagnostics([*report.diagnostics, *extra])
    return report


def _loaded(contract: ProjectContract) -> LoadedContract:
    assert contract.loaded is not None  # ProjectContract.read keeps the loader's result
    return contract.loaded


def _config_start(paths: Sequence[Path]) -> Path:
    for p in paths:
        if p.exists():
            return p
    return Path.cwd()
