"""Hints for a ``-m`` expression that selected nothing."""

from __future__ import annotations

import pytest

from pv.selection import unregistered_markers

REGISTERED = ["ship_blocking: a falsifier CI must pass", "advisory: reported", "slow", "contract(id): one contract"]


@pytest.mark.parametrize(
    ("markexpr", "expected"),
    [
        ("ship_blocking and not slow", []),
        ("ship_blockng", ["marker 'ship_blockng' is not registered; did you mean 'ship_blocking'?"]),
        (
            'contract("nf4-quantization-v1") or (advisry and slow)',
            ["marker 'advisry' is not registered; did you mean 'advisory'?"],
        ),
        ('not (contract(id="x"))', []),
        ("gpu_only or gpu_only", ["marker 'gpu_only' is not registered"]),
    ],
)
def test_unregistered_markers_names_each_unknown_once_with_a_close_suggestion(
    markexpr: str, expected: list[str]
) -> None:
    assert unregistered_markers(markexpr, REGISTERED) == expected
