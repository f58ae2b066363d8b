"""Reviews made by hand, for the renderers and the publisher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pv.review.compare import ContractReview, Point, Review, Row, Value


def row(
    fid: str, kind: str = "unchanged", *, head: str = "survived", base: str | None = "survived", **extra: object
) -> Row:
    values = extra.pop("values", [Value("loss", 1.0, 1.0, 0.0, 0.0, 2.0, "lower", 0.5, 0.5)])
    r = Row(
        "demo-v1", "contracts/demo-v1.yaml", fid, True, 7, kind, "why", base, head, True, True,  # type: ignore[arg-type]
        "loss <= 2", "loss <= 2", False, [], values=values,  # type: ignore[arg-type]
        history=[Point(f"run-{i}", f"{i:040x}", "survived", {"loss": 1.0 + i / 10}) for i in range(5)],
        reproduce=f"pytest contracts/demo-v1.yaml::{fid}",
    )  # fmt: skip
    for key, value in extra.items():
        setattr(r, key, value)
    return r


def review(rows: list[Row], before: str = "ACTIVE", after: str = "ACTIVE") -> Review:
    contract = ContractReview("demo-v1", "contracts/demo-v1.yaml", before, after, "why", "run-4", "ab" * 32, "", ["h"])
    return Review("main", "c" * 40, "d" * 40, [contract], rows, 0.05, "")


# A contract of two falsifiers over one system, for what a change touches (format: bound, blocking).
CONTRACT = """\
metadata: {{id: mean-v1, version: 1.0.0, description: means}}
falsification_tests:
  - id: FALSIFY-MEAN-001
    prediction: the mean of three
    check: mychecks.checks:mean_of_three
    expect: "value == 2"
    ship_blocking: false
  - id: FALSIFY-MEAN-002
    prediction: the mean of three, again
    check: mychecks.other:mean_again
    expect: "{bound}"
    ship_blocking: {blocking}
"""

PYPROJECT = '[tool.pv]\ncontracts = "contracts"\nchecker_packages = ["mychecks"]\nfault_packages = ["mysystem"]\n'
CHECKER = "import pv\nfrom mysystem import stats\n\n\n@pv.checker(observes=['value'])\ndef {name}():\n"


def means_project(pytester: Any, bound: str, blocking: str) -> Path:
    """The two-falsifier project of :data:`CONTRACT` over ``mysystem.stats.mean`` in ``pytester``'s
    folder, its checkers in two modules; the contract's path."""
    pytester.makefile(".toml", pyproject=PYPROJECT)
    pytester.mkpydir("mysystem").joinpath("stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    checks = pytester.mkpydir("mychecks")
    for module, name in (("checks", "mean_of_three"), ("other", "mean_again")):
        body = CHECKER.format(name=name) + "    return {'value': stats.mean([1, 2, 3])}\n"
        checks.joinpath(f"{module}.py").write_text(body)
    contract: Path = pytester.mkdir("contracts") / "mean-v1.yaml"
    contract.write_text(CONTRACT.format(bound=bound, blocking=blocking))
    return contract
