"""Hooks the pv pytest plugin adds; other plugins (the evidence writer) implement them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pv.results import ContractRun, FalsifierResult, RunRecord


@pytest.hookspec(historic=False)
def pytest_pv_falsifier_started(config: pytest.Config, nodeid: str, contract: ContractRun) -> None:
    """Called on the xdist controller (or the only process) as a falsifier begins."""


@pytest.hookspec(historic=False)
def pytest_pv_falsifier_finished(
    config: pytest.Config, nodeid: str, result: FalsifierResult, contract: ContractRun
) -> None:
    """Called on the controller as each falsifier's result arrives (the evidence journal's cue).

    A phase report may carry a result more than once (setup, then call); the last one counts."""


@pytest.hookspec(historic=False)
def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    """Called once per session, on the xdist controller (or the only process), with every result.

    ``run.contracts`` holds every contract that had at least one falsifier selected (with the
    sha256 of its bytes as collected); ``run.results`` holds exactly one
    :class:`~pv.results.FalsifierResult` per falsifier those contracts declare: the verdict of
    each one that ran, ``not_run`` for the deselected and the interrupted.  Contracts that failed
    to load are not in the record (their items fail the run instead).
    """
