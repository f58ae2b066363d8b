"""Loading the contracts tree for lint, reusing ``.pv/`` so an unchanged tree is not parsed again.

The cold path runs :func:`pv.validate.validate_paths` over the contracts directory.  Its results
are cached in ``.pv/lint-cache.json`` under a key made of every file's path and sha256, the
strictness and the validating code itself; when the next run finds the same key, each contract
model is rebuilt from its cached plain data instead of from YAML, and validate's diagnostics are
replayed.  Locations (line:col of a YAML key) are cached per file as they are asked for; a location
not in the cache loads that one file again.  ``.pv/contracts.idx`` is rewritten only when a
contract's bytes change.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pv.config import PvConfig
from pv.diagnostics import Diagnostic
from pv.lint.findings import KeyPath
from pv.lint.state import StateDir
from pv.lint.tree import LintContract, LintTree
from pv.loader import LoadedContract, find_contract_files, load_contract_file
from pv.model import Contract
from pv.project import Project

CACHE_FORMAT = 1
# Modules whose code decides what a contract validates to; a change to any of them voids the cache.
SALT_MODULES = (
    "pv.model",
    "pv.loader",
    "pv.validate",
    "pv.rules",
    "pv.diagnostics",
    "pv.expr",
    "pv.requirements",
    "pv.lint.load",
)


def code_salt() -> str:
    """Digest of the validating code, found without importing it (a warm run never needs it)."""
    h = hashlib.sha256(str(CACHE_FORMAT).encode())
    for name in SALT_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and os.path.isfile(spec.origin):
            h.update(name.encode())
            h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()


def _json_safe(data: Any, text: str | None = None) -> bool:
    """Whether ``data`` comes back from JSON as it is.  The loader's data is JSON's own types with
    string keys, so only a NaN (never equal to itself) fails: one can come only from a scalar
    spelled ``.nan`` (pv.loader), and a text without one skips the round trip (a tenth of a cold
    run on 1,000 contracts)."""
    if text is not None and ".nan" not in text.lower():
        return True
    try:
        return json.loads(json.dumps(data)) == data
    except (TypeError, ValueError):
        return False


def _key(keypath: KeyPath) -> str:
    return json.dumps(list(keypath), separators=(",", ":"))


class _FileEntry:
    """One file's cache entry; records each location asked for so the next run can answer it."""

    def __init__(
        self, path: Path, sha256: str, entry: dict[str, Any], loaded: LoadedContract | None, dialect: str = "pv"
    ) -> None:
        self.path = path
        self.dialect = dialect
        self.sha256 = sha256
        self.entry = entry
        self.loaded = loaded
        self.dirty = False

    def locate(self, keypath: KeyPath) -> tuple[int, int]:
        locations: dict[str, list[int]] = self.entry.setdefault("locations", {})
        k = _key(keypath)
        hit = locations.get(k)
        if hit is not None:
            return hit[0], hit[1]
        if self.loaded is None:
            self.loaded = load_contract_file(self.path, dialect=self.dialect)
        line, col = self.loaded.locate(list(keypath))
        locations[k] = [line, col]
        self.dirty = True
        return line, col


class TreeLoader:
    """Loads the tree (from the cache when nothing changed) and saves the cache and index after."""

    def __init__(self, config: PvConfig, *, strict: bool = False, state: StateDir | None = None) -> None:
        self.config = config
        self.project = Project(config)  # what a cold run reads, the gates read again from here
        self.strict = strict
        self.state = state
        self._entries: dict[str, _FileEntry] = {}
        self._payload: dict[str, Any] = {}
        self._salt = ""
        self._fresh = False

    # --- loading ----------------------------------------------------------------------------
    def load(self) -> LintTree:
        t0 = time.perf_counter()
        tree = self._load()
        tree.load_s = time.perf_counter() - t0
        return tree

    def _load(self) -> LintTree:
        files = find_contract_files([self.config.contracts])
        digests: list[tuple[Path, str, str]] = []
        for p in files:
            try:
                sha = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                sha = ""
            digests.append((p, self.config.relpath(p), sha))
        tree_key = self._tree_key(digests)
        if self.state is not None:
            self._salt = code_salt()
            cached = self.state.cache(self._salt)
            tree = self._from_cache(cached, tree_key, digests) if cached else None
            if tree is not None:
                return tree
        from pv.validate import validate_paths  # only a cold run needs the YAML stack

        report = validate_paths(
            [self.config.contracts],
            strict=self.strict,
            project=self.project,
        )
        return self._from_report(report, tree_key)

    def _tree_key(self, digests: Sequence[tuple[Path, str, str]]) -> str:
        h = hashlib.sha256()
        h.update(
            f"{self.config.root}\x00{self.config.contracts}\x00{self.strict}\x00{self.config.dialect}\x00".encode()
        )
        h.update(",".join(self.config.checker_packages).encode())
        h.update(("|" + ",".join(self.config.fault_packages)).encode())
        for _, rel, sha in sorted(digests, key=lambda d: d[1]):
            h.update(f"\x00{rel}\x00{sha}".encode())
        return h.hexdigest()

    def _from_report(self, report: Any, tree_key: str) -> LintTree:
        self._fresh = True
        contracts: list[LintContract] = []
        entries: dict[str, dict[str, Any]] = {}
        for loaded in report.contracts:
            rel = self.config.relpath(loaded.path)
            sha = loaded.sha256 or ""
            entry: dict[str, Any] = {"sha256": sha, "locations": {}}
            if self.config.dialect != "pv" and loaded.contract is not None:
                entry["data"] = None  # the model drops keys the data keeps: a warm run reloads this file
            elif loaded.contract is not None and loaded.data is not None and _json_safe(loaded.data, loaded.text):
                entry["data"] = loaded.data
            elif loaded.contract is not None:
                entry["data"] = None  # not representable in JSON: a warm run reloads this file
            entries[rel] = entry
            fe = _FileEntry(Path(loaded.path), sha, entry, loaded, self.config.dialect)
            self._entries[rel] = fe
            contracts.append(
                LintContract(Path(os.path.abspath(loaded.path)), rel, sha, loaded.contract, loaded.data, fe.locate)
            )
        diagnostics = list(report.diagnostics)
        self._payload = {
            "tree": {
                "key": tree_key,
                "diagnostics": [d.to_dict() for d in diagnostics],
                "counts": _counts(report),
                "files": sorted(entries),
            },
            "files": entries,
        }
        return LintTree(self.config.contracts, contracts, diagnostics, _counts(report), reloaded=len(contracts))

    def _from_cache(
        self, cached: dict[str, Any], tree_key: str, digests: Sequence[tuple[Path, str, str]]
    ) -> LintTree | None:
        tree = cached.get("tree")
        files = cached.get("files")
        if not isinstance(tree, dict) or tree.get("key") != tree_key or not isinstance(files, dict):
            return None
        contracts: list[LintContract] = []
        reloaded = 0
        try:
            # rebuild in validate's order, which the cache recorded
            by_rel = {rel: (p, sha) for p, rel, sha in digests}
            for rel in tree["files"]:
                p, sha = by_rel[rel]
                entry = files[rel]
                if entry.get("sha256") != sha:
                    return None
                fe = _FileEntry(p, sha, entry, None, self.config.dialect)
                self._entries[rel] = fe
                contract: Contract | None = None
                data = entry.get("data")
                if "data" in entry and data is None:
                    fe.loaded = load_contract_file(p, dialect=self.config.dialect)
                    contract, data = fe.loaded.contract, fe.loaded.data
                    reloaded += 1
                elif data is not None:
                    contract = Contract.model_validate(data)
                contracts.append(LintContract(Path(os.path.abspath(p)), rel, sha, contract, data, fe.locate))
            diagnostics = [Diagnostic.from_dict(d) for d in tree["diagnostics"]]
            counts = {str(k): int(v) for k, v in tree.get("counts", {}).items()}
        except (KeyError, TypeError, ValueError, ValidationError):
            return None  # a cache from another layout: ignore it and validate afresh
        self._payload = cached
        return LintTree(self.config.contracts, contracts, diagnostics, counts, reloaded=reloaded)

    # --- saving -----------------------------------------------------------------------------
    def save(self, tree: LintTree) -> None:
        """Write the cache (if anything new was learned) and the index (if any bytes changed)."""
        if self.state is None:
            return
        if self._fresh or any(e.dirty for e in self._entries.values()):
            payload = {k: v for k, v in self._payload.items() if k not in ("version", "salt")}
            self.state.write_cache(self._salt, payload)
        self._write_index(tree)

    def _write_index(self, tree: LintTree) -> None:
        assert self.state is not None
        old = self.state.index()
        target = self.config.relpath(tree.root).rstrip("/") + "/"
        ours = {k for k in old if k.startswith(target)}
        if ours == {c.rel for c in tree.contracts} and all(
            old[c.rel].get("sha256") == c.sha256 for c in tree.contracts
        ):
            return  # no contract's bytes changed: the index stands as written
        # keep entries of other linted trees; replace this tree's
        entries = {k: v for k, v in old.items() if not k.startswith(target)}
        for item in tree.contracts:
            prev = old.get(item.rel)
            if prev is not None and prev.get("sha256") == item.sha256:
                entries[item.rel] = prev  # bytes unchanged: the entry stands as it was
                continue
            c = item.contract
            entries[item.rel] = {
                "path": item.rel,
                "id": item.id,
                "sha256": item.sha256,
                "valid": c is not None,
                "falsifiers": len(c.falsification_tests) if c else 0,
                "ship_blocking": len(c.ship_blocking) if c else 0,
                "obligations": len(c.proof_obligations) if c else 0,
                "kani_harnesses": len(c.kani_harnesses) if c else 0,
            }
        self.state.write_index(entries)


def _counts(report: Any) -> dict[str, int]:
    """validate's denominators, whichever of them its report carries."""
    out: dict[str, int] = {}
    counts = getattr(report, "counts", None)
    if isinstance(counts, dict):
        out.update({str(k): int(v) for k, v in counts.items() if isinstance(v, int)})
    for name in ("files", "contracts", "falsifiers", "ship_blocking", "obligations"):
        value = getattr(report, name, None)
        if isinstance(value, int) and name not in out:
            out[name] = value
    return out
