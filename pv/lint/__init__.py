"""``pv lint``: quality gates over a contracts tree, each able to fail, with a ratchet and a baseline.

Public API::

    from pv.config import load_config
    from pv.lint import LintOptions, lint

    report = lint(load_config(), LintOptions(strict=True))
    report.exit_code, report.gates, report.findings

Renderers live in :mod:`pv.lint.formats` (``renderer("text" | "json" | "sarif" | "github")``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pv.config import PvConfig
    from pv.lint.findings import Finding, fingerprint
    from pv.lint.runner import GATE_NAMES, GateResult, LintOptions, LintReport

# The names below load on first use, not with the package: a `pv lint` with nothing changed replays
# its stored report (pv.lint.replay) and exits before any gate, pydantic model or YAML reader loads.
_HOMES = {
    "Finding": "pv.lint.findings",
    "fingerprint": "pv.lint.findings",
    "GATE_NAMES": "pv.lint.runner",
    "GateResult": "pv.lint.runner",
    "LintOptions": "pv.lint.runner",
    "LintReport": "pv.lint.runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pv.lint' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def lint(config: PvConfig, options: LintOptions | None = None) -> LintReport:
    """Load the tree (reusing ``.pv/`` unless ``options.use_state`` is off), run every gate."""
    # a full run's machinery, loaded when one runs (see _HOMES)
    from pv.config import ensure_importable
    from pv.gc_passes import without_gc_passes
    from pv.lint import runner
    from pv.lint.load import TreeLoader
    from pv.lint.state import StateDir

    options = options or runner.LintOptions()
    ensure_importable(config.root)
    loader = TreeLoader(config, strict=options.strict, state=StateDir(config.state_dir) if options.use_state else None)
    with without_gc_passes():  # the tree lives to the end: the gates and the save would rescan it
        tree = loader.load()
        report = runner.run_lint(config, tree, options, project=loader.project)
        loader.save(tree)
    return report


__all__ = [
    "GATE_NAMES",
    "Finding",
    "GateResult",
    "LintOptions",
    "LintReport",
    "fingerprint",
    "lint",
]
