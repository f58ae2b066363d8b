"""pv's project in a pytest run: the ``pv_*`` ini options and ``--pv-*`` flags, resolved once.

Every ini option is registered here from :data:`pv.config.SETTINGS`, and :func:`configure` hands
the flags, pytest's ini values and the environment to :func:`pv.config.resolve`, the resolver the
``pv`` commands use, so ``pytest`` and ``pv lint`` agree on every value.  The resulting
:class:`pv.project.Project` is stashed on the config: :func:`project_of` is how collection reads
each contract once, :func:`settings_of` how the plugin and the evidence hooks read the settings.
"""

from __future__ import annotations

from typing import Any

import pytest

from pv.config import SETTINGS, ConfigError, PvConfig, resolve
from pv.project import Project

_KEY = pytest.StashKey[Project]()
FLAGS = {  # setting -> the pytest flag that sets it, for error messages
    "contracts": "--pv-contracts",
    "evidence": "--pv-evidence-dir",
    "write_evidence": "--pv-evidence",
    "mutants": "--pv-mutants",
    "timeout_s": "--pv-timeout",
    "isolation": "--pv-isolation",
    "vram_wait_s": "--pv-vram-wait",
    "mutation_log": "--pv-mutation-log",
}
_INI_TYPES = {"paths": "paths", "packages": "args", "bool": "bool"}  # the rest are read as strings


def register_ini(parser: pytest.Parser) -> None:
    for setting in SETTINGS:
        parser.addini(
            setting.ini,
            f"{setting.help} (default: {_shown_default(setting.default)}; env {setting.env}; [tool.pv] {setting.name})",
            type=_INI_TYPES.get(setting.kind, "string"),  # type: ignore[arg-type]
            default=None,  # unset stays None, so [tool.pv] and the default can still apply
        )


def _shown_default(value: Any) -> str:
    if isinstance(value, tuple):
        return " ".join(value) or "none"
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _flags(config: pytest.Config) -> dict[str, Any]:
    """The command line's values, by setting name (None: not given)."""
    opt = config.getoption
    write: bool | None = None
    if opt("pv_no_evidence"):
        write = False  # always wins
    elif opt("pv_evidence"):
        write = True
    cwd = config.invocation_params.dir
    dirs = opt("pv_contracts")
    evidence = opt("pv_evidence_dir")
    log = opt("pv_mutation_log")
    return {
        "contracts": [cwd / d for d in dirs] if dirs else None,
        "evidence": cwd / evidence if evidence else None,
        "write_evidence": write,
        "mutants": True if opt("pv_mutants") else None,
        "timeout_s": opt("pv_timeout"),
        "isolation": opt("pv_isolation"),
        "vram_wait_s": opt("pv_vram_wait"),
        "mutation_log": cwd / log if log else None,
    }


def configure(config: pytest.Config) -> PvConfig:
    """Resolve the run's settings and stash its project; a bad value is a usage error naming
    where it was set."""
    ini = {s.ini: config.getini(s.ini) for s in SETTINGS}
    try:
        settings = resolve(config.rootpath, cli=_flags(config), ini=ini, ini_path=config.inipath, flags=FLAGS)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_KEY] = Project(settings)
    return settings


def project_of(config: pytest.Config) -> Project:
    return config.stash[_KEY]


def settings_of(config: pytest.Config) -> PvConfig:
    return config.stash[_KEY].config
