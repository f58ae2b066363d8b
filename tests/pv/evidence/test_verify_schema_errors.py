"""What verify says of a bundle.json that parses but breaks the schema: each error at its path in
the document (``(root)`` for the document itself), at most five, in path order, always naming
bundle.json; and a document the schema lets through but the model refuses is reported, not a crash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pv.bundle.model import Bundle
from pv.evidence import verify
from tests.pv.evidence.conftest import Writer, all_survive, reseal


def _spoil(write: Writer, edit: Any) -> tuple[Path, dict[str, Any]]:
    bundle = write(all_survive())
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    edit(data)
    reseal(bundle, data, statement={"unread": True})  # never reached: the schema comes first
    return bundle, data


def _problems(bundle: Path) -> list[tuple[str, str, str]]:
    return [(p.kind, p.file, p.detail) for p in verify.verify_bundle(bundle).problems]


def test_an_error_inside_the_document_is_named_at_its_path(write: Writer) -> None:
    bundle, _ = _spoil(write, lambda d: d["falsifiers"][1].update(verdict="maybe"))
    [(kind, file, detail)] = _problems(bundle)
    assert (kind, file) == ("schema_error", "bundle.json") and detail.startswith("falsifiers/1/verdict: ")


def test_an_error_of_the_document_itself_is_at_its_root(write: Writer) -> None:
    bundle, _ = _spoil(write, lambda d: d.pop("run_id"))
    [(kind, file, detail)] = _problems(bundle)
    assert (kind, file) == ("schema_error", "bundle.json") and detail.startswith("(root): ")


def test_at_most_five_errors_in_path_order(write: Writer) -> None:
    def edit(data: dict[str, Any]) -> None:
        for f in data["falsifiers"]:
            f["verdict"] = "maybe"
            f["duration_s"] = "slow"

    bundle, _ = _spoil(write, edit)
    details = [detail.split(": ", 1)[0] for _, _, detail in _problems(bundle)]
    assert details == sorted(details) and len(details) == 5
    assert details[0] == "falsifiers/0/duration_s"


class _LetsAllThrough:
    def iter_errors(self, data: Any) -> Iterator[Any]:
        return iter(())


def test_what_the_model_refuses_after_the_schema_is_reported(write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle, data = _spoil(write, lambda d: d["falsifiers"][0].update(verdict="maybe"))
    monkeypatch.setattr(verify, "_validator", lambda: _LetsAllThrough())
    with pytest.raises(ValidationError) as refused:
        Bundle.model_validate(data)
    report = verify.verify_bundle(bundle)
    assert [(p.kind, p.file, p.detail) for p in report.problems] == [
        ("schema_error", "bundle.json", str(refused.value).splitlines()[0])
    ]
    assert report.bundle is None
