"""A checker's file with an odd name never turns its own run's bundle into one that reads as
tampered.  A name with spaces at its ends, or with a character that ``str.splitlines`` breaks at
(U+2028, U+0085), is copied and listed in ``MANIFEST.sha256`` and verifies; a name that no
manifest line can hold (a line break, bytes that are not UTF-8) is not copied, and the entry's
message names it, while the result's other files are."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pv.evidence import verify, writer
from pv.results import Verdict
from tests.pv.evidence.conftest import Writer, result

FID = "FALSIFY-DEMO-001"


def _bundle(write: Writer, files: list[Path]) -> tuple[Path, dict[str, Any]]:
    bundle = write([result(FID, Verdict.SURVIVED, artifacts=[str(f) for f in files])])
    data: dict[str, Any] = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    return bundle, data


@pytest.mark.parametrize("name", ["a\u2028b.log", "sep\x85x.log", "para\u2029.txt", "trailing.log ", " leading.log"])
def test_a_name_splitlines_would_cut_is_copied_listed_and_verifies(write: Writer, tmp_path: Path, name: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / name).write_text("step 0\n")
    (work / "plain.log").write_text("step 1\n")
    bundle, data = _bundle(write, [work / name, work / "plain.log"])
    report = verify.verify_bundle(bundle)
    assert report.problems == []
    kind = writer._KIND_DIRS[writer.artifact_kind(work / name)]
    rel = f"artifacts/{kind}/{FID}/{name}"
    assert (bundle / rel).read_text() == "step 0\n"
    manifest = (bundle / "MANIFEST.sha256").read_bytes().decode("utf-8")
    assert f"  {rel}\n" in manifest
    assert rel in [a["path"] for a in data["artifacts"]]


@pytest.mark.parametrize("name", ["new\nline.log", "carriage\rreturn.log"])
def test_a_name_with_a_line_break_is_not_copied_and_the_message_names_it(
    write: Writer, tmp_path: Path, name: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / name).write_text("odd\n")
    (work / "plain.log").write_text("kept\n")
    bundle, data = _bundle(write, [work / name, work / "plain.log"])
    assert verify.verify_bundle(bundle).problems == []
    assert [a["path"] for a in data["artifacts"]] == [f"artifacts/logs/{FID}/plain.log"]
    message = data["falsifiers"][0]["message"]
    assert message == (
        "artifacts not copied, their names hold a line break or bytes that are not UTF-8: " + repr(str(work / name))
    )


def test_a_missing_file_and_an_unlistable_one_get_a_line_each(write: Writer, tmp_path: Path) -> None:
    odd = tmp_path / "odd\nname.log"
    odd.write_text("odd\n")
    gone = str(tmp_path / "gone.log")
    _, data = _bundle(write, [Path(gone), odd])
    assert data["falsifiers"][0]["message"].splitlines() == [
        f"artifacts reported but not found: {gone}",
        "artifacts not copied, their names hold a line break or bytes that are not UTF-8: " + repr(str(odd)),
    ]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse names that are not UTF-8")
def test_a_name_of_bytes_that_are_not_utf8_is_not_copied(write: Writer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    raw = os.fsencode(work) + b"/latin1-\xe9.log"
    with open(raw, "wb") as f:
        f.write(b"odd\n")
    name = Path(os.fsdecode(raw))
    bundle, data = _bundle(write, [name])
    assert verify.verify_bundle(bundle).problems == []
    assert data["artifacts"] == []
    assert repr(str(name)) in data["falsifiers"][0]["message"]


@pytest.mark.parametrize(
    ("rel", "ok"),
    [
        ("artifacts/logs/F/a b .log", True),
        ("artifacts/logs/F/a\u2028b", True),
        ("artifacts/logs/F/a\nb", False),
        ("artifacts/logs/F/a\rb", False),
        ("artifacts/logs/F/a\udce9b", False),
    ],
)
def test_listable(rel: str, ok: bool) -> None:
    assert writer.listable(rel) is ok
