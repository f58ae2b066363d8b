"""QA gates any checkpoint must pass before it is served: ``python -m engine qa CKPT``.

Six gates, each with a measured value and, where the caller gives one, a bound:

- ``loads``: the file loads and validates (tensors, architecture, tokenizer), and the loaded
  config's special ids are the tokenizer's;
- ``tokenizer_roundtrip``: ``decode(encode(text)) == text`` over code, prose, unicode and whitespace;
- ``finite_logits``: no NaN or infinity in the logits of the sample prompts;
- ``golden``: greedy generation from a prompt gives exactly the expected tokens, read from a golden
  file (``--golden``; ``--write-golden`` makes one).  Without a file the reference is the model's
  own greedy decoding without the KV cache: every step's logits within the weights' dtype's
  tolerance (:func:`cache_logit_tolerance`), so a cached decoder that drifts fails it before a
  token flips, and the same tokens; the two may part only at a near tie, a step whose top-2
  margin is within twice the measured drift (rounding alone may then pick either), and are
  compared up to it;
- ``perplexity``: exp(mean next-token loss) over a held-out text, at most ``max_perplexity``;
- ``throughput``: greedy decode tokens per second, at least ``min_tokens_per_s``.  Timed
  :data:`THROUGHPUT_REPEATS` times with wall and CPU time; the value is the median rate, judged
  over the interval from the slowest repeat to what the CPU time the decode really got allows
  (:func:`pv.noise.rate_interval`).  A floor inside that interval is ``inconclusive``: the machine
  was too busy to tell, which fails nothing and passes nothing.

A gate without a bound reports its value and ``skipped``; a gate after a failed ``loads`` is
``skipped`` too.  The report is plain data (``to_json``) for the CLI table, ``--json`` and the
contract family ``checkpoint-qa-v1``.

Imports inside functions: pv (the harness's noise intervals) only where the throughput gate judges a
rate.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F

from engine.atomic import file_sha256
from engine.checkpoint import LoadedCheckpoint, load_checkpoint
from engine.errors import EngineError
from engine.faults import FAULTS
from engine.generate import generate
from engine.model import evaluating
from pv.noise import cpu_seconds

Status = Literal["pass", "fail", "skipped", "inconclusive"]
GATES = ("loads", "tokenizer_roundtrip", "finite_logits", "golden", "perplexity", "throughput")

ROUNDTRIP_TEXTS = (
    "def add(a, b):\n    return a + b\n",
    "The quick brown fox jumps over the lazy dog.",
    "naïve café — 数据 🙂",
    "  leading and trailing spaces \t\n\n",
    "",
)
SAMPLE_PROMPTS = ("def ", "import os\n", "class Stack:\n    ")
GOLDEN_PROMPT = "def fibonacci(n):\n"
GOLDEN_TOKENS = 16
THROUGHPUT_REPEATS = 5
CACHE_LOGIT_TOLERANCE = 1e-3  # the floor: float32 logits of cached against uncached decoding
# Cached and uncached decoding add the same products in other orders and shapes; each of the
# model's ~2 roundings per layer moves a logit by at most one unit in the last place of the
# weights' dtype at the logits' scale, and the drift measured on real checkpoints stays well
# inside this many of them (SmolLM2-135M: see docs/design.md, "QA for real files").
DRIFT_ULPS = 8
# Held-out text for the perplexity gate: written for this module, so in no training corpus.
HELD_OUT_TEXT = '''def moving_average(values, window):
    """Return the averages of each run of `window` consecutive values."""
    if window <= 0:
        raise ValueError("window must be positive")
    total = sum(values[:window])
    out = [total / window]
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        out.append(total / window)
    return out
'''


class QAError(EngineError):
    """Bad QA input: an unreadable golden file or text, an impossible bound."""


@dataclass
class Gate:
    name: str
    status: Status
    value: float | None = None
    bound: float | None = None
    detail: str = ""
    interval: tuple[float, float] | None = None  # where the machine's noise leaves value (timed gates)


@dataclass
class QAReport:
    checkpoint: str
    sha256: str
    gates: list[Gate] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(g.status != "fail" for g in self.gates)

    def gate(self, name: str) -> Gate:
        return next(g for g in self.gates if g.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "sha256": self.sha256,
            "passed": self.passed,
            "gates": [asdict(g) for g in self.gates],
        }


@dataclass(frozen=True)
class QAOptions:
    golden: Path | None = None
    max_perplexity: float | None = None
    min_tokens_per_s: float | None = None
    text: str = HELD_OUT_TEXT
    throughput_tokens: int = 32
    device: str = "cpu"
    gates: tuple[str, ...] = GATES  # which gates to run (``loads`` always runs: the rest need the model)


def run_qa(checkpoint: str | Path, options: QAOptions | None = None) -> QAReport:
    """Every gate of :data:`GATES` on ``checkpoint``, in order."""
    opts = options or QAOptions()
    path = Path(checkpoint)
    golden = read_golden(opts.golden) if opts.golden is not None else None  # bad input before any work
    report = QAReport(str(path), file_sha256(path) if path.is_file() else "")
    try:
        loaded = load_checkpoint(path, device=opts.device)
    except (EngineError, OSError, ValueError) as exc:
        report.gates.append(Gate("loads", "fail", 0.0, None, str(exc)))
        report.gates += [Gate(n, "skipped", detail="the checkpoint does not load") for n in GATES[1:]]
        return report
    loaded.model.eval()
    unknown = sorted(set(opts.gates) - set(GATES))
    if unknown:
        raise QAError(f"unknown QA gate(s) {', '.join(unknown)}; the gates are {', '.join(GATES)}")
    runs = {
        "tokenizer_roundtrip": lambda: _roundtrip(loaded),
        "finite_logits": lambda: _finite(loaded),
        "golden": lambda: golden_gate(loaded, golden),
        "perplexity": lambda: _perplexity(loaded, opts.text, opts.max_perplexity),
        "throughput": lambda: _throughput(loaded, opts.throughput_tokens, opts.min_tokens_per_s),
    }
    report.gates.append(_loads(loaded))
    report.gates += [runs[name]() for name in GATES[1:] if name in opts.gates]
    return report


def _loads(loaded: LoadedCheckpoint) -> Gate:
    cfg, tok = loaded.config, loaded.tokenizer
    wrong = [
        f"{name} {got} != tokenizer's {want}"
        for name, got, want in (
            ("bos_token_id", cfg.bos_token_id, tok.bos_id),
            ("pad_token_id", cfg.pad_token_id, tok.pad_id),
        )
        if got != want
    ]
    if tok.eos_id not in cfg.eos_ids:
        wrong.append(f"eos ids {list(cfg.eos_ids)} lack the tokenizer's {tok.eos_id}")
    if FAULTS.active("qa_loads_first_mismatch_only"):  # the defect: one disagreement named, the rest hidden
        wrong = wrong[:1]  # pragma: no mutate
    if wrong:
        return Gate("loads", "fail", 0.0, None, "; ".join(wrong))
    return Gate("loads", "pass", 1.0, None, f"{loaded.model.num_parameters():,} parameters")


def _roundtrip(loaded: LoadedCheckpoint) -> Gate:
    tok = loaded.tokenizer
    bad = [t for t in ROUNDTRIP_TEXTS if tok.decode(tok.encode(t)) != t]
    shown = "; ".join(repr(t[:30]) for t in bad)
    return Gate(
        "tokenizer_roundtrip",
        "fail" if bad else "pass",
        float(len(bad)),
        0.0,
        f"{len(ROUNDTRIP_TEXTS) - len(bad)}/{len(ROUNDTRIP_TEXTS)} texts round-trip"
        + (f"; not: {shown}" if bad else ""),
    )


def _logits(loaded: LoadedCheckpoint, ids: Sequence[int]) -> torch.Tensor:
    device = next(loaded.model.parameters()).device
    with evaluating(loaded.model), torch.no_grad():
        logits: torch.Tensor = loaded.model(torch.tensor([list(ids)], device=device)).logits
    return logits[0].float()


def _finite(loaded: LoadedCheckpoint) -> Gate:
    bad = 0
    for prompt in SAMPLE_PROMPTS:
        logits = _logits(loaded, loaded.tokenizer.encode_prompt(prompt))
        non_finite = ~torch.isfinite(logits)
        if FAULTS.active("qa_finite_counts_nan_only"):
            non_finite = torch.isnan(logits)  # pragma: no mutate
        bad += int(non_finite.sum())
    return Gate("finite_logits", "fail" if bad else "pass", float(bad), 0.0, f"{len(SAMPLE_PROMPTS)} prompts")


def greedy(loaded: LoadedCheckpoint, prompt: str, max_new_tokens: int) -> list[int]:
    """Greedy decoding with the KV cache, as generation runs it: the new token ids."""
    return _decode(loaded, prompt, max_new_tokens)[0]


def _decode(
    loaded: LoadedCheckpoint, prompt: str, max_new_tokens: int, use_cache: bool = True
) -> tuple[list[int], torch.Tensor]:
    device = next(loaded.model.parameters()).device
    ids = torch.tensor([loaded.tokenizer.encode_prompt(prompt)], device=device)
    out = generate(loaded.model, ids, max_new_tokens=max_new_tokens, use_cache=use_cache, return_logits=True)
    assert out.scores is not None
    return [int(t) for t in out.new_tokens[0]], out.scores[0]


def golden_record(loaded: LoadedCheckpoint, prompt: str = GOLDEN_PROMPT, tokens: int = GOLDEN_TOKENS) -> dict[str, Any]:
    """What ``--write-golden`` stores: the prompt, the greedy new token ids and their text."""
    new = greedy(loaded, prompt, tokens)
    if FAULTS.active("golden_prompt_stripped"):  # the defect: the file's prompt loses its trailing newline
        prompt = prompt.strip()  # pragma: no mutate
    return {"prompt": prompt, "max_new_tokens": tokens, "new_ids": new, "text": loaded.tokenizer.decode(new)}


def read_held_out(path: Path) -> str:
    """The perplexity gate's held-out text from a file; a file that is not UTF-8 is refused by name
    (an unreadable one raises the OSError that names it)."""
    data = path.read_bytes()
    try:
        return data.decode()  # bytes.decode reads UTF-8 unless told otherwise
    except UnicodeDecodeError as exc:
        raise QAError(f"held-out text {path}: not UTF-8 text (byte {exc.start})") from None


def read_golden(path: Path) -> dict[str, Any]:
    try:  # an unreadable file raises the OSError that names it, reported as the system words it
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise QAError(f"golden file {path}: {exc}") from None
    ids = data.get("new_ids") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("prompt"), str) or not isinstance(ids, list):
        raise QAError(
            f"golden file {path}: needs a `prompt` string and a `new_ids` list (write one with --write-golden)"
        )
    if FAULTS.active("golden_ids_unchecked"):  # the defect: any list is taken for token ids
        return data  # pragma: no mutate
    if not all(isinstance(i, int) for i in ids):
        raise QAError(f"golden file {path}: new_ids must be token ids")
    return data


def cache_logit_tolerance(dtype: torch.dtype, scale: float) -> float:
    """How far cached logits may drift from uncached ones for weights of ``dtype`` whose logits
    reach ``scale`` in magnitude: :data:`DRIFT_ULPS` units in the last place there, never below
    :data:`CACHE_LOGIT_TOLERANCE`."""
    return max(CACHE_LOGIT_TOLERANCE, DRIFT_ULPS * torch.finfo(dtype).eps * scale)


def _margin(logits: torch.Tensor) -> float:
    """The gap between the two largest logits of one step."""
    top = logits.topk(2).values
    return float(top[0] - top[1])


def golden_gate(loaded: LoadedCheckpoint, golden: dict[str, Any] | None) -> Gate:
    """The ``golden`` gate on a loaded model: against ``golden`` (a golden file's record), or
    without one against its own uncached greedy decoding."""
    if golden is None:
        want, reference = _decode(loaded, GOLDEN_PROMPT, GOLDEN_TOKENS, use_cache=False)
        got, scores = _decode(loaded, GOLDEN_PROMPT, GOLDEN_TOKENS)
        steps = min(len(reference), len(scores))
        part = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
        # After the two decodes part, each step reads other tokens: only the steps up to and
        # including the parting one compare the same computation.  (A bfloat16 model on AMX
        # parted at a near tie at step 14 and then "drifted" 7.4 on its different next token.)
        if part is not None:
            steps = min(steps, part + 1)
        drift = float((scores[:steps] - reference[:steps]).abs().max()) if steps else 0.0
        dtype = next(loaded.model.parameters()).dtype
        scale = float(reference[:steps].abs().max()) if steps else 0.0
        tolerance = cache_logit_tolerance(dtype, scale)
        if not drift <= tolerance:
            detail = f"cached logits drift {drift:.3g} from uncached (> {tolerance:.3g} for {_dtype_name(dtype)})"
            return Gate("golden", "fail", float(len(want)), float(len(want)), detail)
        tie = ""
        if part is not None and part < steps and _margin(reference[part]) <= 2 * drift:
            tie = f"; parted at a near tie at step {part} (margin {_margin(reference[part]):.2g}), compared up to it"
            if not FAULTS.active("golden_tie_compared_past_part"):  # the defect: the parted tokens compared
                want, got = want[:part], got[:part]
        source = (
            f"greedy decoding without the KV cache (logits within {drift:.2g} <= {tolerance:.2g} for "
            f"{_dtype_name(dtype)}){tie}"
        )
    else:
        want = list(golden["new_ids"])
        asked = int(golden.get("max_new_tokens", len(want)))
        if FAULTS.active("qa_golden_record_length_ignored"):  # the defect: as many tokens as the file holds
            asked = len(want)  # pragma: no mutate
        got = greedy(loaded, golden["prompt"], asked)
        source = "the golden file"
    same = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
    if FAULTS.active("qa_golden_first_difference_off_by_one") and got != want:
        same += 1  # pragma: no mutate
    ok = got == want
    detail = (
        f"{len(want)} tokens from {source}"
        if ok
        else f"first difference at token {same}: {got[same : same + 4]} != {want[same : same + 4]}"
    )
    return Gate("golden", "pass" if ok else "fail", float(same), float(len(want)), detail)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def perplexity(loaded: LoadedCheckpoint, text: str) -> tuple[float, int]:
    """exp(mean next-token cross-entropy) over ``text`` in windows of the model's context; tokens scored."""
    ids = loaded.tokenizer.encode_prompt(text)
    if len(ids) < 2:
        raise QAError("the held-out text is too short to score (fewer than two tokens)")
    window = loaded.config.max_position_embeddings
    total, count = 0.0, 0
    stride = window - 1  # consecutive windows share one token, so every next token is scored once
    if FAULTS.active("qa_perplexity_window_skips_a_token"):
        stride = window  # pragma: no mutate
    for start in range(0, len(ids) - 1, stride):
        chunk = ids[start : start + window]
        if len(chunk) < 2:
            break
        if FAULTS.active("qa_perplexity_last_pair_skipped") and len(chunk) == 2:  # pragma: no mutate
            break  # pragma: no mutate -- the defect: a last window of two tokens goes unscored
        logits = _logits(loaded, chunk)
        target = torch.tensor(chunk[1:], device=logits.device)
        total += float(F.cross_entropy(logits[:-1], target, reduction="sum"))
        count += len(chunk) - 1
    return math.exp(total / count), count


def _perplexity(loaded: LoadedCheckpoint, text: str, bound: float | None) -> Gate:
    ppl, scored = perplexity(loaded, text)
    if not math.isfinite(ppl):
        return Gate("perplexity", "fail", ppl, bound, f"non-finite over {scored} tokens")
    status: Status = "skipped" if bound is None else ("pass" if ppl <= bound else "fail")
    return Gate("perplexity", status, ppl, bound, f"{scored} tokens" + ("; no bound given" if bound is None else ""))


def _throughput(loaded: LoadedCheckpoint, tokens: int, bound: float | None) -> Gate:
    from pv.noise import rate_interval

    greedy(loaded, "def ", 2)  # warm-up: first-call allocations are not decode speed
    clock = cpu_seconds
    if FAULTS.active("qa_throughput_cpu_clock_sampled"):  # the defect: a clock a CPU-time limit samples at the tick
        clock = time.process_time  # pragma: no mutate
    walls, cpus, produced = [], [], 0
    for _ in range(THROUGHPUT_REPEATS):
        c0, start = clock(), time.perf_counter()
        produced = len(greedy(loaded, "def ", tokens))
        if FAULTS.active("qa_throughput_counts_requested_tokens"):
            produced = tokens  # the defect: a decode that stopped on EOS is credited in full  # pragma: no mutate
        walls.append(time.perf_counter() - start)
        cpus.append(clock() - c0)
        if FAULTS.active("qa_throughput_cpu_since_start"):  # the defect: the process's CPU clock, not the decode's
            cpus[-1] += c0  # pragma: no mutate
    rate = rate_interval(produced, walls, cpus, threads=torch.get_num_threads())
    status: Status = "skipped"
    if bound is not None:
        status = "pass" if rate.low >= bound else ("fail" if rate.high < bound else "inconclusive")
    detail = (
        f"{produced} tokens x {THROUGHPUT_REPEATS}, median of rates; {rate.low:.4g}..{rate.high:.4g} tok/s "
        f"within the noise (CPU/wall {rate.noise['cpu_over_wall']:.2f})"
    )
    if bound is None:
        detail += "; no bound given"
    elif status == "inconclusive":
        detail += "; the machine was too busy to decide the floor"
    return Gate("throughput", status, rate.value, bound, detail, (rate.low, rate.high))
