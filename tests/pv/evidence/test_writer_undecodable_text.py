"""A run that met a file name whose bytes are not UTF-8 still leaves its evidence: an artifact
copied from a folder with such a name, one reported but gone, and a checker's observation holding
one are written with each undecodable byte as ``\\xNN``, and the bundle verifies."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pv.evidence import verify
from pv.results import Verdict
from tests.pv.evidence.conftest import Writer, result

FID = "FALSIFY-DEMO-001"

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse names that are not UTF-8")


def _odd(parent: Path, raw: bytes) -> Path:
    """``parent / raw`` as Python names it: each undecodable byte a lone surrogate."""
    return Path(os.fsdecode(os.fsencode(parent) + b"/" + raw))


def _written(write: Writer, **kw: Any) -> tuple[Path, dict[str, Any]]:
    bundle = write([result(FID, Verdict.SURVIVED, **kw)])
    assert verify.verify_bundle(bundle).problems == []
    data: dict[str, Any] = json.loads((bundle / "bundle.json").read_bytes().decode("utf-8"))
    return bundle, data


def test_an_artifact_in_a_folder_named_in_latin1_is_copied_and_its_source_escaped(
    write: Writer, tmp_path: Path
) -> None:
    folder = _odd(tmp_path, b"r\xe9sultats")
    folder.mkdir()
    (folder / "train.log").write_text("step 0 loss 2.1\n")
    bundle, data = _written(write, artifacts=[str(folder / "train.log")])
    [artifact] = data["artifacts"]
    assert artifact["path"] == f"artifacts/logs/{FID}/train.log"
    assert artifact["source"] == f"{tmp_path}/r\\xe9sultats/train.log"
    assert (bundle / artifact["path"]).read_text() == "step 0 loss 2.1\n"


def test_an_artifact_gone_is_named_with_its_bytes_escaped(write: Writer, tmp_path: Path) -> None:
    gone = _odd(tmp_path, b"gone-\xff.log")
    _, data = _written(write, artifacts=[str(gone)])
    assert data["falsifiers"][0]["message"] == f"artifacts reported but not found: {tmp_path}/gone-\\xff.log"


def test_an_observation_holding_undecodable_bytes_is_written(write: Writer) -> None:
    seen = os.fsdecode(b"caf\xe9.csv")
    _, data = _written(write, observations={"files": [seen], seen: 1})
    assert data["falsifiers"][0]["observations"] == {"files": ["caf\\xe9.csv"], "caf\\xe9.csv": 1}
