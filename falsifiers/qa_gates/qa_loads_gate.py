"""The ``loads`` gate and the report's header, field for field, and the refusal of unknown gates.

``run_qa`` always runs ``loads`` first: on a file that loads and whose special ids agree with its
tokenizer it passes with value 1 and the parameter count written with thousands separators; on a
file that does not load (junk bytes, a path that does not exist) it fails with value 0 and the
loader's own error text, and the report names the file with its sha256 (empty when there is no
file); on a checkpoint whose BOS, pad and EOS ids all disagree with its tokenizer it fails with
every disagreement, in that order, joined by "; ".  Asking for gates that do not exist is refused
before any work, naming them (sorted) and the gates there are.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.qa import GATES, QAError, QAOptions, run_qa
from falsifiers.qa_gates.qa_gate_reports import _fields
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(observes=["cases", "differing", "unknown_refusal"], ids=["FALSIFY-QAG-012"])
def loads_gate_in_full(tmp_path: Path, engine_tokenizer: Any, tiny_model_factory: Any) -> dict[str, Any]:
    """A healthy checkpoint, junk bytes, a missing path, ids that disagree, and unknown gate names."""

    work = fresh_dir(tmp_path, "qa-loads-")
    model = tiny_model_factory(0, vocab_size=engine_tokenizer.vocab_size)
    healthy = save_checkpoint(work / "healthy.safetensors", model, engine_tokenizer, make_manifest(step=0))
    junk = work / "junk.safetensors"
    junk.write_bytes(b"\x00" * 64)
    missing = work / "missing.safetensors"
    tok = engine_tokenizer
    # every special id off by one from the tokenizer's, the EOS ids without the tokenizer's
    bos, pad, eos = tok.bos_id + 1, tok.pad_id + 1, (tok.eos_id + 1, tok.eos_id + 2)
    model.config = model.config.replace(bos_token_id=bos, pad_token_id=pad, eos_token_id=eos)
    disagreeing = save_checkpoint(work / "ids.safetensors", model, tok, make_manifest(step=0))

    def loader_error(path: Path) -> str:
        try:
            load_checkpoint(path)
        except Exception as exc:
            return str(exc)
        return "loaded"

    count = sum(p.numel() for p in load_checkpoint(healthy).model.parameters())
    mismatch = (
        f"bos_token_id {bos} != tokenizer's {tok.bos_id}; pad_token_id {pad} != tokenizer's {tok.pad_id}; "
        f"eos ids {list(eos)} lack the tokenizer's {tok.eos_id}"
    )
    cases = (
        ("healthy", healthy, ["loads", "pass", 1.0, "none", f"{count:,} parameters"]),
        ("junk bytes", junk, ["loads", "fail", 0.0, "none", loader_error(junk)]),
        ("missing", missing, ["loads", "fail", 0.0, "none", loader_error(missing)]),
        ("ids disagreeing", disagreeing, ["loads", "fail", 0.0, "none", mismatch]),
    )
    differing: list[str] = []
    for label, path, want in cases:
        report = run_qa(path, QAOptions(gates=("loads",)))
        sha = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        header = [report.checkpoint, report.sha256]
        if header != [str(path), sha]:
            differing.append(f"{label}: report names {header!r}, not {[str(path), sha]!r}")
        if _fields(report.gates[0]) != want:
            differing.append(f"{label}: {_fields(report.gates[0])!r} != {want!r}")
    want_refusal = f"unknown QA gate(s) colour, speed; the gates are {', '.join(GATES)}"
    unknown = refusals_differing(
        [(lambda: run_qa(healthy, QAOptions(gates=("loads", "speed", "golden", "colour"))), QAError, want_refusal)]
    )
    return {
        "cases": len(cases),
        "differing": differing,
        "unknown_refusal": unknown[0] if unknown else "as documented",
    }
