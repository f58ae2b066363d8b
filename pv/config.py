"""Where pv finds things: the contracts directory, the checker packages and the evidence directory.

Precedence is the usual one for developer tools: an explicit command-line value, else the
``[tool.pv]`` table of the nearest ``pyproject.toml`` (searched upward from the starting
directory), else the defaults.  Paths in ``pyproject.toml`` are relative to that file's directory;
paths given on the command line are relative to the current directory.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pv.diagnostics import suggest

DEFAULT_CONTRACTS = "contracts"
DEFAULT_CHECKER_PACKAGES: tuple[str, ...] = ("falsifiers",)
DEFAULT_EVIDENCE = "evidence"
KNOWN_KEYS = (
    "contracts",
    "checker_packages",
    "fault_packages",
    "evidence",
    "trusted_keys",
    "write_evidence",
    "max_nproc",
    "dialect",
)
DIALECTS = ("pv", "rust")  # rust: upstream conventions are accepted and reported as warnings


_RINGS: dict[Path, tuple[int, Any]] = {}  # trusted keys read once per file version


class ConfigError(ValueError):
    """``[tool.pv]`` is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class PvConfig:
    root: Path  # the directory of the governing pyproject.toml, else the starting directory
    contracts: Path
    checker_packages: tuple[str, ...]
    evidence: Path
    pyproject: Path | None = None
    fault_packages: tuple[str, ...] = ()  # where a mutant's module may live, besides checker packages
    max_nproc: int = 8  # the most processes a falsifier's `launch: {nproc: N}` may start
    trusted_keys: Path | None = None  # public keys whose signed bundles alone count
    write_evidence: bool = False  # whether a plain pytest run writes bundles
    dialect: str = "pv"  # "rust": read contracts as the Rust pv writes them (pv.dialect)

    def key_ring(self) -> Any:
        """The trusted keys as a :class:`pv.evidence.signing.KeyRing`, or None when none are set.

        Raises :class:`ConfigError` for a file that is missing or holds no usable key: a typo in
        the trust setting must never quietly turn signature checks off."""
        if self.trusted_keys is None:
            return None
        from pv.evidence.signing import KeyRing, SigningError

        try:
            stamp = self.trusted_keys.stat().st_mtime_ns
        except OSError:
            stamp = -1
        cached = _RINGS.get(self.trusted_keys)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            ring = KeyRing.from_file(self.trusted_keys)
        except SigningError as exc:
            raise ConfigError(f"trusted keys: {exc}") from None
        _RINGS[self.trusted_keys] = (stamp, ring)
        return ring

    @property
    def state_dir(self) -> Path:
        """``.pv/``: lint's local state (ratchet, index, cache); never committed."""
        return self.root / ".pv"

    def relpath(self, path: Path | str) -> str:
        """``path`` relative to the root with forward slashes, or absolute when outside it.

        Plain string work first: lint calls this for every file, and resolving each path through
        the file system costs more than the rest of a cached run.  Symlinks are resolved only
        when the plain path is not under the root.
        """
        text = os.path.normpath(os.path.join(os.getcwd(), os.fspath(path)))
        root = str(self.root)
        inside = _under(text, root)
        if inside is None:
            text = os.path.realpath(text)
            inside = _under(text, root)
        return inside if inside is not None else Path(text).as_posix()


def _under(path: str, root: str) -> str | None:
    if path == root:
        return "."
    if path.startswith(root + os.sep):
        return path[len(root) + 1 :].replace(os.sep, "/")
    return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for d in (here, *here.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_table(pyproject: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read: {exc}") from exc
    table = data.get("tool", {}).get("pv", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.pv] must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            close = suggest(key, KNOWN_KEYS)
            hint = f"; did you mean {close!r}?" if close else f"; known keys: {', '.join(KNOWN_KEYS)}"
            raise ConfigError(f"{pyproject}: unknown key {key!r} in [tool.pv]{hint}")
    return table


def _packages(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [p.strip() for p in value.replace(",", " ").split()]
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(f"{where}: checker_packages must be a list of module names")
    return tuple(value)


def load_config(
    start: Path | None = None,
    *,
    contracts: Path | str | None = None,
    checker_packages: Sequence[str] | None = None,
    evidence: Path | str | None = None,
    trusted_keys: Path | str | None = None,
) -> PvConfig:
    """Resolve the configuration for a command started at ``start`` (default: the current directory)."""
    cwd = Path.cwd()
    start = (start or cwd).resolve()
    pyproject = find_pyproject(start)
    table = _read_table(pyproject) if pyproject else {}
    root = pyproject.parent if pyproject else (start if start.is_dir() else start.parent)

    def from_table(key: str, default: str) -> Path:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"{pyproject}: [tool.pv] {key} must be a path string")
        return (root / value).resolve()

    contracts_path = (
        (cwd / contracts).resolve() if contracts is not None else from_table("contracts", DEFAULT_CONTRACTS)
    )
    evidence_path = (cwd / evidence).resolve() if evidence is not None else from_table("evidence", DEFAULT_EVIDENCE)
    if checker_packages:
        packages = _packages(list(checker_packages), "command line")
    elif "checker_packages" in table:
        packages = _packages(table["checker_packages"], f"{pyproject}: [tool.pv]")
    else:
        packages = DEFAULT_CHECKER_PACKAGES
    keys: Path | None
    if trusted_keys is not None:
        keys = (cwd / trusted_keys).resolve()
    elif os.environ.get("PV_TRUSTED_KEYS"):
        keys = (cwd / os.environ["PV_TRUSTED_KEYS"]).resolve()
    elif "trusted_keys" in table:
        keys = from_table("trusted_keys", "")
    else:
        keys = None
    faults = (
        _packages(table["fault_packages"], f"{pyproject}: [tool.pv] fault_packages")
        if "fault_packages" in table
        else ()
    )
    max_nproc = table.get("max_nproc", 8)
    if not isinstance(max_nproc, int) or isinstance(max_nproc, bool) or not 1 <= max_nproc <= 4096:
        raise ConfigError(f"{pyproject}: [tool.pv] max_nproc must be a whole number from 1 to 4096")
    write = table.get("write_evidence", False)
    if not isinstance(write, bool):
        raise ConfigError(f"{pyproject}: [tool.pv] write_evidence must be true or false")
    dialect = table.get("dialect", "pv")
    if dialect not in DIALECTS:
        raise ConfigError(f"{pyproject}: [tool.pv] dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    return PvConfig(
        root=root.resolve(),
        contracts=contracts_path,
        checker_packages=packages,
        evidence=evidence_path,
        pyproject=pyproject,
        trusted_keys=keys,
        write_evidence=write,
        dialect=dialect,
        fault_packages=faults,
        max_nproc=max_nproc,
    )


def ensure_importable(root: Path) -> None:
    """Put the repository root on ``sys.path`` so that its checker packages import.

    A console script's ``sys.path`` starts at the script's directory, not the current one, so
    ``falsifiers`` would not resolve from the repository root without this.
    """
    entry = str(root.resolve())
    if entry not in sys.path:
        sys.path.insert(0, entry)
