"""Every file a manifest cannot list, and every file reported but gone, is named in the
falsifier's message, comma-separated on one line (an unlisted name as Python writes it, so the
line stays one line)."""

from __future__ import annotations

import json
from pathlib import Path

from pv.results import Verdict
from tests.pv.evidence.conftest import Writer, result


def test_two_unlisted_files_are_both_named_on_one_line(write: Writer, tmp_path: Path) -> None:
    odd = [tmp_path / "a\nb.log", tmp_path / "c\rd.log"]
    for f in odd:
        f.write_text("odd\n")
    bundle = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=[str(f) for f in odd])])
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    assert data["artifacts"] == []
    assert data["falsifiers"][0]["message"] == (
        "artifacts not copied, their names hold a line break or bytes that are not UTF-8: "
        f"{str(odd[0])!r}, {str(odd[1])!r}"
    )


def test_two_files_gone_are_both_named_on_one_line(write: Writer, tmp_path: Path) -> None:
    gone = [str(tmp_path / "gone-1.log"), str(tmp_path / "gone-2.log")]
    bundle = write([result("FALSIFY-DEMO-001", Verdict.SURVIVED, artifacts=gone)])
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    assert data["falsifiers"][0]["message"] == f"artifacts reported but not found: {gone[0]}, {gone[1]}"
