"""The QA gates' own arithmetic and failure reports (engine.qa), the contract family ``qa-gates-v1``.

``checkpoint-qa-v1`` asks whether a checkpoint passes; these checkers ask whether a gate says the
right thing when it runs: the perplexity formula (written out here, windows included), the index a
golden comparison reports, the count of non-finite logits, which gates a file that does not load
leaves skipped, and the ``qa`` command's exit code.  Each starts from the session's pretrained tiny
checkpoint and damages its own copy where a gate must fail.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from typer.testing import CliRunner

from engine.__main__ import COMMAND_MODULES
from engine.app import app
from engine.checkpoint import LoadedCheckpoint, load_checkpoint, make_manifest, save_checkpoint
from engine.qa import (
    GATES,
    HELD_OUT_TEXT,
    ROUNDTRIP_TEXTS,
    SAMPLE_PROMPTS,
    THROUGHPUT_REPEATS,
    QAOptions,
    golden_gate,
    golden_record,
    run_qa,
)
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.realistic_models import realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

NOT_LOADED = "the checkpoint does not load"
REPEATS_FOR_LONG_TEXT = 5  # five copies of the held-out text: ~1,000 tokens, several 256-token windows


def reference_perplexity(loaded: LoadedCheckpoint, text: str) -> tuple[float, int, int]:
    """exp(total next-token cross-entropy / tokens scored), the text cut into windows of the
    context length that overlap by one token, so every token after the first is predicted exactly
    once: (perplexity, tokens scored, windows)."""
    ids = loaded.tokenizer.encode_prompt(text)
    window = loaded.config.max_position_embeddings
    total, scored, windows, start = 0.0, 0, 0, 0
    while start < len(ids) - 1:
        chunk = ids[start : start + window]
        with torch.no_grad():
            logits = loaded.model(torch.tensor([chunk])).logits[0].double()
        total += float(F.cross_entropy(logits[:-1], torch.tensor(chunk[1:]), reduction="sum"))
        scored += len(chunk) - 1
        windows += 1
        start += window - 1
    return math.exp(total / scored), scored, windows


@checker(
    observes=[
        "short_rel_err",
        "long_rel_err",
        "long_windows",
        "tokens_scored_mismatches",
        "status_mismatches",
    ],
    ids=["FALSIFY-QAG-001"],
)
def perplexity_formula(pretrained_init: Path) -> dict[str, Any]:
    """The perplexity gate on the held-out text and on five copies of it (longer than the context)
    against the formula above; with a bound above the value it passes, below it fails, without
    one it is skipped, the value and bound reported either way."""
    loaded = load_checkpoint(pretrained_init)
    loaded.model.eval()
    out: dict[str, Any] = {"tokens_scored_mismatches": 0, "status_mismatches": 0}
    for label, text in (("short", HELD_OUT_TEXT), ("long", HELD_OUT_TEXT * REPEATS_FOR_LONG_TEXT)):
        want, scored, windows = reference_perplexity(loaded, text)
        if label == "long":
            out["long_windows"] = windows
        gates = {}
        for case, bound in (("none", None), ("above", want * 1.01), ("below", want * 0.99)):
            report = run_qa(pretrained_init, QAOptions(text=text, max_perplexity=bound, gates=("perplexity",)))
            gates[case] = report.gate("perplexity")
            expected = {"none": "skipped", "above": "pass", "below": "fail"}[case]
            out["status_mismatches"] += gates[case].status != expected or gates[case].bound != bound
            out["status_mismatches"] += case == "below" and report.passed
        got = gates["none"].value
        out[f"{label}_rel_err"] = abs(got - want) / want if got is not None else float("inf")
        out["tokens_scored_mismatches"] += not str(gates["none"].detail).startswith(f"{scored} tokens")
    return out


def _golden_file(path: Path, record: dict[str, Any]) -> Path:
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


@checker(
    observes=[
        "exact_status",
        "exact_value",
        "exact_bound",
        "edited_at",
        "edited_status",
        "edited_value",
        "edited_bound",
        "edited_detail_names_token",
        "short_value",
        "short_status",
        "drift_status",
        "drift_detail_names_dtype",
        "cli_exit_pass",
        "cli_exit_fail",
    ],
    ids=["FALSIFY-QAG-002"],
)
def golden_reports(pretrained_init: Path, tmp_path: Path, edited_at: int = 5) -> dict[str, Any]:
    """The golden gate against the checkpoint's own golden file (pass, 16 of 16), the same file with
    token ``edited_at`` changed (fail at exactly that index), a 10-token file (pass, 10), and,
    without a file, a model whose cached logits drift (fail, naming the drift and the dtype); the
    ``qa`` command exits 0 on the first and 1 on the second."""

    loaded = load_checkpoint(pretrained_init)
    loaded.model.eval()
    base = fresh_dir(tmp_path, "golden-")
    record = golden_record(loaded)
    exact = _golden_file(base / "exact.json", record)
    edited_ids = list(record["new_ids"])
    edited_ids[edited_at] = (edited_ids[edited_at] + 1) % loaded.config.vocab_size
    edited = _golden_file(base / "edited.json", {**record, "new_ids": edited_ids})
    short = _golden_file(base / "short.json", {**record, "new_ids": record["new_ids"][:10], "max_new_tokens": 10})

    def gate(path: Path) -> Any:
        return run_qa(pretrained_init, QAOptions(golden=path, gates=("golden",))).gate("golden")

    g_exact, g_edited, g_short = gate(exact), gate(edited), gate(short)

    # Cached decoding feeds one token per forward, uncached the whole sequence: a head that adds
    # 0.01 per position of the call to one logit drifts exactly where a broken cache would.
    def drifting_head(_module: Any, _inputs: Any, logits: torch.Tensor) -> torch.Tensor:
        bump = torch.zeros_like(logits)
        bump[..., 0] = 0.01 * logits.shape[1]
        return logits + bump

    handle = loaded.model.lm_head.register_forward_hook(drifting_head)
    try:
        drift = golden_gate(loaded, None)
    finally:
        handle.remove()

    for name in COMMAND_MODULES:
        importlib.import_module(name)
    runner = CliRunner()
    exit_pass = runner.invoke(app, ["qa", str(pretrained_init), "--golden", str(exact)]).exit_code
    exit_fail = runner.invoke(app, ["qa", str(pretrained_init), "--golden", str(edited)]).exit_code
    return {
        "exact_status": g_exact.status,
        "exact_value": g_exact.value,
        "exact_bound": g_exact.bound,
        "edited_at": edited_at,
        "edited_status": g_edited.status,
        "edited_value": g_edited.value,
        "edited_bound": g_edited.bound,
        "edited_detail_names_token": int(f"first difference at token {edited_at}:" in g_edited.detail),
        "short_value": g_short.value,
        "short_status": g_short.status,
        "drift_status": drift.status,
        "drift_detail_names_dtype": int("drift" in drift.detail and "float32" in drift.detail),
        "cli_exit_pass": exit_pass,
        "cli_exit_fail": exit_fail,
    }


def _non_finite(loaded: LoadedCheckpoint) -> int:
    count = 0
    for prompt in SAMPLE_PROMPTS:
        with torch.no_grad():
            logits = loaded.model(torch.tensor([loaded.tokenizer.encode_prompt(prompt)])).logits
        count += int(logits.numel() - torch.isfinite(logits).sum())
    return count


@checker(
    observes=[
        "overflow_expected",
        "overflow_reported",
        "overflow_status",
        "mixed_expected",
        "mixed_reported",
        "mixed_status",
        "unloadable_status",
        "unloadable_skipped",
        "unloadable_passed",
        "pad_mismatch_status",
        "pad_mismatch_named",
    ],
    ids=["FALSIFY-QAG-003"],
)
def failures_reported(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """Damaged copies of the checkpoint (finite weights: the loader refuses others): a head row of
    1e38 (infinite logits, no NaN), a head row of alternating ±3e38 (overflows of both signs meet),
    a file that is not a checkpoint, and a config whose pad id is not the tokenizer's.  The
    finite-logits gate fails with exactly the count of non-finite logits measured here; the
    unloadable file fails ``loads`` and skips every other gate; the pad mismatch fails ``loads``
    naming the field."""
    base = fresh_dir(tmp_path, "damaged-")
    out: dict[str, Any] = {}
    for label in ("overflow", "mixed"):
        loaded = load_checkpoint(pretrained_init)
        with torch.no_grad():
            row = loaded.model.lm_head.weight[7]
            if label == "overflow":
                row.fill_(1e38)  # finite weights (the loader refuses others) whose logit overflows
            else:
                row.copy_(3e38 * torch.where(torch.arange(row.numel()) % 2 == 0, 1.0, -1.0))  # +inf meets -inf
        path = save_checkpoint(base / f"{label}.safetensors", loaded.model, loaded.tokenizer, loaded.manifest)
        reloaded = load_checkpoint(path)
        reloaded.model.eval()
        out[f"{label}_expected"] = _non_finite(reloaded)
        g = run_qa(path, QAOptions(gates=("finite_logits",))).gate("finite_logits")
        out[f"{label}_reported"], out[f"{label}_status"] = g.value, g.status
    junk = base / "junk.safetensors"
    junk.write_bytes(b"\x00" * 64)
    report = run_qa(junk)
    out["unloadable_status"] = report.gate("loads").status
    skipped = [report.gate(n) for n in GATES[1:]]
    out["unloadable_skipped"] = sum(g.status == "skipped" and g.detail == NOT_LOADED for g in skipped)
    out["unloadable_passed"] = int(report.passed)
    loaded = load_checkpoint(pretrained_init)
    loaded.model.config = loaded.config = type(loaded.config).from_dict(
        {**loaded.config.to_dict(), "pad_token_id": loaded.tokenizer.eos_id}
    )
    path = save_checkpoint(base / "pad.safetensors", loaded.model, loaded.tokenizer, loaded.manifest)
    g = run_qa(path, QAOptions(gates=("loads",))).gate("loads")
    out["pad_mismatch_status"] = g.status
    out["pad_mismatch_named"] = int("pad_token_id" in g.detail)
    return out


# What the throughput gate's detail says: produced tokens x repeats, the interval, CPU over wall.
THROUGHPUT_DETAIL = re.compile(
    r"(\d+) tokens x (\d+), median of rates; (\S+)\.\.(\S+) tok/s within the noise \(CPU/wall (\d+\.\d\d)\)"
)
# A tokenizer that folds case and splits accents: the texts it changes no longer round-trip.
LOSSY_NORMALIZER = {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]}


def _throughput_mismatches(gate: Any, bound: float | None, produced: int, repeats: int) -> int:
    """Fields of a throughput gate that are not what its bound, interval and decode say."""
    low, high = gate.interval if gate.interval else (math.nan, math.nan)
    judged = "pass" if bound is not None and low >= bound else "fail" if bound is not None and high < bound else ""
    status = "skipped" if bound is None else judged or "inconclusive"
    found = THROUGHPUT_DETAIL.match(gate.detail)
    suffix = "; no bound given" if bound is None else ""
    want_detail = found is not None and (
        (int(found[1]), int(found[2]), found[3], found[4]) == (produced, repeats, f"{low:.4g}", f"{high:.4g}")
        and gate.detail == found[0] + suffix
    )
    return (gate.status != status) + (gate.bound != bound) + (not 0 < low <= gate.value <= high) + (not want_detail)


@checker(
    observes=[
        "throughput_runs",
        "produced_expected",
        "tokens_requested",
        "throughput_mismatches",
        "throughput_statuses",
        "roundtrip_failing_expected",
        "roundtrip_mismatches",
        "cli_exit",
        "report_mismatches",
    ],
    ids=["FALSIFY-QAG-004"],
)
def gates_report_their_figures(
    tmp_path: Path, engine_tokenizer: Any, tiny_model_factory: Any, tokens: int = 16, stop_step: int = 5
) -> dict[str, Any]:
    """The throughput gate with no bound, a bound any machine meets and one none does, on a
    checkpoint whose EOS ids include the token greedy decoding (written out here) gives at
    ``stop_step``: status, bound, value inside its interval, and a detail naming the tokens the
    decode really produced, the repeats and the interval; the round-trip gate on the tokenizer and
    on a copy that folds case and splits accents: status, count and the texts named, each against
    the ``tokenizers`` library's own decode(encode(text)); then ``qa --json --min-tok-s`` on the
    lossy copy: the report names the file and hashlib's sha256 of it, fails, lists the six gates in
    order with exactly their six fields, the round-trip and throughput gates as above."""

    base = fresh_dir(tmp_path, "gate-figures-")
    model = realistic_model(tiny_model_factory, 0, "llama").eval()
    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    prompt = ([engine_tokenizer.bos_id] if engine_tokenizer.add_bos_token else []) + backend.encode(
        "def ", add_special_tokens=False
    ).ids
    first = _greedy(model, prompt, tokens, set())
    eos = {engine_tokenizer.eos_id, first[stop_step - 1]}
    model.config = model.config.replace(eos_token_id=(engine_tokenizer.eos_id, first[stop_step - 1]))
    produced = len(_greedy(model, prompt, tokens, eos))
    path = save_checkpoint(base / "stops.safetensors", model, engine_tokenizer, make_manifest(step=0))
    out: dict[str, Any] = {"produced_expected": produced, "tokens_requested": tokens, "throughput_runs": 0}
    out |= {"throughput_mismatches": 0, "throughput_statuses": ""}
    for bound in (None, 1e-6, 1e12):
        options = QAOptions(gates=("throughput",), min_tokens_per_s=bound, throughput_tokens=tokens)
        gate = run_qa(path, options).gate("throughput")
        out["throughput_runs"] += 1
        out["throughput_statuses"] += ("," if out["throughput_statuses"] else "") + gate.status
        out["throughput_mismatches"] += _throughput_mismatches(gate, bound, produced, THROUGHPUT_REPEATS)

    doc = json.loads(engine_tokenizer.to_json())
    doc["tokenizer"]["normalizer"] = LOSSY_NORMALIZER
    lossy = EngineTokenizer.from_json(json.dumps(doc))
    out["roundtrip_mismatches"] = 0
    for label, tok in (("plain", engine_tokenizer), ("lossy", lossy)):
        reference = Tokenizer.from_str(json.dumps(doc["tokenizer"]) if label == "lossy" else tok.hf_json())
        bad = [t for t in ROUNDTRIP_TEXTS if reference.decode(reference.encode(t, add_special_tokens=False).ids) != t]
        if label == "lossy":
            out["roundtrip_failing_expected"] = len(bad)
        ckpt = save_checkpoint(base / f"{label}.safetensors", model, tok, make_manifest(step=0))
        gate = run_qa(ckpt, QAOptions(gates=("tokenizer_roundtrip",))).gate("tokenizer_roundtrip")
        detail = f"{len(ROUNDTRIP_TEXTS) - len(bad)}/{len(ROUNDTRIP_TEXTS)} texts round-trip"
        detail += f"; not: {'; '.join(repr(t[:30]) for t in bad)}" if bad else ""
        want = ("fail" if bad else "pass", float(len(bad)), 0.0, detail)
        if label == "lossy":
            lossy_path, lossy_gate = ckpt, want
        out["roundtrip_mismatches"] += sum(
            a != b for a, b in zip((gate.status, gate.value, gate.bound, gate.detail), want, strict=True)
        )

    # The same through the command a user runs: the whole report, as JSON.
    result = cli_runner()("qa", lossy_path, "--json", "--min-tok-s", 1e-6)
    out["cli_exit"] = result.exit_code
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        return out | {"report_mismatches": 1}
    sha = hashlib.sha256(lossy_path.read_bytes()).hexdigest()
    gates = report.get("gates", [])
    fields = {"name", "status", "value", "bound", "detail", "interval"}
    mismatches: int = (report.get("checkpoint"), report.get("sha256"), report.get("passed")) != (
        str(lossy_path),
        sha,
        False,
    )
    mismatches += set(report) != {"checkpoint", "sha256", "passed", "gates"}
    mismatches += [g.get("name") for g in gates] != list(GATES)
    mismatches += sum(set(g) != fields for g in gates)
    by_name = {g.get("name"): g for g in gates}
    roundtrip = by_name.get("tokenizer_roundtrip", {})
    mismatches += (
        roundtrip.get("status"),
        roundtrip.get("value"),
        roundtrip.get("bound"),
        roundtrip.get("detail"),
    ) != lossy_gate
    throughput = by_name.get("throughput", {})
    interval = tuple(throughput.get("interval") or ()) or None
    produced_32 = len(_greedy(model, prompt, 32, eos))  # the command decodes qa's default 32 tokens
    reported = SimpleNamespace(**{**throughput, "interval": interval})
    mismatches += _throughput_mismatches(reported, 1e-6, produced_32, THROUGHPUT_REPEATS) if throughput else 1
    return out | {"report_mismatches": mismatches}
