"""The bench's table and JSON as text: what a user reads and what a script parses.

FALSIFY-BREP-001..004 run ``bench`` and read its table cell by cell and its JSON through
``json.loads``, which cannot see the header a reader scans, the separator line, the column
alignment, or the JSON file's layout (an indented, key-sorted file a diff of two runs relies on).
Here ``results_table`` and ``results_json`` are given three results written out below (a timed
brick with a CPU-side dispersion and a rate, a timed one without either, one not run) and their
text is compared with the layout written out here: the seven headed columns, each as wide as its
longest cell, two spaces between, a row of dashes under the header, percentages to one decimal,
times in milliseconds to three, the rate with thousands separators; and the JSON as Python's
``json.dumps`` writes every field with indent 2 and sorted keys, NaN times as null.
"""

from __future__ import annotations

import json
import math
from typing import Any

from engine.bricks import BrickResult, results_json, results_table
from pv.checkers import checker

HEAD = ["brick", "calls/rep", "min ms", "median ms", "cv %", "cpu cv %", "rate"]


def _results() -> list[Any]:

    nan = math.nan
    return [
        BrickResult("attention-forward", 7, 2, 0.0012345, 0.0015, 0.0016, 0.03456, 1234567.8, "tokens/s", 4,
                    extra={"cpu_cv": 0.01234}),
        BrickResult("rmsnorm", 5, 1, 0.0000042, 0.0000051, 0.0000052, 0.5, None, None, 1),
        BrickResult("lm-head-7b", 0, 0, nan, nan, nan, nan, extra={"memory_gib": {"total": 31.5}},
                    not_run="needs about 31.5 GiB"),
    ]  # fmt: skip


def expected_table() -> str:
    rows = [
        ["attention-forward", "4", "1.234", "1.500", "3.5", "1.2", "1,234,568 tokens/s"],
        ["rmsnorm", "1", "0.004", "0.005", "50.0", "-", "-"],
        ["lm-head-7b", "-", "-", "-", "-", "-", "not run: needs about 31.5 GiB"],
    ]
    widths = [max(len(row[i]) for row in [HEAD, *rows]) for i in range(len(HEAD))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    return "\n".join([line(HEAD), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def expected_json() -> str:
    fields = ("name", "reps", "warmup", "min_s", "median_s", "mean_s", "cv", "rate", "rate_unit", "calls_per_rep")
    docs = []
    for r in _results():
        doc: dict[str, Any] = {f: getattr(r, f) for f in fields}
        doc = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in doc.items()}
        docs.append({**doc, "extra": r.extra, "not_run": r.not_run})
    return json.dumps(docs, indent=2, sort_keys=True)


@checker(observes=["table_as_written", "json_as_written", "table", "json_lines"], ids=["FALSIFY-BREP-005"])
def bench_text_as_written() -> dict[str, Any]:
    """results_table and results_json on the three results above."""

    table, text = results_table(_results()), results_json(_results())
    return {
        "table_as_written": table == expected_table(),
        "json_as_written": text == expected_json(),
        "table": table.splitlines(),
        "json_lines": len(text.splitlines()),
    }
