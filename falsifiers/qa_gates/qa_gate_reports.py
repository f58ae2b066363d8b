"""Every field of the perplexity, finite-logits, golden and throughput gates as ``run_qa`` reports them.

A QA report is read by people and by CI: a gate's name, status, value, bound and detail are each
an output.  Here each is compared with what the falsifier works out itself:

- perplexity with no bound, a bound equal to the score (a score at its bound passes) and one below
  it: the score and count from ``engine.qa.perplexity``, the detail ``"<n> tokens"`` with
  ``"; no bound given"`` only when there is none;
- finite logits on a healthy model: passes, 0 of 0, over the documented sample prompts;
- golden files holding greedy decoding's ids (written out here, no cache): a file without
  ``max_new_tokens`` decodes as many tokens as it holds and passes, naming the golden file; a file
  asking for 8 tokens but holding 5 fails at token 5, quoting the next tokens against none; a file
  whose ids part at token 1 fails there, quoting 4 tokens of each;
- the golden gate without a file, its two decodes stood in for (their ids and logits chosen here):
  within the tolerance (logits reaching 5,000, so the tolerance is above its floor) it passes with
  the drift, the tolerance and the dtype in its detail; a drift of 1 fails with the drift's own
  detail; two empty decodes pass over 0 tokens; decodes that part where the reference's margin is
  2.5 times the drift (no near tie) fail at the parting token; a drift equal to the tolerance
  passes, and decodes parting where the margin is exactly two drifts pass as a near tie, compared
  up to the parting token;
- the throughput gate with its decodes and its rate interval stood in for: a floor at either end of the interval
  and above it, and none, each with the status, figures and wording the gate documents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest import mock

import torch

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.qa import SAMPLE_PROMPTS, QAOptions, cache_logit_tolerance, perplexity, run_qa
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.noise import Measured

PROMPT = "def fibonacci(n):\n"
TEXT = "def add(a, b):\n    return a + b\n"


def _fields(gate: Any) -> list[Any]:
    return [gate.name, gate.status, gate.value, "none" if gate.bound is None else gate.bound, gate.detail]


def _differing(label: str, got: Any, want: list[Any]) -> list[str]:
    return [] if _fields(got) == want else [f"{label}: {_fields(got)!r} != {want!r}"]


def _stand_in(cached: tuple[list[int], torch.Tensor], uncached: tuple[list[int], torch.Tensor]) -> Any:
    def decode(_loaded: Any, _prompt: str, _n: int, use_cache: bool = True) -> tuple[list[int], torch.Tensor]:
        return cached if use_cache else uncached

    return decode


@checker(observes=["cases", "differing"], ids=["FALSIFY-QAG-011"])
def gates_reported_in_full(tmp_path: Path, engine_tokenizer: Any, tiny_model_factory: Any) -> dict[str, Any]:
    """Perplexity at three bounds, finite logits, three golden files and four stood-in decodes."""

    work = fresh_dir(tmp_path, "qa-reports-")
    model = tiny_model_factory(0, std=0.2, vocab_size=engine_tokenizer.vocab_size).eval()
    path = save_checkpoint(work / "model.safetensors", model, engine_tokenizer, make_manifest(step=0))
    loaded = load_checkpoint(path)
    differing: list[str] = []
    cases = 0

    def gate(name: str, **options: Any) -> Any:
        return run_qa(path, QAOptions(gates=(name,), **options)).gate(name)

    ppl, scored = perplexity(loaded, TEXT)
    for label, bound, status in (("no bound", None, "skipped"), ("at", ppl, "pass"), ("below", ppl / 2, "fail")):
        detail = f"{scored} tokens" + ("; no bound given" if bound is None else "")
        want = ["perplexity", status, ppl, "none" if bound is None else bound, detail]
        differing += _differing(f"perplexity {label}", gate("perplexity", max_perplexity=bound, text=TEXT), want)
        cases += 1
    want = ["finite_logits", "pass", 0.0, 0.0, f"{len(SAMPLE_PROMPTS)} prompts"]
    differing += _differing("finite logits", gate("finite_logits"), want)
    cases += 1

    ids = loaded.tokenizer.encode_prompt(PROMPT)
    ref = _greedy(model, ids, 8, set())
    other = [(t + 1) % engine_tokenizer.vocab_size for t in ref]
    records = (
        ("no max_new_tokens", {"new_ids": ref[:5]}, ["pass", 5.0, 5.0, "5 tokens from the golden file"]),
        (
            "8 asked, 5 held",
            {"max_new_tokens": 8, "new_ids": ref[:5]},
            ["fail", 5.0, 5.0, f"first difference at token 5: {ref[5:9]} != []"],
        ),
        (
            "parting at 1",
            {"max_new_tokens": 8, "new_ids": ref[:1] + other[1:]},
            ["fail", 1.0, 8.0, f"first difference at token 1: {ref[1:5]} != {other[1:5]}"],
        ),
    )
    for label, record, want in records:
        file = work / f"golden-{cases}.json"
        file.write_text(json.dumps({"prompt": PROMPT, **record}), encoding="utf-8")
        differing += _differing(f"golden file, {label}", gate("golden", golden=file), ["golden", *want])
        cases += 1

    vocab = engine_tokenizer.vocab_size
    big = torch.zeros(3, vocab)
    big[:, 0] = 5000.0  # logits reaching 5,000: the tolerance is above its floor there
    big[:, 1:4] = torch.tensor([1.0, 2.0, 3.0])
    near = big.clone()
    near[:, 1:4] += 1e-4
    drift = float((near - big).abs().max())
    tol = cache_logit_tolerance(torch.float32, 5000.0)
    source = f"greedy decoding without the KV cache (logits within {drift:.2g} <= {tol:.2g} for float32)"
    empty = torch.zeros(0, vocab)
    # parting at step 1 where the reference's two best logits are 2.5 drifts apart: no near tie
    small = torch.zeros(3, vocab)
    small[1, 6], small[1, 8] = 1.0, 1.0 - 2.5e-4
    shifted = small + 1e-4
    # at the tolerance exactly: logits reaching 2,048 give 8 float32 ulps of it, 2**-9, and one logit
    # drifts by that much (every figure a power of two, so the comparison meets equality exactly)
    edge = torch.zeros(3, vocab)
    edge[:, 0] = 2048.0
    at_tol = edge.clone()
    at_tol[1, 3] += 2.0**-9
    edge_tol = cache_logit_tolerance(torch.float32, 2048.0)
    # parting at step 1 where the reference's margin is exactly two drifts: a near tie, compared up to it
    tie = torch.zeros(3, vocab)
    tie[1, 6], tie[1, 8] = 1.0, 1.0 - 2.0**-11
    tied = tie + 2.0**-12
    floor = cache_logit_tolerance(torch.float32, 1.0)
    stood_in: tuple[tuple[str, tuple[list[int], torch.Tensor], tuple[list[int], torch.Tensor], list[Any]], ...] = (
        ("within the tolerance", ([5, 6, 7], near), ([5, 6, 7], big), ["pass", 3.0, 3.0, f"3 tokens from {source}"]),
        (
            "drifting by 1",
            ([5, 6, 7], big + 1.0),
            ([5, 6, 7], big),
            ["fail", 3.0, 3.0, f"cached logits drift {1.0:.3g} from uncached (> {tol:.3g} for float32)"],
        ),
        (
            "two empty decodes",
            ([], empty),
            ([], empty),
            [
                "pass",
                0.0,
                0.0,
                f"0 tokens from greedy decoding without the KV cache (logits within {0.0:.2g} <= "
                f"{cache_logit_tolerance(torch.float32, 0.0):.2g} for float32)",
            ],
        ),
        (
            "parting, no near tie",
            ([5, 8, 9], shifted),
            ([5, 6, 7], small),
            ["fail", 1.0, 3.0, "first difference at token 1: [8, 9] != [6, 7]"],
        ),
        (
            "drifting by the tolerance",
            ([5, 6, 7], at_tol),
            ([5, 6, 7], edge),
            [
                "pass",
                3.0,
                3.0,
                f"3 tokens from greedy decoding without the KV cache (logits within {2.0**-9:.2g} <= "
                f"{edge_tol:.2g} for float32)",
            ],
        ),
        (
            "parting where the margin is two drifts",
            ([5, 8, 9], tied),
            ([5, 6, 7], tie),
            [
                "pass",
                1.0,
                1.0,
                f"1 tokens from greedy decoding without the KV cache (logits within {2.0**-12:.2g} <= "
                f"{floor:.2g} for float32); parted at a near tie at step 1 (margin {2.0**-11:.2g}), compared up to it",
            ],
        ),
    )
    for label, cached, uncached, want in stood_in:
        try:
            with mock.patch("engine.qa._decode", _stand_in(cached, uncached)):
                got = gate("golden")
            differing += _differing(f"stood-in decodes, {label}", got, ["golden", *want])
        except Exception as exc:  # a crash where a report was due is a difference
            differing.append(f"stood-in decodes, {label}: {type(exc).__name__}: {exc}")
        cases += 1
    more, differing_more = _throughput_reports(gate)
    return {"cases": cases + more, "differing": differing + differing_more}


def _decoded(_loaded: Any, _prompt: str, tokens: int) -> list[int]:
    """A greedy decode stood in for: as many tokens as asked."""
    return [7] * tokens


def _throughput_reports(gate: Any) -> tuple[int, list[str]]:
    """The throughput gate with its decodes (4 tokens each) and its rate interval stood in for
    (80..125 tok/s around 100, CPU/wall 0.5), under 3 torch threads: a floor at the low end
    passes, one at the high end is inconclusive, one above it fails, none is skipped; each names
    the decoded tokens and the interval, and the interval was asked for over the 3 threads."""

    asked: list[tuple[float, int]] = []

    def interval(work: float, walls: Any, cpus: Any, threads: int = 1, **_noise: Any) -> Measured:
        asked.append((work, threads))
        return Measured(100.0, 80.0, 125.0, {"cpu_over_wall": 0.5})

    floors = (
        (80.0, "pass", ""),
        (125.0, "inconclusive", "; the machine was too busy to decide the floor"),
        (125.5, "fail", ""),
        (None, "skipped", "; no bound given"),
    )
    differing: list[str] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        for bound, status, note in floors:
            label = f"throughput, floor {bound}"
            try:
                # the decodes stood in for too: 3 threads of real decoding on a busy 2-core machine
                # spin for minutes, and what is read here is the report, not the decode
                with mock.patch("pv.noise.rate_interval", interval), mock.patch("engine.qa.greedy", _decoded):
                    got = gate("throughput", min_tokens_per_s=bound, throughput_tokens=4)
            except Exception as exc:  # a crash where a report was due is a difference
                differing.append(f"{label}: {type(exc).__name__}: {exc}")
                continue
            work, used = asked[-1] if asked else (0.0, 0)
            detail = f"4 tokens x 5, median of rates; 80..125 tok/s within the noise (CPU/wall 0.50){note}"
            want = ["throughput", status, 100.0, "none" if bound is None else bound, detail]
            differing += _differing(label, got, want)
            if got.interval != (80.0, 125.0) or used != 3 or work != 4:
                differing.append(f"{label}: interval {got.interval}, over {used} threads, {work} tokens")
    finally:
        torch.set_num_threads(threads)
    return len(floors), differing
