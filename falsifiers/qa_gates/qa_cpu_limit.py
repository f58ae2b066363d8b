"""The throughput gate in a process under a CPU-time limit (``ulimit -t``, ``RLIMIT_CPU``).

Batch schedulers, CI sandboxes and mutation tools' runners cap a process's CPU time.  Once such a
limit is armed, Linux samples ``CLOCK_PROCESS_CPUTIME_ID`` (``time.process_time``) at the
scheduler tick: a decode of a few milliseconds reads 0 s of CPU, the upper end of the gate's rate
interval (work over the CPU time the decode had) becomes infinite, and a floor no machine meets
turns from ``fail`` to ``inconclusive``.  Here a child process arms a CPU-time limit far above what
it needs, then runs the gate on one-token decodes with a floor every machine meets, then four times
with one none does: a decode preempted mid-way is read at the switch, so one run alone may not
show the sampled clock on a busy machine, four in a row do.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from pv.checkers import checker

LIMIT_S = 600  # CPU seconds: armed, never reached
MAX_CPU_OVER_WALL = 1.05  # one thread's CPU time over its wall time, with the clocks' rounding
CHILD = """
import json, re, resource, sys
import torch
torch.set_num_threads(1)  # one thread: a decode's CPU time is at most its wall time
resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[2]), int(sys.argv[2]) + 1))
from engine.qa import QAOptions, run_qa
gates = []
for bound in (1e-6, 1e12, 1e12, 1e12, 1e12):
    options = QAOptions(gates=("throughput",), min_tokens_per_s=bound, throughput_tokens=1)
    g = run_qa(sys.argv[1], options).gate("throughput")
    gates.append([g.status, list(g.interval), float(re.search(r"CPU/wall (\\S+)\\)", g.detail)[1])])
print(json.dumps(gates))
"""


@checker(observes=["statuses", "upper_ends_finite", "cpu_over_wall_plausible", "child_exit"], ids=["FALSIFY-QAG-010"])
def throughput_under_a_cpu_limit(pretrained_init: Path) -> dict[str, Any]:
    """Statuses and interval ends of the gate at a floor of 1e-6 tok/s, then 4 times at 1e12, in the limited child."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(pretrained_init), str(LIMIT_S)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return {
            "statuses": [],
            "upper_ends_finite": False,
            "cpu_over_wall_plausible": False,
            "child_exit": proc.returncode,
        }
    gates = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "statuses": [status for status, _, _ in gates],
        "upper_ends_finite": all(math.isfinite(high) for _, (_, high), _ in gates),
        # a sampled clock reads each short decode as 0 s or as the whole time since its last sample
        "cpu_over_wall_plausible": all(0 < ratio <= MAX_CPU_OVER_WALL for _, _, ratio in gates),
        "child_exit": 0,
    }
