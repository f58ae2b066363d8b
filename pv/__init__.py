"""pv: a contract-first falsification harness for ML training and inference code."""

from pv.checkers import checker
from pv.faults import FaultRegistry

__all__ = ["FaultRegistry", "__version__", "checker"]
__version__ = "0.1.0"
