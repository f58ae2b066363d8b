"""What the engine's tokenizer cache keys an entry on (``engine.tokenizer.cached_tokenizer``).

An entry is a trained tokenizer, and only a trainer that would train the same one may read it
back: a falsifier that got a tokenizer an older trainer wrote would judge the older trainer.  With
the cache in a fresh folder and a small corpus, the first call trains and writes one entry and a
second call writes none.  Then each thing besides the corpus that decides training is changed in
turn -- the pair frequency a merge needs, the tokenizers library's version, a fault switched on --
and each gives a new entry holding what training with that change gives.  A copy of the engine
package gives one training digest twice in child interpreters, and another once a line is added
to its ``engine/tokenizer.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import tokenizers

import engine
from engine import tokenizer as engine_tokenizer
from engine.faults import FAULTS
from engine.tokenizer import CACHE_ENV, cached_tokenizer, train_tokenizer_from_texts
from falsifiers.shared.child_env import child_env
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

VOCAB = 300
TEXTS = (
    "def total(values):\n    return sum(v for v in values if v is not None)\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n",
    "for line in open(path):\n    print(line.rstrip())\n",
)
# prints the training digest of the engine the child imports (the copy PYTHONPATH names)
CHILD = "from engine.tokenizer import training_digest; print(training_digest(300))"


def _entries(cache: Path) -> list[str]:
    folder = cache / "tokenizers"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def _child_digest(copy: Path) -> str | None:
    # -P: the child imports the copy PYTHONPATH names, not the working directory's engine
    proc = subprocess.run(
        [sys.executable, "-P", "-c", CHILD], env=child_env([copy]), capture_output=True, text=True, timeout=120
    )
    lines = proc.stdout.split()
    return lines[-1] if proc.returncode == 0 and lines else None


@checker(
    observes=[
        "first_entries", "second_call_entries", "changes", "new_entries", "entries_as_trained",
        "changes_that_train_differently", "source_key_stable", "source_change_changes_key",
    ],
    ids=["FALSIFY-CACHE-003"],
)  # fmt: skip
def tokenizer_cache_keys_training(tmp_path: Path) -> dict[str, Any]:
    """One corpus, cached; then the merge frequency, the library's version and a fault changed in turn."""
    work = fresh_dir(tmp_path, "tokenizer-cache-key-")
    files = []
    for i, text in enumerate(TEXTS * 2):
        files.append(work / "corpus" / f"{i:03d}.py")
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_text(text, encoding="utf-8")
    texts = [f.read_text(encoding="utf-8") for f in files]
    cache = work / "cache"
    out: dict[str, Any] = {}
    with mock.patch.dict(os.environ, {CACHE_ENV: str(cache)}):
        plain = train_tokenizer_from_texts(texts, VOCAB)
        cached_tokenizer(VOCAB, files)
        out["first_entries"] = len(_entries(cache))
        cached_tokenizer(VOCAB, files)
        out["second_call_entries"] = len(_entries(cache))
        changes = {
            "merge frequency": mock.patch.object(engine_tokenizer, "MIN_PAIR_FREQUENCY", 3),
            "library version": mock.patch.object(tokenizers, "__version__", tokenizers.__version__ + ".post1"),
            "fault": FAULTS.enabled("greedy_sampling_noise"),
        }
        out["changes"], out["new_entries"], out["entries_as_trained"] = len(changes), 0, 0
        out["changes_that_train_differently"] = 0
        for change in changes.values():
            before = _entries(cache)
            with change:
                got = cached_tokenizer(VOCAB, files)
                want = train_tokenizer_from_texts(texts, VOCAB)
            added = sorted(set(_entries(cache)) - set(before))
            out["new_entries"] += len(added)
            out["entries_as_trained"] += got == want
            out["changes_that_train_differently"] += want != plain
    # the engine's source: a copy of the package, unchanged twice, then with one line added
    copy = work / "engine-copy"
    here = Path(engine.__file__).resolve().parent
    shutil.copytree(here, copy / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    digests = [_child_digest(copy) for _ in range(2)]
    with open(copy / "engine" / "tokenizer.py", "a", encoding="utf-8") as fh:
        fh.write("\n# one line more\n")
    changed = _child_digest(copy)
    out["source_key_stable"] = digests[0] is not None and digests[0] == digests[1]
    out["source_change_changes_key"] = changed is not None and changed != digests[0]
    json.dumps(out)  # every observation is JSON
    return out
