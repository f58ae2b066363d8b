"""One review that shows every section, note and cell the Markdown comment writes (the golden files
in tests/pv/review/golden/ are its rendering, read line by line before they were kept)."""

from __future__ import annotations

from pv.review.compare import ContractReview, Review, Row, Value
from tests.pv.review.helpers import row


def golden_review() -> Review:
    worse = Value("loss", 1.0, 3.0, 2.0, 2.0, 2.0, "lower", 1.5, 0.5, moved="worse")
    better = Value("rate", 200.0, 260.0, 60.0, 0.3, 150.0, "higher", 0.577, 0.75, moved="better")
    noisy = Value("cv", 0.02, 0.03, 0.01, 0.5, 0.05, "lower", 0.6, 0.4, within_noise=True)
    noisy.base_interval, noisy.head_interval = [0.01, 0.04], [0.015, 0.05]
    rows: list[Row] = [
        row(
            "FALSIFY-DEMO-001", "regressed", head="falsified", values=[worse, noisy], why="survived → falsified",
            expect_now="loss(=3) <= 2", changed=["code: 1 edited (engine/a.py)", "bound moved"], bound_moved=True,
            base_expect="loss <= 2.5", head_expect="loss <= 2", message="FALSIFIED demo\nsecond line",
        ),
        row("FALSIFY-DEMO-002", "improved", values=[better], why="rate moved away from the bound beyond the noise"),
        row("FALSIFY-DEMO-003", "new", base=None, why="not in the base's contract", head_mutant=False),
        row("FALSIFY-DEMO-004", "missing", base=None, head="not_run", why="changed here and not measured in this run"),
        row("FALSIFY-DEMO-005", "unchanged", head="error", base="error", message="Traceback: boom | pipe", why="same"),
        row(
            "FALSIFY-DEMO-006", "unchanged", bound_moved=True, base_expect="x >= 1", head_expect="x >= 2",
            ship_blocking=False, why="same",
        ),
        row("FALSIFY-DEMO-007", "unchanged", why="same"),
    ]  # fmt: skip
    contracts = [
        ContractReview("demo-v1", "contracts/demo-v1.yaml", "ACTIVE", "DRAFT", "FALSIFY-DEMO-001 falsified",
                       "run-4", "ab" * 32, "", ["run-h1", "run-h2"]),
        ContractReview("other-v1", "contracts/other-v1.yaml", "DRAFT", "DRAFT", "no evidence", None, None,
                       "no run measured c0ffee | old", []),
    ]  # fmt: skip
    return Review("main", "c" * 40, "d" * 40, contracts, rows, 0.05, "unsigned evidence: no trusted keys configured")
