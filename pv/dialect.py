"""The Rust dialect: contracts as the Rust ``pv`` (provable-contracts) writes them, read as they are.

Upstream's serde structs ignore fields they do not know, its proof obligations carry no ``id``
(falsifiers and Kani harnesses point at them by other means), its ids are unique per contract,
not per tree, and its contract folders hold data files (model-family tables) beside contracts.
Under ``[tool.pv] dialect = "rust"`` (or ``pv validate --dialect rust``) those conventions are
accepted and reported as warnings, never errors:

* an unknown key is a warning (PV102) and the contract loads without it (the loader does this);
* a YAML file with no ``metadata`` is skipped with a note, not reported as a broken contract;
* an id that breaks pv's patterns (PV105) and an ``obligation:`` that names no obligation id
  (PV124) are warnings;
* a FALSIFY, obligation or Kani id declared in two files is a warning; twice in one file it is
  still an error, as it is upstream.

Everything else (bad YAML, a wrong type, a missing required field, an unparsable ``expect``)
stays an error: those are real defects in either dialect.
"""

from __future__ import annotations

from collections.abc import Iterable

from pv import rules
from pv.diagnostics import Diagnostic, Severity

RELAXED_CODES = frozenset({rules.INVALID_ID.code, rules.UNRESOLVED_OBLIGATION.code, rules.UNKNOWN_KEY.code})


def relax(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics with the upstream conventions turned into warnings."""
    return [d.with_severity(Severity.WARNING) if d.code in RELAXED_CODES else d for d in diagnostics]
