"""Hooks the pv pytest plugin adds; other plugins (the evidence writer) implement them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pv.results import RunRecord


@pytest.hookspec(historic=False)
def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    """Called once per session, on the xdist controller (or the only process), with every result.

    ``run.results`` holds exactly one :class:`~pv.results.FalsifierResult` per collected
    falsifier: the verdict of those that ran, ``not_run`` for deselected or interrupted ones.
    """
