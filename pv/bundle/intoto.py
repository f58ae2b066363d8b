"""in-toto Statement v1 for a bundle: the contract and every artifact as subjects, the bundle as
predicate under this project's predicate type."""

from __future__ import annotations

from typing import Any

from pv.bundle.model import PREDICATE_TYPE, STATEMENT_TYPE, Bundle

CONTRACT_SUBJECT_PREFIX = "contract:"


def subjects(bundle: Bundle) -> list[dict[str, Any]]:
    contract = {
        "name": CONTRACT_SUBJECT_PREFIX + bundle.contract.path,
        "digest": {"sha256": bundle.contract.sha256},
        "annotations": {
            "binding_digest": bundle.contract.binding_digest,
            "binding_method": bundle.contract.binding_method,
        },
    }
    arts = [{"name": a.path, "digest": {"sha256": a.sha256}} for a in bundle.artifacts]
    return [contract, *arts]


def statement(bundle: Bundle) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects(bundle),
        "predicateType": PREDICATE_TYPE,
        "predicate": bundle.model_dump(mode="json"),
    }
