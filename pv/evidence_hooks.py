"""pytest side of the evidence writer: options, the crash-safe journal, a bundle per contract.

Loaded by the pv plugin (``pytest_plugins = ["pv.evidence_hooks"]``).

Evidence is written on purpose: a plain local ``pytest`` leaves ``evidence/`` alone.  A run writes
bundles when asked by ``--pv-evidence``, the ini option ``pv_write_evidence = true`` or
``[tool.pv] write_evidence = true``; ``--pv-no-evidence`` always wins.  While such a run goes, each
verdict is journaled the moment it arrives (:mod:`pv.evidence.journal`); the bundles are written
once, on the xdist controller, when the session ends (``pytest_pv_run_finished``), and then the
journal is removed.  A journal left by a session that died is recovered into bundles at the start
of the next evidence-writing session.

``--pv-shard K/N`` keeps the K-th of N shards of the selected falsifiers (:mod:`pv.evidence.shards`,
split by the durations earlier evidence recorded); such a run writes its part of the run, never
bundles, and ``pv evidence merge`` makes the parts one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pv.bundle.environment import capture
from pv.bundle.signing import Signer, SigningError
from pv.cases import split_name
from pv.evidence.code_binding import CodeScope
from pv.evidence.journal import Journal, died, recover_all
from pv.evidence.shards import write_part
from pv.evidence.writer import Outcome, write_run
from pv.paths import shown
from pv.pytest_settings import settings_of
from pv.results import ContractRun, FalsifierResult, RunRecord
from pv.sharding import configure_shard, hand_over_split, shard_of, shard_split, take_split

_PLAN_KEY = pytest.StashKey["_Plan"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pv")
    group.addoption(
        "--pv-evidence",
        dest="pv_evidence",
        action="store_true",
        default=False,
        help="write evidence bundles for this run (also: ini pv_write_evidence, [tool.pv] write_evidence)",
    )
    group.addoption(
        "--pv-evidence-dir",
        dest="pv_evidence_dir",
        default=None,
        metavar="DIR",
        help="where evidence bundles are written (default: ini pv_evidence, [tool.pv] evidence, else evidence/)",
    )
    group.addoption(
        "--pv-no-evidence",
        dest="pv_no_evidence",
        action="store_true",
        default=False,
        help="write no evidence bundles for this run, whatever the configuration says",
    )
    group.addoption(
        "--pv-shard",
        dest="pv_shard",
        default=None,
        metavar="K/N",
        help="run the K-th of N shards of the selected falsifiers, split by the durations earlier evidence "
        "recorded; with evidence on, write this shard's part for `pv evidence merge` instead of bundles",
    )
    group.addoption(
        "--pv-signing-key",
        dest="pv_signing_key",
        default=None,
        metavar="FILE",
        help="ed25519 private key (PEM) to sign bundles with (default: $PV_SIGNING_KEY, $PV_SIGNING_KEY_FILE)",
    )


def writes_evidence(config: pytest.Config) -> bool:
    """Whether this process writes bundles: the resolved ``write_evidence`` (``--pv-evidence``,
    ``--pv-no-evidence``, ini ``pv_write_evidence``, ``[tool.pv] write_evidence``), never on an
    xdist worker."""
    return settings_of(config).write_evidence and not hasattr(config, "workerinput")


@dataclass
class _Plan:
    """What this process does about evidence, decided once at configure time."""

    target: Path | None = None  # where bundles go; None: this process writes none
    signer: Signer | None = None
    keys_trusted: bool = False  # [tool.pv] trusted_keys is set: unsigned bundles will not count
    journal: Journal | None = None


def _plan(config: pytest.Config) -> _Plan:
    return config.stash.get(_PLAN_KEY, None) or _Plan()


def pytest_sessionfinish(session: pytest.Session) -> None:
    hand_over_split(session)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    take_split(node)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    configure_shard(config)
    settings = settings_of(config)
    if not writes_evidence(config):
        config.stash[_PLAN_KEY] = _Plan()
        return
    key = config.getoption("pv_signing_key")
    try:
        signer = Signer.from_environment(Path(key) if key else None)
    except SigningError as exc:
        raise pytest.UsageError(f"pv: cannot sign evidence: {exc}") from None
    config.stash[_PLAN_KEY] = _Plan(settings.evidence, signer, settings.trusted_keys is not None)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    plan = _plan(config)
    target = plan.target
    if target is None:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in died(target):
        if reporter is not None:
            reporter.write_line(f"pv evidence: {line}", yellow=True, bold=True)
    outcomes = recover_all(target, config.rootpath, lambda: capture(config.rootpath, exclude=[target]), plan.signer)
    _report(config, outcomes, "pv evidence (recovered from a session that died)")
    # pv.plugin loads this module as one of its pytest_plugins: at import time pv.plugin is not loaded yet
    from pv.plugin import pv_session

    pv = pv_session(config)
    if pv is None:
        return
    plan.journal = Journal(target, pv.run_id)
    plan.journal.session(
        RunRecord(
            run_id=pv.run_id,
            started_at=pv.started_at,
            finished_at="",
            mutants_enabled=settings_of(config).mutants,
            selection=pv.selection_text(),
            settings=pv.run_settings(),
        )
    )


@pytest.hookimpl(optionalhook=True)
def pytest_pv_falsifier_started(config: pytest.Config, nodeid: str, contract: ContractRun) -> None:
    journal = _plan(config).journal
    if journal is not None:
        journal.contract(contract)
        fid, case = split_name(nodeid.split("::", 1)[1])
        journal.start(nodeid, contract.contract_id, fid, fid in contract.ship_blocking, case)


@pytest.hookimpl(optionalhook=True)
def pytest_pv_falsifier_finished(
    config: pytest.Config, nodeid: str, result: FalsifierResult, contract: ContractRun
) -> None:
    journal = _plan(config).journal
    if journal is not None:
        journal.contract(contract)
        journal.result(nodeid, result)


@pytest.hookimpl(optionalhook=True)
def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    plan = _plan(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if plan.target is None:
        measured = any(r.verdict.value != "not_run" for r in run.results)
        asked_not_to = config.getoption("pv_no_evidence") or hasattr(config, "workerinput")
        if measured and reporter is not None and not asked_not_to:
            reporter.write_line("pv evidence: not written (pass --pv-evidence to record this run)")
        return
    environment = capture(config.rootpath, exclude=[plan.target])
    shard = shard_of(config)
    if shard is not None:
        part = write_part(run, plan.target, *shard, shard_split(config) or {}, environment, plan.signer)
        _close_journal(plan)
        if reporter is not None:
            reporter.write_line(
                f"pv evidence: shard {shard[0]} of {shard[1]} -> {_shown(part, config)} "
                "(make the parts one run with `pv evidence merge`)"
            )
        return
    scope = CodeScope.of(settings_of(config))
    outcomes = write_run(run, plan.target, config.rootpath, environment, plan.signer, scope)
    _close_journal(plan)
    _report(config, outcomes, "pv evidence")
    if plan.keys_trusted and plan.signer is None and outcomes and reporter is not None:
        reporter.write_line(
            "pv evidence: WARNING: trusted keys are configured but these bundles are unsigned, so they "
            "will not count (set PV_SIGNING_KEY or --pv-signing-key)",
            yellow=True,
            bold=True,
        )


def _close_journal(plan: _Plan) -> None:
    """What the journal held is written (bundles or a part): it goes."""
    if plan.journal is not None:
        plan.journal.close()
        plan.journal = None


def _report(config: pytest.Config, outcomes: list[Outcome], label: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    for o in outcomes:
        if o.path is not None:
            reporter.write_line(f"{label}: {o.contract_id} -> {_shown(o.path, config)}")
        else:
            reporter.write_line(f"{label}: {o.contract_id}: NOT written: {o.reason}", yellow=True, bold=True)


def _shown(path: Path, config: pytest.Config) -> str:
    return shown(path, config.invocation_params.dir)
