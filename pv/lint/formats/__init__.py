"""Renderers of a :class:`~pv.lint.runner.LintReport`: text, json, sarif, github."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from pv.lint.runner import LintReport

# name -> module with a ``render(report) -> str``; imported on use, so a run pays for one
MODULES: dict[str, str] = {
    "text": "pv.lint.formats.text",
    "json": "pv.lint.formats.json_report",
    "sarif": "pv.lint.formats.sarif",
    "github": "pv.lint.formats.github",
}


def renderer(name: str) -> Callable[[LintReport], str]:
    render: Callable[[LintReport], str] = importlib.import_module(MODULES[name]).render
    return render
