"""``apply`` given the bytes a caller read (``raw``), not the decision's: it judges those bytes,
parsed again, never the decision's parse of other bytes; and each refusal says what changed."""

from __future__ import annotations

import datetime as dt

import pytest

from pv.promote import PromoteError, apply, decide
from tests.pv.evidence.conftest import CONTRACT, Project, Writer, all_survive

TODAY = dt.date(2026, 3, 2)


def test_the_bytes_given_are_judged_not_the_decision_s(project: Project, write: Writer) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    # the status set by hand after the decision, and the caller passes the bytes it read now
    by_hand = CONTRACT.replace("status: DRAFT", "status: ACTIVE", 1)
    project.contract.write_text(by_hand, encoding="utf-8")
    with pytest.raises(PromoteError) as refused:
        apply(decision, TODAY, project.root, raw=by_hand.encode())
    assert str(refused.value) == (
        f"{decision.path}: its status changed since the decision was taken; run pv promote again"
    )
    assert project.contract.read_text(encoding="utf-8") == by_hand


def test_bytes_that_do_not_load_are_refused_with_the_fix(project: Project, write: Writer) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    broken = CONTRACT.replace("  kind: training-loop\n", "  kind: [training-loop\n", 1)
    project.contract.write_text(broken, encoding="utf-8")
    with pytest.raises(PromoteError) as refused:
        apply(decision, TODAY, project.root, raw=broken.encode())
    message = str(refused.value)
    assert message.startswith(f"{decision.path}: the contract does not load (")
    assert message.endswith("); fix it (`pv validate` shows where), then run `pv promote` again")


def test_the_same_bytes_given_again_are_promoted(project: Project, write: Writer) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    new = apply(decision, TODAY, project.root, raw=CONTRACT.encode())
    assert "status: ACTIVE" in new and project.contract.read_text(encoding="utf-8") == new


def test_a_contract_without_a_status_line_is_draft_and_gets_one(project: Project, write: Writer) -> None:
    no_status = CONTRACT.replace("  status: DRAFT         # written by pv promote\n", "", 1)
    assert no_status != CONTRACT
    project.contract.write_text(no_status, encoding="utf-8")
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    new = apply(decision, TODAY, project.root)
    assert "  version: 1.0.0        # semver, checked by lint\n  status: ACTIVE\n" in new


def test_bytes_whose_metadata_is_not_a_mapping_have_no_status_to_promote(project: Project, write: Writer) -> None:
    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    listed = "metadata: [demo-v1]\n"
    project.contract.write_text(listed, encoding="utf-8")
    with pytest.raises(PromoteError, match="its status changed since the decision was taken"):
        apply(decision, TODAY, project.root, raw=listed.encode())
