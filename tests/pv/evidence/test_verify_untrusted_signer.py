"""A bundle signed by a key that is not trusted is untrusted, and verify names the envelope as the
file at fault with the key that signed it (its first 16 hex digits), the way it names the envelope
of an unsigned bundle."""

from __future__ import annotations

from pv.bundle.model import ENVELOPE_FILE
from pv.bundle.signing import KeyRing, Signer, generate
from pv.evidence.verify import verify_bundle
from pv.evidence.writer import write_run
from tests.pv.evidence.conftest import ENV, Project, all_survive, record


def test_a_bundle_signed_by_an_untrusted_key_names_its_envelope(project: Project) -> None:
    private, _ = generate()
    signer = Signer.from_pem(private)
    [outcome] = write_run(record(project, all_survive()), project.evidence, project.root, ENV, signer)
    assert outcome.path is not None
    report = verify_bundle(outcome.path, keys=KeyRing.from_pem(generate()[1], "ci"))
    [(kind, file, detail)] = [(p.kind, p.file, p.detail) for p in report.problems]
    assert (kind, file) == ("untrusted", ENVELOPE_FILE)
    assert detail == f"signed only by keys that are not trusted: {signer.key_id[:16]}"
    assert report.signed_by is None
