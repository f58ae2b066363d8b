"""What ``pv evidence verify`` takes for a bundle folder: one named as a run even when it is empty
(a bundle emptied by hand is reported, never passed over), and one named otherwise that holds a
manifest or a bundle.json, either alone; a hidden folder at the evidence root is never searched."""

from __future__ import annotations

from pathlib import Path

from pv.bundle.model import BUNDLE_FILE, MANIFEST_FILE
from pv.evidence.verify import find_bundles, is_bundle_dir, verify_path

RUN = "20260301T100000000000Z-0123abcd"


def test_a_folder_named_as_a_run_is_a_bundle_even_empty_and_is_reported(tmp_path: Path) -> None:
    emptied = tmp_path / "demo-v1" / RUN
    emptied.mkdir(parents=True)
    assert is_bundle_dir(emptied)
    assert find_bundles(tmp_path) == [emptied]
    [report] = verify_path(tmp_path)
    assert not report.ok and report.status == "incomplete"


def test_a_folder_named_otherwise_is_a_bundle_by_either_file_alone(tmp_path: Path) -> None:
    only_manifest, only_bundle, neither = (tmp_path / "demo-v1" / n for n in ("by-hand-1", "by-hand-2", "notes"))
    for folder in (only_manifest, only_bundle, neither):
        folder.mkdir(parents=True)
    (only_manifest / MANIFEST_FILE).write_text("")
    (only_bundle / BUNDLE_FILE).write_text("{}")
    assert [is_bundle_dir(f) for f in (only_manifest, only_bundle, neither)] == [True, True, False]
    assert find_bundles(tmp_path) == [only_manifest, only_bundle]


def test_a_hidden_folder_at_the_evidence_root_is_not_searched(tmp_path: Path) -> None:
    (tmp_path / ".tmp-write" / RUN).mkdir(parents=True)
    (tmp_path / ".cache" / "by-hand").mkdir(parents=True)
    (tmp_path / ".cache" / "by-hand" / BUNDLE_FILE).write_text("{}")
    found = tmp_path / "demo-v1" / RUN
    found.mkdir(parents=True)
    assert find_bundles(tmp_path) == [found]
