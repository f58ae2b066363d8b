"""``write_outputs``: every form of a review written into a folder that may not exist yet (or already
does, from an earlier run), each file the form's text exactly, and the paths it wrote returned."""

from __future__ import annotations

from pathlib import Path

from pv.review.github import FILES, Forms, write_outputs
from tests.pv.review.helpers import review, row


def test_every_form_is_written_where_asked_and_named_back(tmp_path: Path) -> None:
    forms = Forms(review([row("FALSIFY-DEMO-001"), row("FALSIFY-DEMO-002", "regressed", head="falsified")]))
    out = tmp_path / "review" / "of" / "pr-7"  # three folders that do not exist yet
    for _ in range(2):  # the second run writes over the first
        written = write_outputs(forms, out)
        assert written == {key: out / name for key, name in FILES.items()}
        assert {key: path.read_text(encoding="utf-8") for key, path in written.items()} == {
            key: getattr(forms, key) for key in FILES
        }
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES.values())
