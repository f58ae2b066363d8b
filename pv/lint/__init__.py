"""``pv lint``: quality gates over a contracts tree, each able to fail, with a ratchet and a baseline.

Public API::

    from pv.config import load_config
    from pv.lint import LintOptions, lint

    report = lint(load_config(), LintOptions(strict=True))
    report.exit_code, report.gates, report.findings

Renderers live in :mod:`pv.lint.formats` (``renderer("text" | "json" | "sarif" | "github")``).
"""

from __future__ import annotations

from pv.config import PvConfig, ensure_importable
from pv.lint.findings import Finding, fingerprint
from pv.lint.load import TreeLoader
from pv.lint.runner import GATE_NAMES, GateResult, LintOptions, LintReport, run_lint
from pv.lint.state import StateDir


def lint(config: PvConfig, options: LintOptions | None = None) -> LintReport:
    """Load the tree (reusing ``.pv/`` unless ``options.use_state`` is off), run every gate."""
    options = options or LintOptions()
    ensure_importable(config.root)
    loader = TreeLoader(config, strict=options.strict, state=StateDir(config.state_dir) if options.use_state else None)
    tree = loader.load()
    report = run_lint(config, tree, options, project=loader.project)
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
