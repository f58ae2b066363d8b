"""A bundle that records no code (written before pv bound evidence to code, or adopted into the
ledger) is stale, for its own reason: it cannot say what it measured, so it backs no status, yet
it is intact history, not tampering."""

from __future__ import annotations

import json

from pv.bundle import intoto
from pv.bundle.model import Bundle
from pv.evidence.verify import verify_bundle
from tests.pv.evidence.conftest import Writer, all_survive, reseal


def test_a_bundle_without_its_code_is_stale_and_says_why(write: Writer) -> None:
    bundle = write(all_survive())
    data = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    del data["code"]  # as a bundle of an older pv: no such field, in bundle.json and in its statement
    reseal(bundle, data, {**intoto.statement(Bundle(**data)), "predicate": data})
    report = verify_bundle(bundle)
    assert [(p.kind, p.file, p.detail) for p in report.problems] == [
        (
            "stale",
            "code",
            "code changed: the bundle does not record the code it measured (written before pv bound "
            "evidence to code); run the falsifiers again",
        )
    ]
    assert report.status == "stale" and report.intact and not report.ok
