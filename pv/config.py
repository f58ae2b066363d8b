"""Where pv finds things and how it runs them: one resolver for every command and the plugin.

Each setting has one name, read from five places; the first that sets it wins:

1. the command line: a ``pv`` command's option (``--contracts``, ``--evidence``, ...) or pytest's
   ``--pv-*`` option and ``-o pv_<name>=...``;
2. the environment: ``PV_<NAME>`` (``PV_TIMEOUT_S=60``, ``PV_TRUSTED_KEYS=keys.pem``);
3. pytest's ini options, ``pv_<name>``, in the configuration file pytest itself would read
   (``pytest.ini``, ``.pytest.ini``, ``[tool.pytest.ini_options]``, ``tox.ini``, ``setup.cfg``;
   a ``pv`` command looks no higher than the project's ``pyproject.toml``);
4. the ``[tool.pv]`` table of the nearest ``pyproject.toml``, as ``<name>``;
5. the default in :data:`SETTINGS`.

``pv lint``, ``pv validate``, ``pv promote`` and a ``pytest`` run therefore agree on every value.
Relative paths are relative to where they are written: the current directory for the command
line and the environment, the ini file's folder for pytest's options, the ``pyproject.toml``'s
folder for ``[tool.pv]``.
"""

from __future__ import annotations

import configparser
import os
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pv.diagnostics import suggest
from pv.paths import shown

DIALECTS = ("pv", "rust")  # rust: upstream conventions are accepted and reported as warnings
ISOLATIONS = ("auto", "thread", "process")
INI_FILES = (  # pytest's own search order within one folder: (file, section)
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", "tool.pytest.ini_options"),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


class ConfigError(ValueError):
    """A setting is malformed; the message names where it was set and the key."""


@dataclass(frozen=True)
class Setting:
    """One configuration value: its name in every source, its kind and its default."""

    name: str
    kind: str  # path, paths, optional_path, packages, bool, int, float, choice
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None

    @property
    def ini(self) -> str:
        return f"pv_{self.name}"

    @property
    def env(self) -> str:
        return f"PV_{self.name.upper()}"


DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MAX_NPROC = 8
DEFAULT_CHECKER_PACKAGES: tuple[str, ...] = ("falsifiers",)
SETTINGS: tuple[Setting, ...] = (
    Setting("contracts", "paths", ("contracts",), "folders of contract YAML files"),
    Setting(
        "checker_packages", "packages", DEFAULT_CHECKER_PACKAGES, "packages whose @checker functions contracts may bind"
    ),
    Setting("fault_packages", "packages", (), "packages a mutant's fault may live in, besides the checker packages"),
    Setting(
        "code_packages",
        "packages",
        (),
        "packages of the system under test whose files bind evidence (default: the fault packages)",
    ),
    Setting("evidence", "path", "evidence", "the evidence folder"),
    Setting("trusted_keys", "optional_path", None, "PEM file of ed25519 public keys whose signed bundles alone count"),
    Setting(
        "require_signed",
        "bool",
        False,
        "only bundles signed by a trusted key back a status (trusted_keys must be set)",
    ),
    Setting("write_evidence", "bool", False, "write evidence bundles on a plain pytest run"),
    Setting(
        "max_nproc",
        "int",
        DEFAULT_MAX_NPROC,
        "the most processes a falsifier's launch: {nproc: N} may start",
        low=1,
        high=4096,
    ),
    Setting(
        "dialect",
        "choice",
        "pv",
        "how contract files are read: pv, or rust (the Rust pv's conventions)",
        choices=DIALECTS,
    ),
    Setting("timeout_s", "float", DEFAULT_TIMEOUT_S, "default per-falsifier timeout in seconds", low=0),
    Setting("isolation", "choice", "auto", "where checkers run: auto, thread or process", choices=ISOLATIONS),
    Setting("vram_wait_s", "float", 0.0, "seconds to wait for free GPU memory (cuda_free_gib) before skipping", low=0),
    Setting("mutants", "bool", False, "run every falsifier's mutant after it survives"),
    Setting("mutation_log", "optional_path", None, "append every verdict under the mutant being tested to this file"),
)
KNOWN_KEYS = tuple(s.name for s in SETTINGS)


_RINGS: dict[Path, tuple[int, Any]] = {}  # trusted keys read once per file version


@dataclass(frozen=True)
class PvConfig:
    root: Path  # the directory of the governing pyproject.toml, else the starting directory
    contracts: Path  # the first contracts folder: where the pv commands look by default
    checker_packages: tuple[str, ...]
    evidence: Path
    pyproject: Path | None = None
    fault_packages: tuple[str, ...] = ()  # where a mutant's module may live, besides checker packages
    code_packages: tuple[str, ...] = ()  # the system under test: every file in them binds evidence
    max_nproc: int = DEFAULT_MAX_NPROC  # the most processes a falsifier's `launch: {nproc: N}` may start
    trusted_keys: Path | None = None  # public keys whose signed bundles alone count
    require_signed: bool = False  # refuse to run without trusted keys: unsigned evidence never counts
    write_evidence: bool = False  # whether a plain pytest run writes bundles
    dialect: str = "pv"  # "rust": read contracts as the Rust pv writes them (pv.dialect)
    timeout_s: float = DEFAULT_TIMEOUT_S
    isolation: str = "auto"
    vram_wait_s: float = 0.0
    mutants: bool = False
    mutation_log: Path | None = None
    contract_dirs: tuple[Path, ...] = ()  # every contracts folder (pytest's pv_contracts may name several)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)  # name -> where it was set

    @property
    def mutant_packages(self) -> tuple[str, ...]:
        return (*self.checker_packages, *self.fault_packages)

    @property
    def measured_packages(self) -> tuple[str, ...]:
        """The system under test's packages, whose every file a bundle is bound to: ``code_packages``,
        else the fault packages (where the code a mutant breaks lives)."""
        return self.code_packages or self.fault_packages

    def trust_statement(self) -> str:
        """One line saying which keys evidence must be signed by, or that it is unauthenticated."""
        ring = self.key_ring()
        if ring is None:
            return (
                "evidence is unauthenticated: no trusted keys are configured, so any bundle written into "
                f"{self.relpath(self.evidence)}/ (digests recomputed) can back a status; set trusted_keys and "
                "require_signed (docs/evidence.md: Signing and the trust model)"
            )
        ids = ", ".join(k[:16] for k in sorted(ring.keys))
        required = "; required (require_signed)" if self.require_signed else ""
        source = self.relpath(self.trusted_keys) if self.trusted_keys is not None else "?"
        return f"trusting {len(ring.keys)} key(s) from {source}: {ids}{required}"

    def key_ring(self) -> Any:
        """The trusted keys as a :class:`pv.bundle.signing.KeyRing`, or None when none are set.

        Raises :class:`ConfigError` for a file that is missing or holds no usable key: a typo in
        the trust setting must never quietly turn signature checks off."""
        if self.trusted_keys is None:
            if self.require_signed:
                raise ConfigError(
                    f"require_signed is set ({self.origins.get('require_signed', 'configuration')}) but no "
                    "trusted_keys names the keys to trust: run `pv evidence keygen ci-evidence.key`, commit "
                    'ci-evidence.key.pub and set [tool.pv] trusted_keys = "ci-evidence.key.pub"'
                )
            return None
        # the cryptography package loads only where trusted keys are configured
        from pv.bundle.signing import KeyRing, SigningError

        try:
            stamp = self.trusted_keys.stat().st_mtime_ns
        except OSError:
            stamp = -1
        cached = _RINGS.get(self.trusted_keys)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            ring = KeyRing.from_file(self.trusted_keys)
        except SigningError as exc:
            raise ConfigError(f"trusted keys: {exc}") from None
        _RINGS[self.trusted_keys] = (stamp, ring)
        return ring

    @property
    def state_dir(self) -> Path:
        """``.pv/``: lint's local state (ratchet, index, cache); never committed."""
        return self.root / ".pv"

    def relpath(self, path: Path | str) -> str:
        """``path`` as pv shows it (:func:`pv.paths.shown`): relative to the root, else absolute."""
        return shown(path, self.root)


def _folders_up(start: Path) -> tuple[Path, ...]:
    here = start.resolve()
    if here.is_file():
        here = here.parent
    return (here, *here.parents)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    return next((d / "pyproject.toml" for d in _folders_up(start) if (d / "pyproject.toml").is_file()), None)


def _read_toml(pyproject: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read: {exc}") from exc


def _pv_table(pyproject: Path, data: dict[str, Any]) -> dict[str, Any]:
    table = data.get("tool", {}).get("pv", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.pv] must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            close = suggest(key, KNOWN_KEYS)
            hint = f"; did you mean {close!r}?" if close else f"; known keys: {', '.join(KNOWN_KEYS)}"
            raise ConfigError(f"{pyproject}: unknown key {key!r} in [tool.pv]{hint}")
    return table


def find_pytest_ini(
    start: Path, stop: Path | None = None, parsed: dict[Path, dict[str, Any]] | None = None
) -> tuple[Path | None, dict[str, Any]]:
    """pytest's configuration file at or above ``start`` and its ``pv_*`` options, found the way
    pytest finds it: in each folder upward, the first of :data:`INI_FILES` that has a pytest
    section (``pytest.ini`` counts even when empty).  The search ends at ``stop`` (the project's
    ``pyproject.toml`` folder): an enclosing project's options are not this one's.  ``parsed``
    holds TOML files already read (the project's pyproject.toml), so none is read twice."""
    folders = _folders_up(start)
    if stop is not None and stop in folders:
        folders = folders[: folders.index(stop) + 1]
    for d in folders:
        for name, section in INI_FILES:
            path = d / name
            if not path.is_file():
                continue
            options = _ini_section(path, section, parsed or {})
            if options is not None:
                return path, {k: v for k, v in options.items() if k.startswith("pv_")}
    return None, {}


def _ini_section(path: Path, section: str, parsed: dict[Path, dict[str, Any]]) -> dict[str, Any] | None:
    if path.suffix == ".toml":
        try:
            tool = (parsed[path] if path in parsed else _read_toml(path)).get("tool", {})
        except ConfigError:
            return None
        options = tool.get("pytest", {}).get("ini_options") if isinstance(tool.get("pytest"), dict) else None
        return options if isinstance(options, dict) else None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None


@dataclass(frozen=True)
class _Source:
    """Values from one place, the folder their relative paths start from, and how to name it."""

    values: Mapping[str, Any]
    base: Path
    where: str  # "command line", "environment", "pytest.ini", "pyproject.toml [tool.pv]"
    key: Callable[[Setting], str]  # the setting's name in this source


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return [p for p in value.replace(",", " ").split() if p]
    if isinstance(value, (list, tuple)):
        return [str(p) for p in value]
    return []


def _convert(setting: Setting, value: Any, source: _Source) -> Any:
    name = source.key(setting)

    def bad(what: str) -> ConfigError:
        return ConfigError(f"{source.where}: {name} {what}, not {value!r}")

    kind = setting.kind
    if kind in ("path", "optional_path"):
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{source.where}: {name} must be a path string")
        return (source.base / value).resolve()
    if kind == "paths":
        if isinstance(value, str):
            items: list[Any] = value.split("\n")
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise ConfigError(f"{source.where}: {name} must be a path string")
        paths = [os.fspath(v).strip() for v in items if isinstance(v, (str, os.PathLike))]
        if len(paths) != len(items) or not all(paths):
            raise ConfigError(f"{source.where}: {name} must be a path string")
        return tuple((source.base / v).resolve() for v in paths)
    if kind == "packages":
        if isinstance(value, (list, tuple)) and not all(isinstance(p, str) and p for p in value):
            raise ConfigError(f"{source.where}: {name} must be a list of module names")
        words = _words(value)
        if not words and value not in ((), []):
            raise ConfigError(f"{source.where}: {name} must be a list of module names")
        return tuple(words)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise bad("must be true or false")
    if kind == "choice":
        if value not in setting.choices:
            raise bad(f"must be one of {', '.join(setting.choices)}")
        return value
    number: float
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise bad("must be a whole number")
        try:
            number = int(value)
        except ValueError:
            raise bad("must be a whole number") from None
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise bad("must be a number of seconds")
        try:
            number = float(value)
        except ValueError:
            raise bad("must be a number of seconds") from None
    low, high = setting.low, setting.high
    if (low is not None and number < low) or (high is not None and number > high) or number != number:
        span = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
        raise bad(f"must be {span}")
    return number


def resolve(
    start: Path | None = None,
    *,
    cli: Mapping[str, Any] | None = None,
    ini: Mapping[str, Any] | None = None,
    ini_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> PvConfig:
    """Every setting for a command or a pytest run started at ``start`` (default: the current
    directory), in the order the module docstring gives.

    ``cli`` holds the command line's values by setting name (None: not given).  ``ini`` holds
    pytest's ``pv_*`` options when pytest has already read its configuration file (the plugin);
    without it the file is found and read here, as pytest would.  ``env`` defaults to
    ``os.environ``; ``flags`` names the command line's options in messages (default
    ``--<name>``).  Raises :class:`ConfigError` naming the source and key of a bad value.
    """
    cwd = Path.cwd()
    start = (start or cwd).resolve()
    pyproject = find_pyproject(start)
    data = _read_toml(pyproject) if pyproject else {}
    table = _pv_table(pyproject, data) if pyproject else {}
    if ini is None:
        parsed = {pyproject: data} if pyproject else {}
        ini_path, ini = find_pytest_ini(start, pyproject.parent if pyproject else None, parsed)
    root = pyproject.parent if pyproject else ini_path.parent if ini_path else start if start.is_dir() else start.parent
    environment = os.environ if env is None else env
    sources = [
        _Source(
            {k: v for k, v in (cli or {}).items() if v not in (None, (), [])},
            cwd,
            "command line",
            lambda s: (flags or {}).get(s.name, "--" + s.name.replace("_", "-")),
        ),
        _Source(
            {s.name: environment[s.env] for s in SETTINGS if environment.get(s.env)},
            cwd,
            "environment",
            lambda s: s.env,
        ),
        _Source(
            {s.name: ini[s.ini] for s in SETTINGS if ini.get(s.ini) not in (None, "", [])},
            ini_path.parent if ini_path else root,
            ini_path.name if ini_path else "pytest's ini",
            lambda s: s.ini,
        ),
        _Source(table, root, f"{pyproject}: [tool.pv]", lambda s: s.name),
    ]
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for setting in SETTINGS:
        for source in sources:
            if setting.name in source.values:
                values[setting.name] = _convert(setting, source.values[setting.name], source)
                origins[setting.name] = source.where
                break
        else:
            default = setting.default
            if setting.kind == "path":
                default = (root / default).resolve()
            elif setting.kind == "paths":
                default = tuple((root / d).resolve() for d in default)
            values[setting.name] = default
            origins[setting.name] = "default"
    dirs = values.pop("contracts")
    if not dirs:
        raise ConfigError(f"{origins['contracts']}: contracts names no folder")
    return PvConfig(
        root=root.resolve(),
        contracts=dirs[0],
        contract_dirs=dirs,
        pyproject=pyproject,
        origins=origins,
        **values,
    )


def load_config(
    start: Path | None = None,
    *,
    contracts: Path | str | None = None,
    checker_packages: Sequence[str] | None = None,
    evidence: Path | str | None = None,
    trusted_keys: Path | str | None = None,
    require_signed: bool | None = None,
) -> PvConfig:
    """:func:`resolve` for a ``pv`` command: its options are the command line's values."""
    cli = {
        "contracts": [contracts] if contracts is not None else None,
        "checker_packages": list(checker_packages) if checker_packages else None,
        "evidence": evidence,
        "trusted_keys": trusted_keys,
        "require_signed": require_signed,
    }
    return resolve(start, cli=cli)


def ensure_importable(root: Path) -> None:
    """Put the repository root on ``sys.path`` so that its checker packages import.

    A console script's ``sys.path`` starts at the script's directory, not the current one, so
    ``falsifiers`` would not resolve from the repository root without this.
    """
    entry = str(root.resolve())
    if entry not in sys.path:
        sys.path.insert(0, entry)
