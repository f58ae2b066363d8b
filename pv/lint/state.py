"""Lint's local state in ``.pv/``: written deterministically, and only when its content changes.

``.pv/`` holds per-checkout state (the ratchet of the previous run's findings, the contract
index, the per-file validation cache).  It is not committed: the directory carries its own
``.gitignore`` so that no repository has to remember to ignore it.  A repository that wants to
fail only on new findings in CI commits a baseline file instead (``pv lint --baseline``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_VERSION = 1
PREVIOUS_FILE = "lint-previous.json"
INDEX_FILE = "contracts.idx"
CACHE_FILE = "lint-cache.json"


def dumps(data: Any, *, indent: int | None = 1) -> str:
    """Canonical JSON: sorted keys, fixed separators, trailing newline; identical input, identical bytes."""
    return json.dumps(data, sort_keys=True, indent=indent, ensure_ascii=False, separators=(",", ": ")) + "\n"


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically replace ``path`` with ``text`` unless it already holds exactly that; True if written."""
    encoded = text.encode("utf-8")
    try:
        if path.read_bytes() == encoded:
            return False
        mode = path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(encoded)
        os.chmod(tmp, mode)  # mkstemp creates 0600; keep the file's mode, or the umask's default
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def read_json(path: Path) -> Any:
    """The parsed file, or None when it is missing or unreadable (state is a cache, never an error)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class StateDir:
    """``.pv/`` under the repository root."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def ensure(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_if_changed(self.path / ".gitignore", "# pv's local lint state; see pv/lint/state.py\n*\n")

    # --- the ratchet: previous run's fingerprints, per linted target -------------------------
    def previous(self, target: str) -> dict[str, str] | None:
        """Fingerprint -> gate of the previous run over ``target``, or None if there was none."""
        data = read_json(self.path / PREVIOUS_FILE)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            return None
        entries = data.get("targets", {}).get(target)
        if not isinstance(entries, dict):
            return None
        return {str(k): str(v) for k, v in entries.items()}

    def write_previous(self, target: str, fingerprints: dict[str, str]) -> bool:
        """Record this run's fingerprints (-> gate) for ``target``; rewrites only if they changed."""
        path = self.path / PREVIOUS_FILE
        data = read_json(path)
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or not isinstance(data.get("targets"), dict)
        ):
            data = {"version": STATE_VERSION, "targets": {}}
        data["targets"][target] = dict(fingerprints)
        self.ensure()
        return write_if_changed(path, dumps(data))

    # --- the contract index --------------------------------------------------------------------
    def index(self) -> dict[str, dict[str, Any]]:
        """Index entries by relative path."""
        data = read_json(self.path / INDEX_FILE)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for entry in data.get("contracts", []):
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                out[entry["path"]] = entry
        return out

    def write_index(self, entries: dict[str, dict[str, Any]]) -> bool:
        payload = {"version": STATE_VERSION, "contracts": [entries[k] for k in sorted(entries)]}
        self.ensure()
        return write_if_changed(self.path / INDEX_FILE, dumps(payload))

    # --- the validation cache ----------------------------------------------------------------
    def cache(self, salt: str) -> dict[str, Any]:
        """The cached validation results, or {} unless written by the same code (``salt``)."""
        data = read_json(self.path / CACHE_FILE)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION or data.get("salt") != salt:
            return {}
        return data

    def write_cache(self, salt: str, payload: dict[str, Any]) -> bool:
        data = {**payload, "version": STATE_VERSION, "salt": salt}
        self.ensure()
        # compact: the cache is read on every run and never by people
        return write_if_changed(self.path / CACHE_FILE, dumps(data, indent=None))
