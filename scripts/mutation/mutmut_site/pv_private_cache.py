"""pytest plugin of a mutation run (``scripts/mutation/run.py`` names it in ``PYTEST_PLUGINS``): each
mutant's run gets its own copy of the engine's cache.

mutmut's clean run, with no mutant active, fills ``$PV_MUTMUT_CACHE_SEED`` (the tokenizers and
pretrained inits the chunk's falsifiers need, built by the unmutated engine).  A mutant's run then
works in a fresh copy of it, named in ``PV_ENGINE_CACHE`` for the run and every process it starts,
and removed when the run ends.  Without it, a mutant of the tokenizer that wrote a tokenizer
without BOS into the shared cache decided every later mutant's verdict on the wrong tokenizer.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from pv.mutation import mutant_id_from_env

SEED_ENV = "PV_MUTMUT_CACHE_SEED"
CACHE_ENV = "PV_ENGINE_CACHE"  # engine.tokenizer.CACHE_ENV; not imported: mutmut's engine is a copy
OWNER_ENV = "PV_MUTMUT_CACHE_OWNER"  # the mutant whose copy PV_ENGINE_CACHE names

_COPY = pytest.StashKey[Path]()


def copies_folder(seed: Path) -> Path:
    """Where the copies of ``seed`` go: beside it, emptied by ``scripts/mutation/run.py`` before each chunk."""
    return seed.with_name(f"{seed.name}-private")


def private_copy(seed: Path) -> Path:
    """A new folder holding a copy of ``seed`` (empty when the seed was never filled)."""
    parent = copies_folder(seed)
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=parent))
    if seed.is_dir():
        # a copy, not links: a mutant may write into a cached file in place
        shutil.copytree(seed, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.partial"))
    return folder


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    mutant = mutant_id_from_env()  # None in mutmut's clean, stats and forced-fail runs
    seed = os.environ.get(SEED_ENV)
    # A process the run started (a pytest child of a falsifier) keeps its parent's copy.
    if not seed or mutant is None or os.environ.get(OWNER_ENV) == mutant:
        return
    folder = private_copy(Path(seed))
    config.stash[_COPY] = folder
    os.environ[CACHE_ENV] = str(folder)
    os.environ[OWNER_ENV] = mutant


def pytest_unconfigure(config: pytest.Config) -> None:
    # only this run's copy: a pytest run nested in a falsifier must not remove its parent's
    folder = config.stash.get(_COPY, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
