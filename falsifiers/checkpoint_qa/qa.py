"""QA gates on any checkpoint (engine.qa), the contract family ``checkpoint-qa-v1``.

The checkpoint comes from the ``qa_checkpoint`` fixture (contracts/conftest.py): the falsifier's
``checkpoint`` param (a parametrized falsifier runs one case per checkpoint), else
``$ENGINE_QA_CHECKPOINT`` (``ENGINE_QA_CHECKPOINT=model.safetensors pytest contracts/checkpoint-qa-v1.yaml``),
else the engine's own pretrained tiny checkpoint.  Every observation set names the file and its
sha256, so the evidence says which checkpoint passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.qa import ROUNDTRIP_TEXTS, QAOptions, run_qa
from pv.checkers import checker
from pv.noise import Measured

IDENTITY = ["checkpoint", "checkpoint_sha256", "loads"]
# Each checker takes `checkpoint` so that a contract may name one in params (the qa_checkpoint
# fixture reads it from there); the fixture's resolved path is what is measured.


def _gates(path: Path, options: QAOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    report = run_qa(path, options)
    by_name = {g.name: g for g in report.gates}
    identity = {
        "checkpoint": str(path),
        "checkpoint_sha256": report.sha256,
        "loads": int(by_name["loads"].status == "pass"),
    }
    return identity, by_name


@checker(observes=[*IDENTITY, "load_problem"], ids=["FALSIFY-QA-001"])
def loads(qa_checkpoint: Path, checkpoint: str | None = None) -> dict[str, Any]:
    """The checkpoint loads, validates, and its config's special ids are its tokenizer's."""
    identity, gates = _gates(qa_checkpoint, QAOptions(gates=("loads",)))
    return {**identity, "load_problem": gates["loads"].detail if not identity["loads"] else ""}


@checker(
    observes=[*IDENTITY, "golden_passed", "golden_matching", "golden_tokens", "golden_source"], ids=["FALSIFY-QA-002"]
)
def golden(qa_checkpoint: Path, checkpoint: str | None = None, golden: str | None = None) -> dict[str, Any]:
    """Greedy tokens equal the golden file's (or, without one, uncached greedy decoding's)."""
    options = QAOptions(golden=Path(golden) if golden else None, gates=("golden",))
    identity, gates = _gates(qa_checkpoint, options)
    g = gates.get("golden")
    if g is None:
        return {**identity, "golden_passed": 0, "golden_matching": 0, "golden_tokens": 0, "golden_source": "not run"}
    return {
        **identity,
        "golden_passed": int(g.status == "pass"),
        "golden_matching": int(g.value or 0),
        "golden_tokens": int(g.bound or 0),
        "golden_source": "file" if golden else "uncached",
    }


@checker(observes=[*IDENTITY, "perplexity", "nonfinite_logits", "tokens_scored"], ids=["FALSIFY-QA-003"])
def perplexity(
    qa_checkpoint: Path, checkpoint: str | None = None, text: str | None = None, max_perplexity: float | None = None
) -> dict[str, Any]:
    """Perplexity over the held-out text (engine.qa's, or the file ``text``), and finite logits."""
    options = QAOptions(max_perplexity=max_perplexity, gates=("finite_logits", "perplexity"))
    if text:
        options = QAOptions(
            max_perplexity=max_perplexity, text=Path(text).read_text(encoding="utf-8"), gates=options.gates
        )
    identity, gates = _gates(qa_checkpoint, options)
    if "perplexity" not in gates:
        return {**identity, "perplexity": float("inf"), "nonfinite_logits": -1, "tokens_scored": 0}
    scored = int(gates["perplexity"].detail.split()[0])
    return {
        **identity,
        "perplexity": float(gates["perplexity"].value or 0.0),
        "nonfinite_logits": int(gates["finite_logits"].value or 0),
        "tokens_scored": scored,
    }


@checker(observes=[*IDENTITY, "roundtrip_failures", "texts_checked"], ids=["FALSIFY-QA-004"])
def tokenizer_roundtrip(qa_checkpoint: Path, checkpoint: str | None = None) -> dict[str, Any]:
    """decode(encode(text)) == text for code, prose, unicode, whitespace and the empty string."""

    identity, gates = _gates(qa_checkpoint, QAOptions(gates=("tokenizer_roundtrip",)))
    failures = gates["tokenizer_roundtrip"].value if "tokenizer_roundtrip" in gates else len(ROUNDTRIP_TEXTS)
    return {**identity, "roundtrip_failures": int(failures or 0), "texts_checked": len(ROUNDTRIP_TEXTS)}


@checker(observes=[*IDENTITY, "tokens_per_s"], ids=["FALSIFY-QA-005"])
def throughput(
    qa_checkpoint: Path, checkpoint: str | None = None, tokens: int = 32, min_tokens_per_s: float | None = None
) -> dict[str, Any]:
    """Greedy decode speed in tokens per second (after a warm-up call), measured with noise: the
    median of repeated timings, in the interval the qa gate judges it over (pv.noise.rate_interval)."""
    identity, gates = _gates(
        qa_checkpoint, QAOptions(min_tokens_per_s=min_tokens_per_s, throughput_tokens=tokens, gates=("throughput",))
    )
    gate = gates.get("throughput")
    if gate is None or gate.value is None or gate.interval is None:
        return {**identity, "tokens_per_s": 0.0}
    low, high = gate.interval
    return {**identity, "tokens_per_s": Measured(float(gate.value), low, high, {"detail": gate.detail})}
