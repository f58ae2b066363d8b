"""The evidence tree: bundles written, verified, chained in a ledger, weighed into a status, pruned.

- :mod:`pv.evidence.writer`: a run's verdicts as bundles, written atomically;
- :mod:`pv.evidence.journal`: every verdict on disk as its falsifier ends (crash recovery);
- :mod:`pv.evidence.ledger`: the append-only hash chain of a contract's bundles;
- :mod:`pv.evidence.verify`: every digest, the schema, the binding and the signature recomputed;
- :mod:`pv.evidence.status`: the status the evidence supports (the one reader promote, status,
  lint and report share);
- :mod:`pv.evidence.code_binding`: the code a contract's falsifiers ran, and its digests;
- :mod:`pv.evidence.gc`: pruning what is history.

The bundle format itself is :mod:`pv.bundle`; the pytest side is :mod:`pv.evidence_hooks`.
"""
