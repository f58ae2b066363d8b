"""A contract's binding digest is a format, not an implementation detail: the sha256 of its
canonical JSON spelled out here (keys sorted, no spaces, text as UTF-8, not escaped), so a bundle
written by one pv still verifies under the next."""

from __future__ import annotations

import hashlib

from pv.bundle.digest import contract_binding_digest

CONTRACT = """\
metadata:
  id: démo-v1
  status: ACTIVE
  description: "loss ≤ 0.7·ln(V)"
  changelog:
    - {version: 1.0.0, change: initial}
    - {version: 1.0.0, change: promoted, evidence: evidence/démo-v1/r1}
"""
# status and the promotion entry left out: the two things pv promote writes
CANONICAL = (
    '{"metadata":{"changelog":[{"change":"initial","version":"1.0.0"}],'
    '"description":"loss ≤ 0.7·ln(V)","id":"démo-v1"}}'
)


def test_the_binding_digest_is_the_sha256_of_the_canonical_utf8_form() -> None:
    expected = hashlib.sha256(CANONICAL.encode("utf-8")).hexdigest()
    assert contract_binding_digest(CONTRACT.encode("utf-8")) == expected
