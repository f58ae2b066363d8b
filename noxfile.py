"""Developer sessions: lint, typecheck, tests, ship_blocking, bench, interop.

Sessions reuse the current interpreter's packages (``venv_backend="none"``) so that the
CPU torch wheel installed by the README's set-up command is used as-is.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
PY = "none"


@nox.session(venv_backend=PY)
def lint(session: nox.Session) -> None:
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend=PY)
def typecheck(session: nox.Session) -> None:
    session.run("mypy")


@nox.session(venv_backend=PY)
def tests(session: nox.Session) -> None:
    session.run("pytest", *session.posargs)


@nox.session(venv_backend=PY)
def ship_blocking(session: nox.Session) -> None:
    session.run("pytest", "contracts", "-m", "ship_blocking", "--pv-mutants", *session.posargs)
