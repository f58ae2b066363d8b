"""The contracts a lint run sees: each file's model, bytes digest and a way to point at a YAML key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.diagnostics import Diagnostic
from pv.lint.findings import KeyPath
from pv.loader import contract_id, contract_stem
from pv.model import Contract

Locator = Callable[[KeyPath], tuple[int, int]]


@dataclass
class LintContract:
    path: Path  # absolute
    rel: str  # relative to the repository root, forward slashes
    sha256: str
    contract: Contract | None
    data: dict[str, Any] | None
    locator: Locator = field(repr=False)

    @property
    def stem(self) -> str:
        return contract_stem(self.path)

    @property
    def id(self) -> str:
        """The declared id, or the file stem when none is declared (the Rust dialect allows that)."""
        return contract_id(self.contract.metadata.id if self.contract is not None else None, self.path)

    def locate(self, keypath: KeyPath) -> tuple[int, int]:
        """1-based (line, col) of the deepest existing node on ``keypath``; (1, 1) as a last resort."""
        try:
            return self.locator(keypath)
        except Exception:  # a location is a courtesy; never let it crash a lint run
            return (1, 1)


@dataclass
class LintTree:
    root: Path  # the contracts directory that was linted
    contracts: list[LintContract]
    validate_diagnostics: list[Diagnostic]
    validate_counts: dict[str, int] = field(default_factory=dict)
    reloaded: int = 0  # files that had to be parsed this run (the rest came from the cache)
    load_s: float = 0.0  # time spent finding, reading and validating the files

    def valid(self) -> Iterator[tuple[LintContract, Contract]]:
        """Contracts whose model loaded; gates after ``validate`` only look at these."""
        for c in self.contracts:
            if c.contract is not None:
                yield c, c.contract
