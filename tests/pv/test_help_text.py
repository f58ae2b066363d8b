"""Command help reads as written: a description is one paragraph the terminal wraps, never broken
where the docstring's source lines happened to end."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pv.help_text import one_paragraph_per_line

ROOT = Path(__file__).resolve().parents[2]


def test_paragraph_lines_join_and_paragraphs_stay_apart() -> None:
    doc = """First line of a sentence
        that goes on here.

        Second paragraph,
        also joined.
    """
    joined = "First line of a sentence that goes on here.\n\nSecond paragraph, also joined."
    assert one_paragraph_per_line(doc) == joined


def _first_paragraphs(app_module: str, command_modules: list[str]) -> dict[str, str]:
    app = importlib.import_module(app_module).app
    for name in command_modules:
        importlib.import_module(name)
    out = {}
    for command in app.registered_commands:
        doc = command.callback.__doc__ if command.callback else None
        if doc:
            name = command.name or command.callback.__name__.replace("_", "-")
            out[name] = one_paragraph_per_line(doc).split("\n\n")[0]
    return out


@pytest.mark.parametrize(
    ("argv", "app_module", "modules_from"),
    [
        (["pv", "--help"], "pv.app", "pv.cli"),
        ([sys.executable, "-m", "engine", "--help"], "engine.app", "engine.__main__"),
    ],
    ids=["pv", "engine"],
)
def test_each_command_description_is_one_unbroken_line_on_a_wide_terminal(
    argv: list[str], app_module: str, modules_from: str
) -> None:
    modules = importlib.import_module(modules_from).COMMAND_MODULES
    expected = _first_paragraphs(app_module, modules)
    assert len(expected) >= 5
    env = {**os.environ, "COLUMNS": "240", "TERM": "dumb"}
    if argv[0] == "pv":
        argv = [sys.executable, "-c", "from pv.cli import main; main()", "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env).stdout
    lines = [" ".join(line.replace("│", " ").split()) for line in out.splitlines()]
    checked = 0
    for name, text in expected.items():
        if len(text) > 200:  # would wrap even at this width
            continue
        assert any(text in line for line in lines), f"{name}: {text!r} is broken across lines:\n{out}"
        checked += 1
    assert checked >= 5
