"""A contract's id becomes a folder under the evidence folder only if it is a plain name and that
folder lies inside: an id with a path in it, a trailing newline or a dot for a name is refused, and
so is a folder that a symlink sends outside the evidence folder or back onto it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pv.evidence.writer import EvidenceError, contract_dir_for


@pytest.mark.parametrize("cid", ["../outside", "a/b", ".", "..", "", ".hidden", "demo-v1\n", "x" * 129])
def test_an_id_that_is_not_a_plain_name_is_refused(tmp_path: Path, cid: str) -> None:
    with pytest.raises(EvidenceError) as info:
        contract_dir_for(tmp_path / "evidence", cid)
    assert str(info.value) == f"contract id {cid!r} is not a safe folder name; no evidence written"


def test_plain_names_are_folders_under_the_evidence_folder(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    for cid in ["demo-v1", "a.b_c-1", "9", "x" * 128, "a.."]:
        assert contract_dir_for(evidence, cid) == evidence / cid


@pytest.mark.parametrize("points_to", ["outside", "evidence"])
def test_a_folder_a_symlink_sends_elsewhere_is_refused(tmp_path: Path, points_to: str) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (tmp_path / "outside").mkdir()
    (evidence / "demo-v1").symlink_to(tmp_path / points_to, target_is_directory=True)
    with pytest.raises(EvidenceError) as info:
        contract_dir_for(evidence, "demo-v1")
    assert str(info.value) == f"contract id 'demo-v1' would write outside {evidence}"
