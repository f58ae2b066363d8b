"""pv: a contract-first falsification harness for ML training and inference code."""

from pv.checkers import checker
from pv.faults import FaultRegistry
from pv.patch_faults import PatchFaults

__all__ = ["FaultRegistry", "PatchFaults", "__version__", "checker"]
__version__ = "0.1.0"
