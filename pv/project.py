"""The project a command or a pytest run works on: its settings and its contracts, each read once.

:class:`Project` is built in one place (:meth:`Project.open` for a ``pv`` command, the plugin's
configure hook for a pytest run) and handed to whatever needs a contract: validate, lint, status,
promote, report, evidence gc and verify, collection.  A contract file is read and parsed once per
project, by pv's loader, into a :class:`ProjectContract`: its bytes' digest, its binding digest,
its id and where to show it.  Evidence is bound to exactly these values, so every command
compares bundles against the same reading of the file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pv.bundle.digest import (
    ContractUnreadable,
    binding_digest_of,
    first_error,
    read_contract,
    sha256_bytes,
    sha256_file,
)
from pv.config import PvConfig, load_config
from pv.forked_read import read_files
from pv.loader import LoadedContract, find_contract_files, load_contract_file


@dataclass(frozen=True)
class ProjectContract:
    """A contract as it stands now, read once through pv's loader: what bundles are bound to."""

    path: Path
    id: str
    version: str
    sha256: str
    data: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    loaded: LoadedContract | None = field(default=None, compare=False, repr=False)

    @cached_property
    def _binding(self) -> tuple[str | None, str]:
        # computed when evidence is compared, not for every file validate or lint reads
        if self.data is None:
            return None, first_error(self.loaded) if self.loaded is not None else "the contract does not parse"
        try:
            return binding_digest_of(self.data), ""
        except ContractUnreadable as exc:
            return None, str(exc)

    @property
    def binding_digest(self) -> str | None:
        """The digest evidence is bound to; None when the contract does not load."""
        return self._binding[0]

    @property
    def problem(self) -> str:
        """Why there is no binding digest ("" when there is one)."""
        return self._binding[1]

    @property
    def ok(self) -> bool:
        """It loads and validates against the schema."""
        return self.loaded is not None and self.loaded.ok

    @classmethod
    def read(cls, path: Path, dialect: str = "pv") -> ProjectContract:
        """``path`` through the loader's guarded read (no FIFOs, the size cap, symlink loops)."""
        return cls.of_file(path, load_contract_file(path, dialect=dialect))

    @classmethod
    def of_file(cls, path: Path, loaded: LoadedContract) -> ProjectContract:
        """From the loader's reading of the file at ``path``."""
        if loaded.sha256 is None and path.is_file():
            with contextlib.suppress(OSError):  # over the cap: still hashed, so its bundles read as stale
                loaded.sha256 = sha256_file(path)
        return cls.from_loaded(loaded)

    @classmethod
    def from_bytes(cls, path: Path, raw: bytes, dialect: str = "pv") -> ProjectContract:
        loaded = read_contract(raw, path, dialect)
        if loaded.sha256 is None:  # refused before hashing (over the size cap)
            loaded.sha256 = sha256_bytes(raw)
        return cls.from_loaded(loaded)

    @classmethod
    def from_loaded(cls, loaded: LoadedContract) -> ProjectContract:
        """From a contract pv's loader already read."""
        meta = loaded.data.get("metadata") if loaded.data else None
        version = str(meta.get("version", "")) if isinstance(meta, dict) else ""
        return cls(loaded.path, loaded.id, version, loaded.sha256 or "", loaded.data, loaded)


class Project:
    """Resolved settings plus every contract read so far (one :class:`ProjectContract` per file)."""

    def __init__(self, config: PvConfig) -> None:
        self.config = config
        self._contracts: dict[str, ProjectContract] = {}

    @classmethod
    def open(cls, start: Path | None = None, **cli: Any) -> Project:
        """The project at ``start`` with a ``pv`` command's options (see :func:`pv.config.load_config`).

        Raises :class:`pv.config.ConfigError` for a malformed setting."""
        return cls(load_config(start, **cli))

    @property
    def root(self) -> Path:
        return self.config.root

    def files(self, paths: Iterable[Path] | None = None) -> list[Path]:
        """The contract files under ``paths`` (default: every configured contracts folder)."""
        return find_contract_files(list(paths) if paths else list(self.config.contract_dirs))

    def contract(self, path: Path) -> ProjectContract:
        """``path`` read and parsed once for this project, in the project's dialect."""
        key = os.path.abspath(path)
        found = self._contracts.get(key)
        if found is None:
            found = self._contracts[key] = ProjectContract.read(Path(path), self.config.dialect)
        return found

    def read_all(self, paths: Sequence[Path]) -> list[ProjectContract]:
        """Each of ``paths`` as :meth:`contract` gives it; those not read yet are read together,
        over worker processes where there are many (:mod:`pv.forked_read`)."""
        todo = [Path(p) for p in paths if os.path.abspath(p) not in self._contracts]
        for path, loaded in zip(todo, read_files(todo, self.config.dialect), strict=True):
            self._contracts[os.path.abspath(path)] = ProjectContract.of_file(path, loaded)
        return [self.contract(p) for p in paths]

    def take(self, path: Path) -> ProjectContract:
        """``path``'s reading, no longer kept: for a command that visits each contract once.

        A thousand parsed contracts held alive cost the garbage collector more than the reading
        itself (``pv promote --check`` on 1,000 contracts: 4.1 s kept, 3.7 s taken)."""
        return self._contracts.pop(os.path.abspath(path), None) or ProjectContract.read(Path(path), self.config.dialect)

    def contracts(self, paths: Sequence[Path] | None = None) -> list[ProjectContract]:
        return [self.contract(p) for p in self.files(paths)]

    def locator(self, path: Path | str) -> str:
        """How to show ``path``: relative to the root with forward slashes, else absolute."""
        return self.config.relpath(path)
