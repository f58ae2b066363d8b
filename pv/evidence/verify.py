"""``pv evidence verify``: recompute every digest, check the schema, check the contract binding.

Per bundle the result is one of ``ok``; ``superseded`` (intact, bound to an earlier *version* of
the contract: the claim was edited and its version bumped, so the bundle is history, not a
failure); ``stale`` (intact, but bound to contract bytes that were edited without a version bump,
or whose contract is gone); ``untrusted`` (trusted keys are configured and the bundle carries no
signature by one of them); ``tampered`` (a digest mismatch, a file added, a run id or timestamp
that does not match); ``missing`` (a file the manifest lists is gone); ``schema_error``; or
``incomplete`` (no manifest: an interrupted write).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from pv.bundle import intoto
from pv.bundle.digest import BINDING_METHOD, declared_falsifiers, sha256_file
from pv.bundle.model import (
    ARTIFACTS_DIR,
    BUNDLE_FILE,
    ENVELOPE_FILE,
    MANIFEST_FILE,
    RUN_ID_TIME_FORMAT,
    STATEMENT_FILE,
    TMP_PREFIX,
    Bundle,
    committed_schema,
    parse_time,
)
from pv.bundle.signing import KeyRing, check_envelope
from pv.evidence import code_binding
from pv.evidence.code_binding import CodeScope
from pv.evidence.ledger import lines_of
from pv.project import Project, ProjectContract
from pv.semver import semver_key

if TYPE_CHECKING:
    import jsonschema

RUN_ID_RE = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")
# a name may hold any character but a line break (the writer refuses those): spaces at its ends too
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64})  (.+)")
FUTURE_SKEW = _dt.timedelta(minutes=10)  # clocks drift; a bundle dated later than this is forged

VerifyStatus = Literal["ok", "superseded", "stale", "untrusted", "schema_error", "tampered", "missing", "incomplete"]
# worst first: a bundle's status is the worst of its problems
_SEVERITY: tuple[VerifyStatus, ...] = (
    "incomplete",
    "missing",
    "tampered",
    "untrusted",
    "schema_error",
    "stale",
    "superseded",
    "ok",
)
_HISTORY: frozenset[str] = frozenset({"stale", "superseded"})


@dataclass
class Problem:
    kind: VerifyStatus
    file: str
    detail: str

    def format(self) -> str:
        return f"{self.kind}: {self.file}: {self.detail}"


@dataclass
class BundleReport:
    path: Path
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bundle: Bundle | None = None
    signed_by: str | None = None  # the trusted key id whose signature verified
    code_changes: list[str] = field(default_factory=list)  # files changed since the run (stale: code changed)

    @property
    def status(self) -> VerifyStatus:
        kinds = {p.kind for p in self.problems}
        return next((s for s in _SEVERITY if s in kinds), "ok")

    @property
    def ok(self) -> bool:
        """Intact and bound to the contract as it stands now: the only evidence that counts."""
        return not self.problems

    @property
    def intact(self) -> bool:
        """Every digest, the schema and any required signature check out; the contract may have
        moved on (stale or superseded)."""
        return all(p.kind in _HISTORY for p in self.problems)

    @property
    def superseded(self) -> bool:
        """Intact history: bound to an earlier version of the contract.  Not a failure."""
        return bool(self.problems) and all(p.kind == "superseded" for p in self.problems)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # ~40 ms: loaded when a bundle is read, not by every command that imports this module

    schema = committed_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def is_bundle_dir(path: Path) -> bool:
    return (
        path.is_dir()
        and not path.name.startswith(".")
        and (bool(RUN_ID_RE.match(path.name)) or (path / MANIFEST_FILE).exists() or (path / BUNDLE_FILE).exists())
    )


def find_bundles(path: Path) -> list[Path]:
    """Bundles at ``path``: a bundle folder, a contract's evidence folder, or the evidence root.

    Leftover ``.tmp-*`` folders are never bundles."""
    if is_bundle_dir(path):
        return [path]
    found: list[Path] = []
    if not path.is_dir():
        return found
    for child in sorted(path.iterdir()):
        if child.name.startswith(".") or not child.is_dir():
            continue
        if is_bundle_dir(child):
            found.append(child)
        else:
            found.extend(sorted(g for g in child.iterdir() if is_bundle_dir(g)))
    return found


def leftover_tmp_dirs(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    return sorted(p for p in path.rglob(f"{TMP_PREFIX}*") if p.is_dir())


def _read_manifest(path: Path, report: BundleReport) -> dict[str, str] | None:
    try:
        # not read_text: its newline translation would break a line at a lone CR
        text = (path / MANIFEST_FILE).read_bytes().decode("utf-8")
    except FileNotFoundError:
        report.problems.append(Problem("incomplete", MANIFEST_FILE, "no manifest: the write never finished"))
        return None
    except (OSError, UnicodeDecodeError) as exc:
        report.problems.append(Problem("tampered", MANIFEST_FILE, f"unreadable: {exc}"))
        return None
    entries: dict[str, str] = {}
    for n, line in enumerate(lines_of(text), 1):
        m = _MANIFEST_LINE.fullmatch(line)
        if m is None or m.group(2) in entries or ".." in m.group(2).split("/"):
            report.problems.append(Problem("tampered", MANIFEST_FILE, f"line {n} is malformed"))
            return None
        entries[m.group(2)] = m.group(1)
    if not text.endswith("\n") or list(entries) != sorted(entries):
        report.problems.append(Problem("tampered", MANIFEST_FILE, "not in canonical form"))
    return entries


def _check_files(path: Path, manifest: dict[str, str], report: BundleReport) -> None:
    on_disk = {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file() or p.is_symlink()}
    on_disk.discard(MANIFEST_FILE)
    for rel in sorted(on_disk - set(manifest)):
        report.problems.append(Problem("tampered", rel, "file not in the manifest (added)"))
    for rel, digest in sorted(manifest.items()):
        file = path / rel
        if rel not in on_disk:
            what = "artifact" if rel.startswith(ARTIFACTS_DIR + "/") else "file"
            report.problems.append(Problem("missing", rel, f"{what} listed in the manifest is missing"))
        elif file.is_symlink():
            report.problems.append(Problem("tampered", rel, "is a symbolic link"))
        elif sha256_file(file) != digest:
            report.problems.append(Problem("tampered", rel, "sha256 does not match the manifest"))
    for required in (BUNDLE_FILE, STATEMENT_FILE):
        if required not in manifest:
            report.problems.append(Problem("missing", required, "not listed in the manifest"))


def _load_json(path: Path, name: str, report: BundleReport) -> Any:
    try:
        return json.loads((path / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.problems.append(Problem("schema_error", name, f"not JSON: {exc}"))
        return None


def _check_schema(data: Any, report: BundleReport) -> Bundle | None:
    if not isinstance(data, dict):
        report.problems.append(Problem("schema_error", BUNDLE_FILE, "not a JSON object"))
        return None
    if data.get("schema_version") != 1:
        report.problems.append(
            Problem("schema_error", BUNDLE_FILE, f"unsupported schema_version {data.get('schema_version')!r}")
        )
        return None
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    for err in errors[:5]:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        report.problems.append(Problem("schema_error", BUNDLE_FILE, f"{where}: {err.message}"))
    if errors:
        return None
    try:
        return Bundle.model_validate(data)
    except ValidationError as exc:  # the schema and the model disagree: report, never crash
        report.problems.append(Problem("schema_error", BUNDLE_FILE, str(exc).splitlines()[0]))
        return None


def _check_consistency(
    path: Path, bundle: Bundle, data: dict[str, Any], manifest: dict[str, str], report: BundleReport
) -> None:
    if bundle.run_id != path.name:
        report.problems.append(Problem("tampered", BUNDLE_FILE, f"run_id {bundle.run_id} does not match its folder"))
    if bundle.contract.id != path.parent.name:
        report.problems.append(Problem("tampered", BUNDLE_FILE, f"contract {bundle.contract.id} is not its folder's"))
    started = parse_time(bundle.started_at)
    if started is None:
        report.problems.append(Problem("tampered", BUNDLE_FILE, f"started_at {bundle.started_at!r} is not a time"))
    else:
        if started.strftime(RUN_ID_TIME_FORMAT) != bundle.run_id.split("-", 1)[0]:
            report.problems.append(Problem("tampered", BUNDLE_FILE, "run_id does not carry the run's started_at"))
        if started > _dt.datetime.now(_dt.UTC) + FUTURE_SKEW:
            report.problems.append(Problem("tampered", BUNDLE_FILE, f"started_at {bundle.started_at} is in the future"))
    listed = {a.path: a.sha256 for a in bundle.artifacts}
    in_manifest = {rel: d for rel, d in manifest.items() if rel.startswith(ARTIFACTS_DIR + "/")}
    for rel in sorted(set(listed) | set(in_manifest)):
        if listed.get(rel) != in_manifest.get(rel):
            report.problems.append(Problem("tampered", rel, "bundle.json and the manifest disagree on this artifact"))
    statement = _load_json(path, STATEMENT_FILE, report)
    if statement is None:
        return
    # the predicate is compared with bundle.json as written, not as this pv would dump it: a
    # bundle written before a field was added must not read as tampered
    expected = {**intoto.statement(bundle), "predicate": data}
    if not isinstance(statement, dict) or statement.get("predicate") != data:
        report.problems.append(Problem("tampered", STATEMENT_FILE, "predicate differs from bundle.json"))
    elif statement != expected:
        report.problems.append(Problem("tampered", STATEMENT_FILE, "type or subjects differ from bundle.json"))


def _contract_candidates(path: Path, rel: str, root: Path | None) -> list[Path]:
    guess = path.parent.parent.parent  # <root>/<evidence>/<contract>/<run>
    roots = [root] if root is not None else []
    roots += [guess, Path.cwd()]
    return [r / rel for r in roots]


def _check_identity(
    path: Path, bundle: Bundle, current: ProjectContract, root: Path | None, report: BundleReport
) -> None:
    """A bundle bound to this contract's claims names this contract's file and exactly its falsifiers."""
    target = current.path.resolve()
    if not any(c.resolve() == target for c in _contract_candidates(path, bundle.contract.path, root)):
        report.problems.append(
            Problem("tampered", BUNDLE_FILE, f"contract path {bundle.contract.path} is not this contract's file")
        )
    declared = [t["id"] for t in declared_falsifiers(current.data)]
    ids = [f.id for f in bundle.falsifiers]
    extra = sorted(set(ids) - set(declared))
    lacking = [i for i in declared if i not in ids]
    if extra or lacking or len(ids) != len(set(ids)):
        what = "; ".join(
            [f"not declared by the contract: {', '.join(extra)}"] * bool(extra)
            + [f"declared but absent: {', '.join(lacking)}"] * bool(lacking)
            + ["a falsifier listed twice"] * (len(ids) != len(set(ids)))
        )
        report.problems.append(Problem("tampered", BUNDLE_FILE, f"its falsifiers are not the contract's ({what})"))


def _check_code(bundle: Bundle, current: ProjectContract, scope: CodeScope, report: BundleReport) -> None:
    recorded = bundle.code
    if recorded is None:
        report.problems.append(
            Problem(
                "stale",
                "code",
                "code changed: the bundle does not record the code it measured (written before pv bound "
                "evidence to code); run the falsifiers again",
            )
        )
        return
    if recorded.packages != scope.packages:
        report.problems.append(
            Problem(
                "stale",
                "code",
                f"code changed: measured over packages {', '.join(recorded.packages) or '(none)'}, "
                f"the project's are {', '.join(scope.packages) or '(none)'}",
            )
        )
        return
    now = scope.files(current.path, code_binding.checks_of(current.data))
    changes = code_binding.code_changes(recorded.files, now)
    report.code_changes = changes
    if changes:
        report.problems.append(Problem("stale", "code", "code changed since the run: " + ", ".join(changes)))


def _check_binding(
    path: Path,
    bundle: Bundle,
    current: ProjectContract | None,
    report: BundleReport,
    root: Path | None = None,
    scope: CodeScope | None = None,
) -> None:
    where = bundle.contract.path
    if current is None:
        report.problems.append(Problem("stale", where, "contract file not found"))
        return
    if current.binding_digest is None:
        report.problems.append(Problem("stale", where, f"contract no longer loads: {current.problem}"))
        return
    if bundle.contract.binding_method != BINDING_METHOD:
        report.problems.append(
            Problem(
                "stale",
                where,
                f"bound with {bundle.contract.binding_method}, which read the contract by other YAML rules "
                "than the run; re-run the falsifiers",
            )
        )
        return
    if current.binding_digest == bundle.contract.binding_digest:
        if current.sha256 != bundle.contract.sha256:
            report.notes.append("contract bytes changed since the run (status, promotion changelog or formatting only)")
        _check_identity(path, bundle, current, root, report)
        _check_code(bundle, current, scope or CodeScope.governing(root or current.path.parent), report)
        return

    old, new = semver_key(bundle.contract.version), semver_key(current.version)
    if old is not None and new is not None and old < new:
        report.problems.append(
            Problem(
                "superseded", where, f"bound to version {bundle.contract.version}; the contract is {current.version}"
            )
        )
    else:
        report.problems.append(Problem("stale", where, "contract edited since the run without a version bump"))


def _check_signature(path: Path, manifest: dict[str, str], keys: KeyRing | None, report: BundleReport) -> None:
    has_envelope = ENVELOPE_FILE in manifest and (path / ENVELOPE_FILE).is_file()
    if not has_envelope:
        if keys is not None:
            report.problems.append(Problem("untrusted", ENVELOPE_FILE, "unsigned, and trusted keys are configured"))
        return
    envelope = _load_json(path, ENVELOPE_FILE, report)
    try:
        statement = (path / STATEMENT_FILE).read_bytes()
    except OSError:
        return  # reported as missing already
    # A signature is checked in every mode: one that does not match its own statement is tampering
    # whatever keys are configured (it used to be a note when none were).
    check = check_envelope(envelope, statement, keys)
    if check.status == "tampered":
        report.problems.append(Problem("tampered", ENVELOPE_FILE, check.why))
    elif check.status == "untrusted":
        report.problems.append(Problem("untrusted", ENVELOPE_FILE, check.why))
    elif check.status == "unchecked":
        report.notes.append(f"{check.why}; no trusted keys configured, so it counts as unsigned")
    else:
        report.signed_by = check.signed_by


def verify_content(path: Path, keys: KeyRing | None = None) -> BundleReport:
    """Everything but the contract binding: manifest, digests, schema, consistency, signature."""
    report = BundleReport(path=path)
    manifest = _read_manifest(path, report)
    if manifest is None:
        return report
    _check_files(path, manifest, report)
    data = _load_json(path, BUNDLE_FILE, report)
    if data is None:
        return report
    bundle = _check_schema(data, report)
    if bundle is None:
        return report
    report.bundle = bundle
    _check_consistency(path, bundle, data, manifest, report)
    _check_signature(path, manifest, keys, report)
    return report


def _recorded_contract(path: Path, bundle: Bundle, root: Path | None) -> Path | None:
    return next((c for c in _contract_candidates(path, bundle.contract.path, root) if c.is_file()), None)


def verify_bundle(
    path: Path,
    root: Path | None = None,
    contract_file: Path | None = None,
    *,
    keys: KeyRing | None = None,
    current: ProjectContract | None = None,
    scope: CodeScope | None = None,
) -> BundleReport:
    """Check one bundle.  The contract it must be bound to is ``current`` (read once by a caller
    checking many bundles), else ``contract_file``, else the path recorded in the bundle resolved
    against ``root``, the evidence folder's parent and the cwd.  With ``keys``, a bundle must carry
    a DSSE signature by one of them.  ``scope``: where the code it must be bound to lives (default:
    the configuration governing the contract)."""
    report = verify_content(path, keys)
    if report.bundle is None:
        return report
    if current is None:
        if contract_file is not None:
            file: Path | None = contract_file if contract_file.is_file() else None
        else:
            file = _recorded_contract(path, report.bundle, root)
        current = ProjectContract.read(file) if file is not None else None
    _check_binding(path, report.bundle, current, report, root, scope)
    return report


def verify_path(
    path: Path,
    root: Path | None = None,
    keys: KeyRing | None = None,
    project: Project | None = None,
    scope: CodeScope | None = None,
) -> list[BundleReport]:
    """Every bundle under ``path``; each contract file is read once (through ``project`` when
    given, so a command that already read it does not read it again), however many bundles it has."""
    currents: dict[Path, ProjectContract | None] = {}
    reports: list[BundleReport] = []
    if scope is None and project is not None:
        scope = CodeScope.of(project.config)
    for b in find_bundles(path):
        report = verify_content(b, keys)
        if report.bundle is not None:
            file = _recorded_contract(b, report.bundle, root)
            key = file.resolve() if file is not None else Path()
            if key not in currents:
                if file is None:
                    currents[key] = None
                else:
                    currents[key] = project.contract(file) if project is not None else ProjectContract.read(file)
            _check_binding(b, report.bundle, currents[key], report, root, scope)
        reports.append(report)
    return reports
