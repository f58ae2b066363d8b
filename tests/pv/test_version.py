"""``pv --version`` prints the installed version and runs no command."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

import pv
from pv.app import app


def test_version_matches_the_distribution() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"pv {pv.__version__}\n"
    assert pv.__version__ == version("pv-harness")
