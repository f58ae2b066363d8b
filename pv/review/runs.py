"""Every run a contract's evidence holds, and which of them measured a given commit's code.

A review reads history, it does not judge it: bundles are read as JSON (an old bundle whose schema
has moved on still shows its values), from the evidence folder and from the folder's git history
(bundles pruned by ``pv evidence gc`` or replaced on the evidence branch), each once by run id.

The **base** of a review is the evidence of the base commit's own code: the runs whose recorded
contract digest and every recorded code file's digest equal the files at that commit.  When no run
measured it, the base is missing and the review says so; it never falls back to the nearest commit
that has evidence, whose code is other code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.bundle.model import BUNDLE_FILE, ENVELOPE_FILE, MANIFEST_FILE
from pv.evidence.ledger import bundle_digest
from pv.evidence.verify import RUN_ID_RE, find_bundles
from pv.git import GitError, cat_blobs, run_git
from pv.paths import shown

GIT_HISTORY_LIMIT = 200  # bundles read from the evidence folder's git history per contract, newest first


@dataclass(frozen=True)
class Run:
    """One bundle, read for review: what it measured, when, on which code."""

    contract_id: str
    run_id: str
    finished_at: str
    commit: str | None  # environment.git_commit: the checkout the run measured
    dirty: bool | None
    digest: str | None  # sha256 of MANIFEST.sha256, the ledger's name for the bundle
    signed: bool
    contract_sha256: str
    code: dict[str, str] | None  # path -> sha256 of every file the verdicts rest on; None before code binding
    falsifiers: dict[str, dict[str, Any]]
    where: str  # the folder it is in, or "git <commit>:<path>" when only history has it

    @property
    def order(self) -> tuple[str, str]:
        return self.finished_at, self.run_id


def _run(contract_id: str, data: Any, digest: str | None, signed: bool, where: str) -> Run | None:
    if not isinstance(data, dict) or not isinstance(data.get("run_id"), str):
        return None
    env: dict[str, Any] = data["environment"] if isinstance(data.get("environment"), dict) else {}
    contract: dict[str, Any] = data["contract"] if isinstance(data.get("contract"), dict) else {}
    code: dict[str, Any] | None = data["code"] if isinstance(data.get("code"), dict) else None
    files = code.get("files") if code else None
    falsifiers = {
        f["id"]: f for f in data.get("falsifiers", []) if isinstance(f, dict) and isinstance(f.get("id"), str)
    }
    return Run(
        contract_id=contract_id,
        run_id=data["run_id"],
        finished_at=str(data.get("finished_at") or data.get("started_at") or ""),
        commit=env.get("git_commit"),
        dirty=env.get("git_dirty"),
        digest=digest,
        signed=signed,
        contract_sha256=str(contract.get("sha256", "")),
        code=dict(files) if isinstance(files, dict) else None,
        falsifiers=falsifiers,
        where=where,
    )


def _folder_runs(contract_dir: Path, root: Path) -> list[Run]:
    out = []
    for folder in find_bundles(contract_dir) if contract_dir.is_dir() else []:
        digest = bundle_digest(folder)
        if not RUN_ID_RE.match(folder.name) or digest is None:
            continue
        try:
            data = json.loads((folder / BUNDLE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        run = _run(contract_dir.name, data, digest, (folder / ENVELOPE_FILE).is_file(), shown(folder, root))
        if run is not None:
            out.append(run)
    return out


def _git_runs(evidence_dir: Path, contract_ids: set[str], known: set[str]) -> dict[str, list[Run]]:
    """Bundles the evidence folder's git history added, newest commit first, that are not in the folder."""
    try:
        log = run_git(evidence_dir, "log", "--diff-filter=A", "--relative", "--format=%x00%H", "--name-only", "--", ".")
    except GitError:
        return {}  # not a repository, or no history: the folder is all there is
    wanted: list[tuple[str, str, str]] = []  # (contract id, commit, path relative to the folder)
    per_contract: dict[str, int] = {}
    commit = ""
    for line in log.splitlines():
        if line.startswith("\0"):
            commit = line[1:]
            continue
        parts = line.split("/")
        if len(parts) != 3 or parts[2] != BUNDLE_FILE or parts[0] not in contract_ids or parts[1] in known:
            continue
        if per_contract.get(parts[0], 0) >= GIT_HISTORY_LIMIT or not RUN_ID_RE.match(parts[1]):
            continue
        per_contract[parts[0]] = per_contract.get(parts[0], 0) + 1
        known.add(parts[1])
        wanted.append((parts[0], commit, line))
    try:
        prefix = run_git(evidence_dir, "rev-parse", "--show-prefix").strip()
        specs = [f"{c}:{prefix}{p}" for _, c, p in wanted]
        manifests = [f"{c}:{prefix}{p.rsplit('/', 1)[0]}/{MANIFEST_FILE}" for _, c, p in wanted]
        envelopes = [f"{c}:{prefix}{p.rsplit('/', 1)[0]}/{ENVELOPE_FILE}" for _, c, p in wanted]
        blobs = cat_blobs(evidence_dir, specs + manifests + envelopes)
    except GitError:
        return {}
    n = len(wanted)
    out: dict[str, list[Run]] = {}
    for i, (cid, c, path) in enumerate(wanted):
        raw, manifest, envelope = blobs[i], blobs[n + i], blobs[2 * n + i]
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            continue
        digest = hashlib.sha256(manifest).hexdigest() if manifest is not None else None
        run = _run(cid, data, digest, envelope is not None, f"git {c[:12]}:{prefix}{path.rsplit('/', 1)[0]}")
        if run is not None:
            out.setdefault(cid, []).append(run)
    return out


def read_runs(evidence_dir: Path, root: Path, contract_ids: Iterable[str]) -> dict[str, list[Run]]:
    """Every run of each contract, oldest first: the folder's bundles, then those only git history holds."""
    ids = set(contract_ids)
    runs: dict[str, list[Run]] = {cid: _folder_runs(evidence_dir / cid, root) for cid in ids}
    known = {r.run_id for rs in runs.values() for r in rs}
    if evidence_dir.is_dir():
        for cid, found in _git_runs(evidence_dir, ids, known).items():
            runs[cid] += found
    return {cid: sorted(rs, key=lambda r: r.order) for cid, rs in runs.items()}


@dataclass
class Tree:
    """The files of one commit, hashed as evidence hashes them (sha256 of the bytes), on demand."""

    root: Path
    commit: str
    _blobs: dict[str, str] = field(default_factory=dict)  # path -> git blob id
    _sha: dict[str, str | None] = field(default_factory=dict)  # path -> sha256, None when absent

    @classmethod
    def at(cls, root: Path, ref: str) -> Tree:
        try:
            commit = run_git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except GitError:  # --quiet: git says nothing of a ref it does not know, so pv says it
            raise GitError(f"`{ref}` names no commit of the repository at {root}") from None
        tree = cls(root, commit)
        for line in run_git(root, "ls-tree", "-r", "--full-tree", commit).splitlines():
            meta, _, path = line.partition("\t")
            kind_blob = meta.split()
            if len(kind_blob) == 3 and kind_blob[1] == "blob":
                tree._blobs[path] = kind_blob[2]
        return tree

    def read(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        """The bytes of each path at this commit (None where it has no such file), in one git call."""
        wanted = list(dict.fromkeys(paths))
        present = [p for p in wanted if p in self._blobs]
        found = dict(zip(present, cat_blobs(self.root, [self._blobs[p] for p in present]), strict=True))
        return {p: found.get(p) for p in wanted}

    def sha256(self, paths: Iterable[str]) -> dict[str, str | None]:
        paths = list(paths)
        todo = [p for p in paths if p not in self._sha]
        for p, blob in self.read(todo).items():
            self._sha[p] = hashlib.sha256(blob).hexdigest() if blob is not None else None
        return {p: self._sha[p] for p in paths}

    def has(self, path: str) -> bool:
        return path in self._blobs


def measured(run: Run, tree: Tree, contract_path: str) -> str | None:
    """None when ``run`` measured the code of ``tree`` (the contract and every file it recorded are
    the same bytes), else why not."""
    if run.code is None:
        return "written before code binding"
    if run.dirty:
        return "run on a checkout with uncommitted changes"
    digests = tree.sha256([contract_path, *run.code])
    if digests[contract_path] != run.contract_sha256:
        return "another version of the contract"
    differ = sorted(p for p, d in run.code.items() if digests[p] != d)
    if differ:
        return f"{len(differ)} code file(s) differ ({', '.join(differ[:3])}{'…' if len(differ) > 3 else ''})"
    return None


def runs_of_commit(runs: list[Run], tree: Tree, contract_path: str) -> tuple[list[Run], str]:
    """The runs (newest first) that measured ``tree``'s code, and, when none did, why the newest did not."""
    matching = [r for r in reversed(runs) if measured(r, tree, contract_path) is None]
    if matching or not runs:
        return matching, "" if runs else "no evidence at all"
    newest = runs[-1]
    return [], f"no run measured {tree.commit[:12]}; the newest ({newest.run_id}) measured other code: " + (
        measured(newest, tree, contract_path) or ""
    )
