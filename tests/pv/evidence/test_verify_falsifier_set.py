"""A bundle's falsifiers must be exactly its contract's: one extra, one missing or one listed twice
is each enough on its own to call it tampered, with that reason alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pv.evidence.verify import verify_bundle
from tests.pv.evidence.conftest import Writer, all_survive, reseal


def _with(bundle: Path, edit: Any) -> list[str]:
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    data["falsifiers"] = edit(data["falsifiers"])
    reseal(bundle, data)
    return [p.detail for p in verify_bundle(bundle).problems if p.detail.startswith("its falsifiers")]


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (
            lambda fs: [*fs, {**fs[0], "id": "FALSIFY-EXTRA-008"}, {**fs[0], "id": "FALSIFY-EXTRA-009"}],
            "not declared by the contract: FALSIFY-EXTRA-008, FALSIFY-EXTRA-009",
        ),
        (lambda fs: fs[:2], "declared but absent: FALSIFY-DEMO-003"),
        (lambda fs: [*fs, fs[0]], "a falsifier listed twice"),
    ],
    ids=["extra", "missing", "twice"],
)
def test_each_difference_alone_is_tampering(write: Writer, edit: Any, why: str) -> None:
    assert _with(write(all_survive()), edit) == [f"its falsifiers are not the contract's ({why})"]


def test_exactly_the_contract_s_falsifiers_are_no_problem(write: Writer) -> None:
    assert _with(write(all_survive()), lambda fs: fs) == []
