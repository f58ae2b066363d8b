"""The environment of a checker's child interpreter: which engine it imports, which faults are on.

A checker that runs the engine in a fresh interpreter (``python -P``, so that the working
directory is not put first on the path) must have the child import the engine the checker itself
measures -- this repository's, a copy the checker made, or mutmut's mutated copy -- and see the
faults planted in this process, or a planted fault would go unmeasured in the child.

Not a ``falsifiers/_*.py`` module: scripts/mutation/cache.py digests each of those into every
falsifier's key, so adding or changing one makes the mutation run judge every mutant again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from engine.faults import FAULTS
from pv.faults import ENV_VAR


def child_env(path: Sequence[Path], faults: Sequence[str] = ()) -> dict[str, str]:
    """``os.environ`` with ``path`` put first on PYTHONPATH and ENV_VAR naming the faults on in this
    process followed by ``faults``."""

    env = dict(os.environ)
    # an empty entry would put the child's working directory back on its path
    entries = [e for e in [*map(str, path), env.pop("PYTHONPATH", "")] if e]
    if entries:
        env["PYTHONPATH"] = os.pathsep.join(entries)
    env[ENV_VAR] = ",".join([*FAULTS.active_names(), *faults])
    return env
