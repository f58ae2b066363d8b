"""Developer sessions: lint, typecheck, tests, ship_blocking, bench, interop, mutation.

Sessions reuse the current interpreter's packages (``venv_backend="none"``) so that the
CPU torch wheel installed by the README's set-up command is used as-is.
"""

from __future__ import annotations

import os

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


@nox.session(venv_backend=PY)
def interop(session: nox.Session) -> None:
    """llama.cpp loads the engine's GGUF export and decodes the same greedy tokens (not run by default).

    llama-cpp-python builds llama.cpp from source on install: expect several minutes.
    """
    # The multimodal (llava/mtmd) part is not needed and doubles the build time.
    env = {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DLLAVA_BUILD=OFF")}
    pip = ("python", "-m", "pip", "install", "-c", "constraints-cpu.txt", "llama-cpp-python>=0.3")
    session.run(*pip, env=env, external=True)
    session.run(
        "pytest",
        "tests/engine/test_gguf.py",
        "-k",
        "llama_cpp",
        "-p",
        "no:cacheprovider",
        "-v",
        "-rs",
        *session.posargs,
        env={"PV_INTEROP": "1"},
    )


@nox.session(venv_backend=PY)
def mutation(session: nox.Session) -> None:
    """mutmut's mutants of the engine against the ship-blocking contracts alone; kill ratio per module.

    A report, not a gate (not run by default): a seeded sample of 30 mutants per module takes
    about 15 minutes on two cores; ``nox -s mutation -- --sample 0`` runs all ~3,900 (hours).
    """
    session.run("python", "-m", "pip", "install", "-q", "-c", "constraints-cpu.txt", "-e", ".[mutation]", external=True)
    session.run("python", "bench/mutation.py", *session.posargs)
