"""pytest side of the evidence writer: options, and a bundle per contract when the run ends.

Loaded by the pv plugin (``pytest_plugins = ["pv.evidence.pytest_hooks"]``).  The plugin calls
``pytest_pv_run_finished`` once, on the xdist controller, with every worker's results gathered;
workers never write, so each falsifier lands in exactly one bundle exactly once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.config import DEFAULT_EVIDENCE, ConfigError, load_config
from pv.evidence.environment import capture
from pv.evidence.writer import write_run
from pv.results import RunRecord


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pv")
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
        help="write no evidence bundles for this run",
    )
    parser.addini("pv_evidence", "evidence folder, relative to the rootdir (default: [tool.pv] evidence)", default="")


def evidence_dir(config: pytest.Config) -> Path:
    """--pv-evidence-dir (relative to where pytest was invoked), else ini ``pv_evidence`` (relative
    to the rootdir), else ``[tool.pv] evidence`` as the ``pv`` commands read it, else evidence/."""
    option = config.getoption("pv_evidence_dir")
    if option:
        return (config.invocation_params.dir / option).resolve()
    ini = str(config.getini("pv_evidence") or "")
    if ini:
        return (config.rootpath / ini).resolve()
    try:
        return load_config(config.rootpath).evidence
    except ConfigError:  # the pv commands will report a malformed [tool.pv]; write where they default
        return (config.rootpath / DEFAULT_EVIDENCE).resolve()


@pytest.hookimpl(optionalhook=True)
def pytest_pv_run_finished(config: pytest.Config, run: RunRecord) -> None:
    if config.getoption("pv_no_evidence") or hasattr(config, "workerinput"):
        return
    target = evidence_dir(config)
    environment = capture(config.rootpath, exclude=[target])
    outcomes = write_run(run, target, config.rootpath, environment)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    for o in outcomes:
        if o.path is not None:
            reporter.write_line(f"pv evidence: {o.contract_id} -> {_shown(o.path, config)}")
        else:
            reporter.write_line(f"pv evidence: {o.contract_id}: NOT written: {o.reason}", yellow=True, bold=True)


def _shown(path: Path, config: pytest.Config) -> str:
    try:
        return path.relative_to(config.invocation_params.dir).as_posix()
    except ValueError:
        return str(path)
