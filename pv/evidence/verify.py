"""``pv evidence verify``: recompute every digest, check the schema, check the contract binding.

Per bundle the result is one of ``ok``, ``stale`` (intact, but bound to a contract that has since
been edited or removed), ``tampered`` (a digest mismatch or a file added), ``missing`` (a file the
manifest lists is gone), ``schema_error`` or ``incomplete`` (no manifest: an interrupted write).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import ValidationError

from pv.evidence import intoto
from pv.evidence.bundle import (
    ARTIFACTS_DIR,
    BUNDLE_FILE,
    MANIFEST_FILE,
    STATEMENT_FILE,
    TMP_PREFIX,
    Bundle,
    committed_schema,
)
from pv.evidence.digest import contract_binding_digest, sha256_bytes, sha256_file

RUN_ID_RE = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")
_MANIFEST_LINE = re.compile(r"^([0-9a-f]{64})  (\S(?:.*\S)?)$")

VerifyStatus = Literal["ok", "stale", "schema_error", "tampered", "missing", "incomplete"]
# worst first: a bundle's status is the worst of its problems
_SEVERITY: tuple[VerifyStatus, ...] = ("incomplete", "missing", "tampered", "schema_error", "stale", "ok")


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
        """Every digest and the schema check out; the contract may have moved on (stale)."""
        return all(p.kind == "stale" for p in self.problems)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
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
        text = (path / MANIFEST_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        report.problems.append(Problem("incomplete", MANIFEST_FILE, "no manifest: the write never finished"))
        return None
    except (OSError, UnicodeDecodeError) as exc:
        report.problems.append(Problem("tampered", MANIFEST_FILE, f"unreadable: {exc}"))
        return None
    entries: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _MANIFEST_LINE.match(line)
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
    listed = {a.path: a.sha256 for a in bundle.artifacts}
    in_manifest = {rel: d for rel, d in manifest.items() if rel.startswith(ARTIFACTS_DIR + "/")}
    for rel in sorted(set(listed) | set(in_manifest)):
        if listed.get(rel) != in_manifest.get(rel):
            report.problems.append(Problem("tampered", rel, "bundle.json and the manifest disagree on this artifact"))
    statement = _load_json(path, STATEMENT_FILE, report)
    if statement is None:
        return
    expected = intoto.statement(bundle)
    if not isinstance(statement, dict) or statement.get("predicate") != data:
        report.problems.append(Problem("tampered", STATEMENT_FILE, "predicate differs from bundle.json"))
    elif statement != expected:
        report.problems.append(Problem("tampered", STATEMENT_FILE, "type or subjects differ from bundle.json"))


def _contract_candidates(path: Path, rel: str, root: Path | None) -> list[Path]:
    guess = path.parent.parent.parent  # <root>/<evidence>/<contract>/<run>
    roots = [root] if root is not None else []
    roots += [guess, Path.cwd()]
    return [r / rel for r in roots]


def _check_binding(
    path: Path, bundle: Bundle, root: Path | None, contract_file: Path | None, report: BundleReport
) -> None:
    if contract_file is not None:
        contract: Path | None = contract_file if contract_file.is_file() else None
    else:
        contract = next((c for c in _contract_candidates(path, bundle.contract.path, root) if c.is_file()), None)
    if contract is None:
        report.problems.append(Problem("stale", bundle.contract.path, "contract file not found"))
        return
    data = contract.read_bytes()
    try:
        binding = contract_binding_digest(data)
    except Exception as exc:  # yaml errors of every kind: the contract no longer parses
        report.problems.append(Problem("stale", bundle.contract.path, f"contract no longer parses: {exc}"))
        return
    if binding != bundle.contract.binding_digest:
        report.problems.append(Problem("stale", bundle.contract.path, "contract edited since the run"))
    elif sha256_bytes(data) != bundle.contract.sha256:
        report.notes.append("contract bytes changed since the run (status, promotion changelog or formatting only)")


def verify_bundle(path: Path, root: Path | None = None, contract_file: Path | None = None) -> BundleReport:
    """Check one bundle; ``contract_file`` pins the contract it must be bound to (else the path
    recorded in the bundle is resolved against ``root``, the evidence folder's parent, the cwd)."""
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
    _check_binding(path, bundle, root, contract_file, report)
    return report


def verify_path(path: Path, root: Path | None = None) -> list[BundleReport]:
    return [verify_bundle(b, root) for b in find_bundles(path)]
