"""Distillation's settings at their edges, and its refusals word for word.

A temperature is any positive number (1 is plain distillation on the unsoftened distributions) and
alpha any weight in [0, 1] (0: the teacher alone, 1: the labels alone).  ``check_loss_settings``
must accept every such value, the edges included, and refuse the rest with the messages written
out here; ``check_pair`` must refuse a teacher that is the student, another vocabulary and
identical weights (unless allowed) with the messages written out here, and let a different
student through.
"""

from __future__ import annotations

from typing import Any

from engine.distill import DistillationRefused, check_loss_settings, check_pair
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

ACCEPTED = ((1.0, 0.0), (1.0, 1.0), (1e-6, 0.5), (0.5, 0.25), (8.0, 1.0))
REFUSED = (
    (0.0, 0.5, "temperature must be > 0, got 0.0"),
    (-1.0, 0.5, "temperature must be > 0, got -1.0"),
    (2.0, -0.01, "alpha must be in [0, 1], got -0.01"),
    (2.0, 1.01, "alpha must be in [0, 1], got 1.01"),
)
SAME_WEIGHTS = (
    "teacher and student hold identical weights: distillation would teach nothing "
    "(pass allow_same=True / --allow-same to run anyway)"
)


@checker(
    observes=["accepted", "accepted_expected", "refusals", "refusals_differing", "differing"],
    ids=["FALSIFY-DISTILL-009"],
)
def settings_at_their_edges(tiny_model_factory: Any) -> dict[str, Any]:
    """check_loss_settings on five accepted and four refused settings; check_pair on four pairs."""

    differing: list[str] = []
    accepted = 0
    for temperature, alpha in ACCEPTED:
        try:
            check_loss_settings(temperature, alpha)
            accepted += 1
        except ValueError as exc:
            differing.append(f"({temperature}, {alpha}) refused: {exc}")
    requests: list[tuple[Any, str]] = [
        (lambda t=t, a=a: check_loss_settings(t, a), message) for t, a, message in REFUSED
    ]
    teacher = tiny_model_factory(0)
    requests += [
        (lambda: check_pair(teacher, teacher, allow_same=True), "teacher and student are the same module object"),
        (
            lambda: check_pair(teacher, tiny_model_factory(1, vocab_size=640), allow_same=False),
            f"teacher vocab_size {teacher.config.vocab_size} != student vocab_size 640",
        ),
        (lambda: check_pair(teacher, tiny_model_factory(0), allow_same=False), SAME_WEIGHTS),
    ]
    refusals = refusals_differing((call, (ValueError, DistillationRefused), message) for call, message in requests)
    differing += refusals
    try:  # allowed, and a different student: both go through
        check_pair(teacher, tiny_model_factory(0), allow_same=True)
        check_pair(teacher, tiny_model_factory(1), allow_same=False)
        accepted += 2
    except DistillationRefused as exc:
        differing.append(f"refused: {exc}")
    return {
        "accepted": accepted,
        "accepted_expected": len(ACCEPTED) + 2,
        "refusals": len(requests),
        "refusals_differing": len(refusals),
        "differing": differing,
    }
