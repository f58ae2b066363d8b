"""Renderers of a :class:`~pv.lint.runner.LintReport`: text, json, sarif, github."""

from __future__ import annotations

from collections.abc import Callable

from pv.lint.formats import github, json_report, sarif, text
from pv.lint.runner import LintReport

FORMATS: dict[str, Callable[[LintReport], str]] = {
    "text": text.render,
    "json": json_report.render,
    "sarif": sarif.render,
    "github": github.render,
}
