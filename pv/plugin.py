"""pytest plugin: compiles contracts' ``FALSIFY-*`` entries into pytest items and judges them.

Loaded through the ``pytest11`` entry point, so any project that installs pv gets it.

- Collection (:mod:`pv.collect`): every ``*.yaml``/``*.yml`` under the contracts directories
  (``--pv-contracts``, ini ``pv_contracts``, ``[tool.pv] contracts``, default ``contracts/``)
  becomes one item per falsifier.  When pytest is started without path arguments and ``-m``/``-k``
  select falsifiers (a pv marker or a FALSIFY id), the contracts directories are added to what it
  collects, so ``pytest -m ship_blocking`` finds them even where ``testpaths`` names only
  ``tests/``; a plain ``pytest`` keeps to ``testpaths``.
- Running: each item hands itself to :func:`pv.runner.run_falsifier` (requirements, checker
  binding, the call with a deadline, the verdict, and with ``--pv-mutants`` the mutant re-run) and
  :mod:`pv.outcomes` turns the result into a pytest outcome; the hooks here only report it.
- Results: each item's :class:`~pv.results.FalsifierResult` rides on its test report (as JSON),
  so under pytest-xdist the controller receives every worker's results through pytest's own
  report serialisation, exactly once per node id.  At session end the controller builds a
  :class:`~pv.results.RunRecord`, calls ``pytest_pv_run_finished`` and prints the denominators.
"""

from __future__ import annotations

import gc
import json
import os
import uuid
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pv import hookspecs
from pv.cases import aggregate_failures, split_name, verdicts
from pv.collect import (
    INVALID_ITEM_NAME,
    ContractFile,
    FalsifierItem,
    InvalidContractItem,
    contract_run,
    new_artifact_dir,
    property_runner,
)
from pv.config import DEFAULT_TIMEOUT_S, ensure_importable
from pv.devices import pin_this_worker
from pv.evidence.code_binding import CodeScope
from pv.faults import ENV_VAR
from pv.loader import CONTRACT_SUFFIXES, is_contract_name
from pv.outcomes import ContractFailure, skip_is_verdict
from pv.pytest_settings import configure, project_of, register_ini, settings_of
from pv.results import ContractRun, FalsifierResult, RunRecord, Verdict
from pv.runner import OTHER
from pv.selection import unregistered_markers
from pv.sharding import keep_shard, shard_split

if TYPE_CHECKING:
    from pv.collect import FalsifierItem
    from pv.hypothesis_support import PropertyRunner

MARKERS = {
    "ship_blocking": "falsifier whose falsification blocks a release (or a contract that failed to load)",
    "advisory": "falsifier that is reported but never blocks",
    "requires_gpu": "falsifier that needs a CUDA GPU (`requires: cuda`, `cuda_mem_gib>=N`, `cuda_free_gib>=N`, "
    "`gpus>=N`)",
    "slow": "falsifier marked `slow: true` in its contract",
    "contract(id)": "the contract a falsifier belongs to (select with -m \"contract(id='<contract-id>')\")",
}
# The evidence writer: --pv-evidence-dir / --pv-no-evidence and a bundle per contract at session end.
pytest_plugins = ["pv.evidence_hooks", "pv.mutation_hooks", "pv.review_hooks"]


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """Collection allocates in bulk (a contract tree of thousands of falsifiers): without the cyclic
    garbage collector it does not rescan the growing heap over and over, and what it built, which
    lives for the whole session, is frozen out of every later collection's scan."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


_SESSION_PLUGIN = "pv-session"


# --- configuration ---------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    register_ini(parser)
    group = parser.getgroup("pv", "pv contract falsification")
    group.addoption(
        "--pv-contracts",
        action="append",
        default=None,
        metavar="DIR",
        help="directory of contract YAML files (repeatable; default: ini pv_contracts, else contracts/)",
    )
    group.addoption(
        "--pv-mutants",
        action="store_true",
        default=None,
        help="after a falsifier survives, re-run it under its mutant and require `falsified`",
    )
    group.addoption(
        "--pv-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"default per-falsifier timeout (ini pv_timeout_s; default {DEFAULT_TIMEOUT_S:g}; "
        "0: no deadline, the checker runs in the main thread)",
    )
    group.addoption(
        "--pv-isolation",
        choices=["auto", "thread", "process"],
        default=None,
        help="where checkers run unless a falsifier says (ini pv_isolation; default auto): thread; process "
        "(forked; killed with its children at the deadline; a crash is an error); auto: process for "
        "ship-blocking falsifiers that need no GPU, thread for the rest",
    )
    group.addoption(
        "--pv-vram-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wait up to SECONDS for `cuda_free_gib>=N` to be met before skipping (ini pv_vram_wait_s; default 0)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # The earliest hook a plugin gets: an xdist worker is pinned to its GPU before any conftest
    # can import torch and initialise CUDA (which reads CUDA_VISIBLE_DEVICES once).
    from pv.devices import pin_this_worker

    pin_this_worker()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        pin_this_worker()  # idempotent; covers a plugin loaded after the conftests (-p pv.plugin)
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    settings = configure(config)
    # The same rule as every pv command: the project root comes first on sys.path, so a checker
    # package that lint binds is one pytest imports (the `pytest` script does not add the cwd).
    ensure_importable(settings.root)
    _add_contract_dirs(config, settings.contract_dirs)
    config.pluginmanager.register(PvSession(config), _SESSION_PLUGIN)


_PV_SELECTORS = ("ship_blocking", "advisory", "requires_gpu", "contract", "FALSIFY")


def _asks_for_contracts(config: pytest.Config) -> bool:
    """True when ``-m``/``-k`` name a pv marker or a FALSIFY id: the user is selecting falsifiers."""
    selection = f"{config.option.markexpr or ''} {config.option.keyword or ''}"
    return any(word in selection for word in _PV_SELECTORS)


def _add_contract_dirs(config: pytest.Config, dirs: Iterable[Path]) -> None:
    """Collect the contracts too for ``pytest -m ship_blocking`` run from the rootdir with no paths.

    A plain ``pytest`` keeps to ``testpaths``: running every falsifier (and writing evidence) is
    asked for by selecting falsifiers or by naming the contracts folder, never by default.
    """
    if config.args_source is pytest.Config.ArgsSource.ARGS or hasattr(config, "workerinput"):
        return
    if not _asks_for_contracts(config):
        return
    if config.invocation_params.dir.resolve() != config.rootpath.resolve():
        return  # plain `pytest` inside a subfolder means that folder's tests
    cwd = config.invocation_params.dir
    roots = [(cwd / a.split("::")[0]).resolve() for a in config.args]
    for d in dirs:
        if d.is_dir() and not any(d == r or d.is_relative_to(r) for r in roots):
            config.args.append(str(d))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not file_path.name.endswith(CONTRACT_SUFFIXES):
        return None
    named = parent.session.isinitpath(file_path)
    if not named and not is_contract_name(file_path.name):
        return None  # a hidden file in a scanned folder: skipped here exactly as pv validate/lint skip it
    settings = settings_of(parent.config)
    resolved = file_path.resolve()
    inside = any(resolved.is_relative_to(d) for d in settings.contract_dirs)
    if not inside and not named:
        return None

    return ContractFile.from_parent(parent, path=file_path)


# --- fixtures a checker may ask for ----------------------------------------------------------


@pytest.fixture
def pv_artifacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh directory for files the checker writes; they are recorded as the result's artifacts."""

    return new_artifact_dir(request.node, tmp_path_factory)


@pytest.fixture
def pv_hypothesis(request: pytest.FixtureRequest) -> PropertyRunner:
    """A :class:`pv.hypothesis_support.PropertyRunner` with the falsifier's ``hypothesis:`` settings."""

    return property_runner(request.node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield

    failure = call.excinfo.value if call.excinfo is not None else None
    if report.when == "call" and report.failed and isinstance(failure, ContractFailure):
        report.pv_outcome = failure.kind
    if isinstance(item, FalsifierItem):
        result = _result_for_phase(item, report)
        if result is not None:
            report.pv_result = json.dumps(result.to_json(), sort_keys=True)
            report.pv_contract = json.dumps(asdict(item.contract), sort_keys=True)
            report.user_properties.append(("pv_verdict", result.verdict.value))
            # the item's too: junit XML (--junitxml) writes the properties of the teardown report
            item.user_properties = [p for p in item.user_properties if p[0] != "pv_verdict"]
            item.user_properties.append(("pv_verdict", result.verdict.value))
    elif isinstance(item, InvalidContractItem) and report.when == "call":
        report.pv_invalid = item.contract_id
    return report


def _result_for_phase(item: FalsifierItem, report: pytest.TestReport) -> FalsifierResult | None:
    """The result to attach to this phase's report: the call's, or the setup's when it did not pass."""

    if report.when == "call":
        result: FalsifierResult | None = item.pv_result
        if result is None:
            result = item.pv_result = item.new_result()
        # Whatever ended the call outside the verdict logic (a fixture that skipped, an
        # unexpected exception) still leaves exactly one verdict that matches the pytest outcome.
        if report.skipped and not skip_is_verdict(result):
            result.verdict = Verdict.SKIPPED
            result.skip_reason = _skip_text(report)
            result.skip_kind = OTHER
        elif report.failed and result.verdict in (Verdict.NOT_RUN, Verdict.SKIPPED):
            result.verdict = Verdict.ERROR
            result.message = f"ERROR {item.label}: the harness failed\n{report.longrepr}"
        return result
    if report.when == "setup" and not report.passed:
        result = item.new_result(Verdict.SKIPPED if report.skipped else Verdict.ERROR)
        if report.skipped:
            result.skip_reason = _skip_text(report)
            result.skip_kind = OTHER
        else:
            result.message = f"ERROR {item.label}: setup failed\n{report.longrepr}"
        item.pv_result = result
        return result
    return None


_STATUS_WORDS = {
    "falsified": "FALSIFIED",
    "error": "ERROR",
    "vacuous": "VACUOUS",
    "invalid": "INVALID",
    "broken": "BROKEN",
}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """``-v`` says which kind of failure it was; counts stay pytest's own ("failed")."""
    word = _STATUS_WORDS.get(getattr(report, "pv_outcome", ""))
    if word is None or report.when != "call":
        return None
    return "failed", "F", (word, {"red": True})


def _skip_text(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr)


# --- the session: gathering results and the end-of-run record --------------------------------


class PvSession:
    """Gathers results from reports (the only channel that also works under xdist)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started_at = _utc_now()
        self.run_id = uuid.uuid4().hex
        # read now: mutant runs put their fault in PV_FAULTS for the length of the run
        self.faults_env = sorted({n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()})
        self.devices = os.environ.get("PV_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES")
        self._reloaded: dict[str, ContractRun | None] = {}
        self.results: dict[str, FalsifierResult] = {}
        self.contracts: dict[str, ContractRun] = {}
        self.invalid: dict[str, str] = {}
        self.selected: set[str] | None = None  # node ids of selected pv items, when known
        self.selected_contracts: dict[str, ContractRun] = {}
        self.zero_selection: str | None = None
        self.record: RunRecord | None = None
        self.aggregate_failures: list[str] = []

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        keep_shard(self.config, items, FalsifierItem)  # after -m / -k: the shard of what they selected
        self.selected = {i.nodeid for i in items if isinstance(i, FalsifierItem | InvalidContractItem)}
        for i in items:
            if isinstance(i, FalsifierItem):
                self.selected_contracts[i.nodeid] = i.contract

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Every worker collects the same items; the first report is the selection.
        if self.selected is None:
            self.selected = {i for i in ids if _is_contract_nodeid(i)}

    def contract_of(self, nodeid: str) -> ContractRun | None:
        """The contract of a falsifier's node id: from collection, else read again (xdist controller)."""
        run = self.selected_contracts.get(nodeid)
        if run is None:
            path = nodeid.split("::")[0]
            if path not in self._reloaded:
                try:
                    self._reloaded[path] = _reload_contract(self.config, nodeid)
                except Exception:  # a contract that no longer loads: nothing to attach it to
                    self._reloaded[path] = None
            run = self._reloaded[path]
        return run

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "pv_result", None)
        before = self.results.get(report.nodeid)
        if data:
            self.results[report.nodeid] = FalsifierResult.from_json(json.loads(data))
            contract = ContractRun(**json.loads(report.pv_contract))
            self.contracts.setdefault(contract.contract_id, contract)
        elif report.failed and report.nodeid not in self.results and _is_falsifier_nodeid(report.nodeid):
            # A report the falsifier never made: pytest-xdist reports a worker that died mid-item
            # this way ("worker 'gw0' crashed while running ..."). It is an error, not "not run".
            run = self.contract_of(report.nodeid)
            if run is not None:
                name = report.nodeid.split("::", 1)[1]
                fid, case = split_name(name)
                self.contracts.setdefault(run.contract_id, run)
                self.results[report.nodeid] = FalsifierResult(
                    run.contract_id,
                    fid,
                    Verdict.ERROR,
                    ship_blocking=fid in run.ship_blocking,
                    case=case,
                    message=f"ERROR {run.contract_id}::{name}: {str(report.longrepr).strip() or 'the worker died'}",
                    worker=str(getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")),
                )
        after = self.results.get(report.nodeid)
        if after is not None and after is not before and not self.is_worker:
            self.config.hook.pytest_pv_falsifier_finished(
                config=self.config, nodeid=report.nodeid, result=after, contract=self.contracts[after.contract_id]
            )
        invalid = getattr(report, "pv_invalid", None)
        if invalid:
            self.invalid[report.nodeid] = invalid

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker or self.config.option.collectonly:
            if self.config.option.collectonly and not self.is_worker:
                self._check_zero_selection(session)
            return
        self._check_zero_selection(session)
        self.record = self.build_record(session, exitstatus)
        # What only an aggregate found (its predicate over every case, a mutant no case killed alone)
        # failed no item; like a coverage floor it fails the session and says why in the summary.
        self.aggregate_failures = aggregate_failures(self.record.results)
        if self.aggregate_failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.config.hook.pytest_pv_run_finished(config=self.config, run=self.record)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.is_worker or not _is_falsifier_nodeid(nodeid):
            return
        run = self.contract_of(nodeid)
        if run is not None:
            self.config.hook.pytest_pv_falsifier_started(config=self.config, nodeid=nodeid, contract=run)

    def _check_zero_selection(self, session: pytest.Session) -> None:
        markexpr = self.config.option.markexpr or ""
        selected = len(self.selected) if self.selected is not None else len(self.results) + len(self.invalid)
        if shard_split(self.config):  # the selection was not empty: a shard's share of it may be
            if selected == 0 and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
                session.exitstatus = pytest.ExitCode.OK  # its part says so: no falsifier was this shard's
            return
        if markexpr and selected == 0 and not session.items:
            unknown = unregistered_markers(markexpr, self.config.getini("markers"))
            if unknown:  # pytest deselects everything for a misspelled marker and says nothing more
                self.zero_selection = f"pv: -m {markexpr!r} selected 0 tests: " + "; ".join(unknown)
                return
        if "ship_blocking" not in markexpr:
            return
        if selected == 0:
            self.zero_selection = (
                f"pv: -m {markexpr!r} selected 0 falsifiers; a ship-blocking run that checks nothing "
                f"is a failure, not a pass (contracts: {', '.join(map(str, settings_of(self.config).contract_dirs))})"
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def build_record(self, session: pytest.Session, exitstatus: int) -> RunRecord:
        contracts = dict(self.contracts)
        missing = sorted((self.selected or set()) - set(self.results) - set(self.invalid))
        for nodeid in missing:  # selected but never reported: interrupted
            run = self.contract_of(nodeid)
            if run is not None:
                contracts.setdefault(run.contract_id, run)
        results = verdicts(self.results.values(), contracts)
        return RunRecord(
            run_id=self.run_id,
            started_at=self.started_at,
            finished_at=_utc_now(),
            contracts=contracts,
            results=results,
            mutants_enabled=settings_of(self.config).mutants,
            selection=self.selection_text(),
            interrupted=bool(missing) or exitstatus == pytest.ExitCode.INTERRUPTED,
            settings=self.run_settings(results),
        )

    def selection_text(self) -> str:
        opt = self.config.option
        parts = (f"-m {opt.markexpr!r}" if opt.markexpr else "", f"-k {opt.keyword!r}" if opt.keyword else "")
        return " ".join(p for p in parts if p)

    def run_settings(self, results: Iterable[FalsifierResult] = ()) -> dict[str, Any]:
        """Every switch that can change a verdict (pv.bundle.model.RunSettings)."""
        settings = settings_of(self.config)
        # an aggregate's worker lists its cases' workers ("gw0,gw1")
        workers = {w for r in results for w in r.worker.split(",") if w != "master"}
        planned = getattr(self.config.option, "numprocesses", None)
        return {
            "faults_env": list(self.faults_env),
            "timeout_s": settings.timeout_s if settings.timeout_s > 0 else None,
            "vram_wait_s": settings.vram_wait_s,
            "isolation": settings.isolation,
            "markexpr": self.config.option.markexpr or "",
            "keyword": self.config.option.keyword or "",
            "args": [str(a) for a in self.config.invocation_params.args],
            "workers": len(workers) or (planned if isinstance(planned, int) else 0),
            "devices": self.devices,
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.zero_selection:
            terminalreporter.write_sep("=", "pv", red=True, bold=True)
            terminalreporter.write_line(self.zero_selection, red=True, bold=True)
            return
        if self.record is None or not (self.record.results or self.invalid):
            return
        line = summary_line(self.record.results, self.record.mutants_enabled, len(self.invalid))
        bad = any(r.verdict in (Verdict.FALSIFIED, Verdict.ERROR) for r in self.record.results) or self.invalid
        vacuous = any(
            r.mutant is not None and not r.mutant.killed and not r.mutant.undecided for r in self.record.results
        )
        terminalreporter.write_sep("=", "pv", bold=True)
        terminalreporter.write_line(line, red=bool(bad or vacuous), green=not (bad or vacuous))
        for text in self.aggregate_failures:
            terminalreporter.write_line(text, red=True, bold=True)
        if self.faults_env:
            terminalreporter.write_line(
                f"pv: WARNING: PV_FAULTS={','.join(self.faults_env)} switched faults on for this whole run; "
                "its evidence records them and never backs a status",
                yellow=True,
                bold=True,
            )


def _is_contract_nodeid(nodeid: str) -> bool:
    return nodeid.split("::")[0].endswith((".yaml", ".yml"))


def _is_falsifier_nodeid(nodeid: str) -> bool:
    path, _, name = nodeid.partition("::")
    return path.endswith((".yaml", ".yml")) and bool(name) and name != INVALID_ITEM_NAME


def _reload_contract(config: pytest.Config, nodeid: str) -> ContractRun | None:
    path_part, _, name = nodeid.partition("::")
    if name == INVALID_ITEM_NAME:
        return None
    loaded = project_of(config).contract(config.rootpath / path_part).loaded
    if loaded is None or loaded.contract is None:
        return None
    return contract_run(loaded, config.rootpath, CodeScope.of(project_of(config).config))


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def summary_line(results: Iterable[FalsifierResult], mutants_enabled: bool, invalid: int = 0) -> str:
    """``pv: 14 falsifiers, 12 evaluated (10 survived, 1 falsified, 1 error), 2 skipped: no CUDA; …``"""
    rs = list(results)
    counts = Counter(r.verdict for r in rs)
    ran = [r for r in rs if r.verdict is not Verdict.NOT_RUN]
    evaluated = counts[Verdict.SURVIVED] + counts[Verdict.FALSIFIED] + counts[Verdict.ERROR]
    n_cases = sum(len(r.cases) for r in ran)
    parts = [
        f"pv: {len(ran)} falsifier{'s' if len(ran) != 1 else ''}"
        + (f" ({n_cases} cases)" if n_cases else "")
        + f", {evaluated} evaluated "
        f"({counts[Verdict.SURVIVED]} survived, {counts[Verdict.FALSIFIED]} falsified, {counts[Verdict.ERROR]} error)"
    ]
    skipped = counts[Verdict.SKIPPED]
    if skipped:
        reasons = Counter(r.skip_reason or "no reason given" for r in rs if r.verdict is Verdict.SKIPPED)
        if len(reasons) == 1:
            parts.append(f"{skipped} skipped: {next(iter(reasons))}")
        else:
            parts.append(f"{skipped} skipped (" + ", ".join(f"{n} {why}" for why, n in reasons.most_common()) + ")")
    if counts[Verdict.INCONCLUSIVE]:
        parts.append(f"{counts[Verdict.INCONCLUSIVE]} inconclusive (noise too large to decide; never survived)")
    if counts[Verdict.NOT_RUN]:
        parts.append(f"{counts[Verdict.NOT_RUN]} not run")
    text = ", ".join(parts)
    if mutants_enabled:
        with_mutant = [r for r in rs if r.mutant is not None]
        killed = sum(1 for r in with_mutant if r.mutant is not None and r.mutant.killed)
        unsure = sum(1 for r in with_mutant if r.mutant is not None and r.mutant.undecided)
        text += f"; mutants: {killed}/{len(with_mutant)} killed"
        if unsure:
            text += f" ({unsure} inconclusive)"
        if killed + unsure < len(with_mutant):
            text += f" ({len(with_mutant) - killed - unsure} vacuous or broken)"
    else:
        text += "; mutants: not run (--pv-mutants)"
    if invalid:
        text += f"; {invalid} invalid contract{'s' if invalid != 1 else ''}"
    return text


def pv_session(config: pytest.Config) -> PvSession | None:
    """The session plugin (for tests and other plugins that want the run record after the fact)."""
    plugin = config.pluginmanager.get_plugin(_SESSION_PLUGIN)
    return plugin if isinstance(plugin, PvSession) else None


__all__ = ["PvSession", "pv_session", "settings_of", "summary_line"]
