"""``pv promote``: move a contract's status to what its verified evidence supports.

The target is exactly what :mod:`pv.evidence.status` computes from verified, current evidence,
up or down (a ship-blocking ``falsified`` verdict, an error, or evidence that no longer counts
all move a status down), so ``pv promote --check`` and lint's status gate apply one rule
(:func:`pv.evidence.status.status_mismatch`).  ``RETIRED`` contracts are left alone.

The edit touches exactly two places of the YAML text, located through the composed node tree:
the value of ``metadata.status`` and a new entry at the top of ``metadata.changelog`` (the
changelog is newest first).  Every other byte, comments and formatting included, is kept.  The
entry repeats the current ``metadata.version`` and names the bundle in ``evidence``: a status
change is not a change of the claim, so the version is not bumped, and because the evidence
binding digest leaves out ``metadata.status`` and changelog entries that carry ``evidence``, the
edit keeps the bundle it promoted from current.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pv.bundle.digest import ContractUnreadable, binding_digest_of, contract_data, sha256_bytes
from pv.bundle.signing import KeyRing
from pv.evidence.status import RANK, Assessment, assess, status_mismatch
from pv.loader import compose_marked, is_null
from pv.model import SEMVER_RE, Status
from pv.paths import shown
from pv.project import ProjectContract


class PromoteError(Exception):
    """The contract cannot be edited safely; nothing was written."""


@dataclass
class Decision:
    path: Path
    contract_id: str
    version: str
    current: Status
    target: Status
    reason: str
    assessment: Assessment | None = None
    raw: bytes | None = field(default=None, repr=False)  # the contract bytes the decision read
    data: dict[str, Any] | None = field(default=None, repr=False)  # those bytes as pv's loader parsed them

    @property
    def changed(self) -> bool:
        return self.current is not self.target

    @property
    def bundle(self) -> Path | None:
        return self.assessment.bundle_path if self.assessment else None

    @property
    def blocked(self) -> bool:
        """The contract's evidence cannot be read (a broken ledger, a recorded bundle gone or
        tampered): its status is left alone, and ``pv promote`` with or without ``--check`` fails."""
        return bool(self.assessment and self.assessment.blocked)


def decide(
    contract_path: Path,
    evidence_dir: Path,
    root: Path | None = None,
    keys: KeyRing | None = None,
    contract: ProjectContract | None = None,
) -> Decision:
    """``contract``: the file as a caller already read it (used only while the bytes still match)."""
    raw = contract_path.read_bytes()
    if contract is not None and contract.sha256 == sha256_bytes(raw):
        current_contract = contract
    else:
        current_contract = ProjectContract.from_bytes(contract_path, raw)
    data = current_contract.data
    if data is None or current_contract.binding_digest is None:
        raise PromoteError(
            f"{contract_path}: the contract does not load ({current_contract.problem}); "
            f"fix it (`pv validate {contract_path}` shows where), then run `pv promote` again"
        )
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        raise PromoteError(f"{contract_path}: {_NO_METADATA}")
    cid = current_contract.id
    version = str(meta.get("version", ""))
    try:
        current = Status(meta.get("status", Status.DRAFT.value))
    except ValueError as exc:
        known = ", ".join(s.value for s in Status)
        raise PromoteError(
            f"{contract_path}: metadata.status {meta.get('status')!r} is not a status pv knows; "
            f"set it to one of {known} (DRAFT if unsure), then run `pv promote` again"
        ) from exc
    if current is Status.RETIRED:
        return Decision(contract_path, cid, version, current, current, "retired: left alone")
    found = assess(evidence_dir, contract_path, cid, root, keys=keys, current=current_contract)
    if found.blocked:  # nothing is written on evidence that cannot be read: not even a demotion
        return Decision(contract_path, cid, version, current, current, "blocked: " + "; ".join(found.blocked), found)
    where = _shown(found.bundle_path, root)
    if status_mismatch(current, found) is None:
        decision = Decision(contract_path, cid, version, current, current, "unchanged", found, raw, data)
        if found.reasons and found.status is not Status.ACTIVE:
            decision.reason = "not ACTIVE: " + "; ".join(found.reasons)
        return decision
    if RANK[found.status] > RANK[current]:
        return Decision(contract_path, cid, version, current, found.status, f"promoted from {where}", found, raw, data)
    if found.falsified:
        why = "; ".join(r for r in found.reasons if r.split(":", 1)[0] in found.falsified)
    else:
        why = "; ".join(found.reasons) or "no verified evidence"
    return Decision(contract_path, cid, version, current, found.status, f"demoted: {why} ({where})", found, raw, data)


def _shown(path: Path | None, root: Path | None) -> str:
    if path is None:
        return "no bundle"
    return shown(path, root) if root is not None else path.as_posix()


def _find(mapping: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    return next(((k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _content_end(text: str, node: yaml.Node) -> int:
    """Index just past the last character of ``node``'s own text (block collections' end marks
    run on to the next token, past comments, so they are followed down to their last scalar)."""
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(text, last[1] if isinstance(node, yaml.MappingNode) else last)
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \t\r\n":
        end -= 1
    return end


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _after_line(text: str, index: int) -> int:
    nl = text.find("\n", index)
    return len(text) if nl < 0 else nl + 1


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _scalar(key: str, value: str) -> str:
    # a semver version reads back as a string unquoted, as hand-written entries have it
    return value if key == "version" and SEMVER_RE.match(value) else _quote(value)


def _flow_entry(entry: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {_scalar(k, v)}" for k, v in entry.items()) + "}"


def _block_entry(entry: dict[str, str], dash_col: int, key_col: int) -> str:
    lines = []
    for i, (k, v) in enumerate(entry.items()):
        prefix = " " * dash_col + "-" + " " * (key_col - dash_col - 1) if i == 0 else " " * key_col
        lines.append(f"{prefix}{k}: {_scalar(k, v)}\n")
    return "".join(lines)


def edit_text(text: str, status: Status, entry: dict[str, str]) -> str:
    """``text`` with ``metadata.status`` set and ``entry`` made the newest changelog entry."""
    # the file's own line break: CRLF, a lone CR (YAML reads it as a break too) or LF
    newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text and "\n" not in text else "\n"
    if text and not text.endswith(("\n", "\r")):
        text += newline  # an insertion after the last line starts a line of its own
    try:
        root = compose_marked(text)
    except yaml.YAMLError as exc:
        raise PromoteError(
            f"the contract is not valid YAML ({exc}); fix it (`pv validate` shows where), then run `pv promote` again"
        ) from exc
    found = _find(root, "metadata") if isinstance(root, yaml.MappingNode) else None
    if found is None or not isinstance(found[1], yaml.MappingNode):
        raise PromoteError(_NO_METADATA)
    meta = found[1]
    if meta.flow_style:
        raise PromoteError(
            "metadata is written in flow style (`metadata: {...}`), which pv does not edit; write it as a "
            "block mapping (one key per line), then run `pv promote` again"
        )
    key_col = meta.value[0][0].start_mark.column
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied back to front

    status_pair = _find(meta, "status")
    if status_pair is not None:
        node = status_pair[1]
        if not isinstance(node, yaml.ScalarNode) or node.style not in (None, '"', "'"):
            raise PromoteError(
                "metadata.status is not written as a one-line value, which pv does not edit; write it as "
                "`status: DRAFT` on one line, then run `pv promote` again"
            )
        q = node.style or ""
        start = node.start_mark.index
        while text[start] in "&!":  # keep an anchor (`&s`) or a tag written before the value
            while start < node.end_mark.index and text[start] not in " \t":
                start += 1
            while start < node.end_mark.index and text[start] in " \t":
                start += 1
        value = f"{q}{status.value}{q}"
        if start == node.end_mark.index and text[start - 1] not in " \t":
            value = " " + value  # an empty value (`status:`, `status: &s`) set apart from what precedes it
        edits.append((start, node.end_mark.index, value))
    else:
        anchor = _find(meta, "version") or meta.value[-1]
        at = _after_line(text, _content_end(text, anchor[1]))
        edits.append((at, at, " " * key_col + f"status: {status.value}\n"))

    log_pair = _find(meta, "changelog")
    if log_pair is None:
        at = _after_line(text, _content_end(text, meta))
        block = " " * key_col + "changelog:\n" + " " * (key_col + 2) + "- " + _flow_entry(entry) + "\n"
        edits.append((at, at, block))
    else:
        log = log_pair[1]
        if isinstance(log, yaml.SequenceNode) and log.flow_style:
            at = log.start_mark.index + 1  # just inside "["
            edits.append((at, at, _flow_entry(entry) + (", " if log.value else "")))
        elif isinstance(log, yaml.SequenceNode) and log.value:
            first = log.value[0]
            dash_col = log.start_mark.column
            at = _line_start(text, first.start_mark.index)
            if isinstance(first, yaml.MappingNode) and not first.flow_style:
                edits.append((at, at, _block_entry(entry, dash_col, first.start_mark.column)))
            else:
                gap = first.start_mark.column - dash_col - 1
                edits.append((at, at, " " * dash_col + "-" + " " * gap + _flow_entry(entry) + "\n"))
        elif isinstance(log, yaml.ScalarNode) and log.value == "" and is_null(log):  # `changelog:` and nothing
            at = _after_line(text, log.end_mark.index)  # the value's line: `? changelog` puts its `:` below
            edits.append((at, at, " " * (key_col + 2) + "- " + _flow_entry(entry) + "\n"))
        else:
            raise PromoteError(
                "metadata.changelog is neither a list nor empty; make it a list of "
                "`{version, date, change}` entries (or delete it: pv promote writes one), then run `pv promote` again"
            )

    out = text
    # back to front; two insertions at one place land in the order they were listed (status first)
    for start, end, new in reversed(sorted(edits, key=lambda e: e[0])):
        out = out[:start] + new.replace("\n", newline) + out[end:]
    return out


_NO_METADATA = (
    "the contract has no `metadata:` mapping, so there is no status to set; add one with `id`, `version` "
    "and `status: DRAFT` (`pv validate` says what it needs), then run `pv promote` again"
)


def _by_hand(decision: Decision, entry: dict[str, str]) -> str:
    """The refusal when pv's text edit of this file would not be exactly the promotion: the file is
    left as it is, and the user gets the two lines to write."""
    return (
        f"{decision.path}: pv cannot place its edit in this file's layout without changing something else, "
        f"so nothing was written; set `status: {decision.target.value}` under metadata and add this first "
        f"entry to metadata.changelog by hand:\n    - {_flow_entry(entry)}\n"
        "then `pv promote --check` confirms the status"
    )


def _expected(data: Any, status: Status, entry: dict[str, str]) -> Any:
    meta = dict(data["metadata"])
    meta["status"] = status.value
    meta["changelog"] = [entry, *(meta.get("changelog") or [])]
    return {**data, "metadata": meta}


def changelog_entry(decision: Decision, today: _dt.date, root: Path | None) -> dict[str, str]:
    verb = "demoted" if RANK.get(decision.target, 0) < RANK.get(decision.current, 0) else "promoted"
    change = f"status {decision.current.value} -> {decision.target.value}"
    if verb == "demoted":
        change += ": " + decision.reason.removeprefix("demoted: ")
    else:
        change += " from verified evidence"
    return {
        "version": decision.version,
        "date": today.isoformat(),
        "change": change,
        "evidence": _shown(decision.bundle, root),
    }


_HELD: dict[str, int] = {}  # folders this process holds the promote lock on (re-entrant)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on the contract's folder, so two promotes never interleave: hold it
    around ``decide`` and ``apply`` together and the second process decides on what the first
    wrote.  Re-entrant within a process."""
    folder = str(path.resolve().parent)
    if _HELD.get(folder):
        _HELD[folder] += 1
        try:
            yield
        finally:
            _HELD[folder] -= 1
        return
    fd = os.open(folder, os.O_RDONLY)  # the folder: a lock file would litter the contracts
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD[folder] = 1
        yield
    finally:
        _HELD.pop(folder, None)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def apply(decision: Decision, today: _dt.date | None = None, root: Path | None = None, raw: bytes | None = None) -> str:
    """Write the decision into the contract file; returns the new text.

    The new text is re-parsed (by pv's loader) and must equal the old data with only the status
    and the new entry changed, and keep the same binding digest, or nothing is written.  The write
    holds a lock, goes through a unique temporary file in the same folder, keeps the file's mode,
    writes through a symlink to its target, and is refused if the file changed since the decision
    was taken (``raw``: the bytes the decision read; default: the file as it is now)."""
    if not decision.changed:
        raise PromoteError(f"{decision.path}: nothing to change: its status is already what the evidence backs")
    raw = raw if raw is not None else decision.raw
    target = decision.path.resolve()  # a symlinked contract stays a symlink
    with locked(target):
        now = target.read_bytes()
        if raw is not None and now != raw:
            raise PromoteError(f"{decision.path}: changed since the decision was taken; run pv promote again")
        # the decision's parse stands for these bytes; bytes it did not read are parsed here
        known = decision.data if decision.data is not None and now == decision.raw else None
        raw = now
        text = raw.decode("utf-8")
        try:
            old_data = known if known is not None else contract_data(raw, decision.path)
        except ContractUnreadable as exc:
            raise PromoteError(
                f"{decision.path}: the contract does not load ({exc}); fix it (`pv validate` shows where), "
                "then run `pv promote` again"
            ) from None
        if _declared_status(old_data) is not decision.current:
            raise PromoteError(
                f"{decision.path}: its status changed since the decision was taken; run pv promote again"
            )
        entry = changelog_entry(decision, today or _dt.datetime.now(_dt.UTC).date(), root)
        new = edit_text(text, decision.target, entry)
        try:
            new_data = contract_data(new.encode(), decision.path)
        except ContractUnreadable:
            new_data = None
        if (
            new_data is None
            or new_data != _expected(old_data, decision.target, entry)
            or binding_digest_of(new_data) != binding_digest_of(old_data)
        ):
            raise PromoteError(_by_hand(decision, entry))
        mode = os.stat(target).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".pv-promote", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(new.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return new


def _declared_status(data: dict[str, Any]) -> Status | None:
    meta = data.get("metadata")
    try:
        return Status(meta.get("status", Status.DRAFT.value)) if isinstance(meta, dict) else None
    except ValueError:
        return None
