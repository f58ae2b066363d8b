"""pv: a contract-first falsification harness for ML training and inference code."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pv.checkers import checker
    from pv.faults import FaultRegistry
    from pv.patch_faults import PatchFaults

__all__ = ["FaultRegistry", "PatchFaults", "__version__", "checker"]
__version__ = "0.1.0"

# The package's names load on first use: every `pv` command imports the package, and most never
# need unittest.mock (PatchFaults) or the checker registry.
_HOMES = {"checker": "pv.checkers", "FaultRegistry": "pv.faults", "PatchFaults": "pv.patch_faults"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pv' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
