"""``engine.quant.import_bnb`` hides bitsandbytes' one uninformative warning, and nothing else.

bitsandbytes (0.50) logs "Failed to load CPU gemm_4bit_forward from kernels-community" on
``bitsandbytes.backends.cpu.ops`` when it is imported on a CPU machine without the optional
``kernels`` package; it then uses its own CPU kernels, so the message tells an engine user
nothing.  ``import_bnb`` raises that one logger's level while it imports.  Raising the root
logger's instead would hide every warning bitsandbytes gives on import (a build without GPU
support, a missing library), and a level not put back would hide later ones.

Each case runs in a fresh interpreter, where bitsandbytes is not imported yet, with a handler on
the root logger recording what reaches it:

* ``real``: the installed bitsandbytes through ``import_bnb``;
* ``stand-in``: a ``bitsandbytes`` package first on the path that logs the CPU-kernel warning, a
  warning of another of its loggers and an error of the CPU logger as it is imported;
* ``broken``: the same stand-in failing with ImportError after it logged.

Before the call the root logger is at WARNING and the CPU logger at INFO (a user's settings), and
both levels are read again after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine
from falsifiers.shared.child_env import child_env
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

CPU_LOGGER = "bitsandbytes.backends.cpu.ops"
OTHER_LOGGER = "bitsandbytes.cextension"

STAND_IN = f"""
import logging
logging.getLogger({CPU_LOGGER!r}).warning("Failed to load CPU gemm_4bit_forward from kernels-community")
logging.getLogger({OTHER_LOGGER!r}).warning("The installed version of bitsandbytes was compiled without GPU support.")
logging.getLogger({CPU_LOGGER!r}).error("the CPU kernels cannot run here")
import os
if os.environ.get("STAND_IN_BROKEN"):
    raise ImportError("the stand-in bitsandbytes is broken")
"""

# argv: nothing.  Prints one JSON line: the records that reached the root logger, the levels
# after the call, and the exception the call raised.
CHILD = f"""
import json, logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(f"{{record.name}}:{{record.levelname}}")
root = logging.getLogger()
root.addHandler(Keep())
root.setLevel(logging.WARNING)
logging.getLogger({CPU_LOGGER!r}).setLevel(logging.INFO)
from engine.quant import import_bnb
raised = None
module = None
try:
    module = import_bnb()
except Exception as exc:
    raised = type(exc).__name__
print(json.dumps({{
    "records": records,
    "levels_after": [logging.getLevelName(root.level), logging.getLevelName(logging.getLogger({CPU_LOGGER!r}).level)],
    "raised": raised,
    "returned_bitsandbytes": module is not None and module is sys.modules.get("bitsandbytes"),
}}))
"""


def _run(engine_parent: Path, first: Path | None, broken: bool) -> dict[str, Any]:
    env = child_env([*([first] if first is not None else []), engine_parent])
    env.pop("STAND_IN_BROKEN", None)
    if broken:
        env["STAND_IN_BROKEN"] = "1"
    # -P: the engine the child imports is the one PYTHONPATH names (this repository or mutmut's copy)
    proc = subprocess.run([sys.executable, "-P", "-c", CHILD], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"child_exit": proc.returncode, "stderr": proc.stderr[-2000:]}
    return {"child_exit": 0, **json.loads(proc.stdout.strip().splitlines()[-1])}


@checker(
    observes=[
        "real_cpu_warnings",
        "real_returned",
        "stand_in_records",
        "stand_in_levels_after",
        "stand_in_returned",
        "broken_raised",
        "broken_levels_after",
        "child_exits",
    ],
    ids=["FALSIFY-NF4-008"],
)
def import_hides_one_warning(tmp_path: Path) -> dict[str, Any]:
    """The three cases, each in a fresh interpreter."""

    engine_parent = Path(engine.__file__).resolve().parents[1]
    work = fresh_dir(tmp_path, "bnb-import-")
    (work / "bitsandbytes").mkdir()
    (work / "bitsandbytes" / "__init__.py").write_text(STAND_IN, encoding="utf-8")
    real = _run(engine_parent, None, broken=False)
    stand_in = _run(engine_parent, work, broken=False)
    broken = _run(engine_parent, work, broken=True)
    return {
        "real_cpu_warnings": [r for r in real.get("records", []) if r.startswith(CPU_LOGGER + ":WARNING")],
        "real_returned": real.get("returned_bitsandbytes"),
        "stand_in_records": stand_in.get("records"),
        "stand_in_levels_after": stand_in.get("levels_after"),
        "stand_in_returned": stand_in.get("returned_bitsandbytes"),
        "broken_raised": broken.get("raised"),
        "broken_levels_after": broken.get("levels_after"),
        "child_exits": [case["child_exit"] for case in (real, stand_in, broken)],
    }
