"""The evidence bundle format: what a bundle holds, how it is digested, stated and signed.

- :mod:`pv.bundle.model`: the ``bundle.json`` data model and its JSON Schema;
- :mod:`pv.bundle.digest`: canonical JSON, the contract binding digest, file digests;
- :mod:`pv.bundle.intoto`: the in-toto statement over a bundle;
- :mod:`pv.bundle.signing`: the DSSE envelope, ed25519 keys and the trusted key ring;
- :mod:`pv.bundle.environment`: the machine and versions a run measured on.

Nothing here reads or writes an evidence tree or knows of pytest: that is :mod:`pv.evidence`
(writer, verify, ledger, status, gc), which sits above the plugin's collection, and
:mod:`pv.evidence_hooks` (the pytest side).  The format sits below both, so the configuration,
the project and the loader can name it without a loop.
"""
