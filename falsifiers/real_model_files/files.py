"""Checkers of contracts/real-model-files-v1.yaml: every listed real model's GGUF file, its blocks kept.

Each checker takes a model's name (the claim's ``parametrize: {model: [...]}``) and reads the rest
from the model list (:mod:`falsifiers.shared.real_models`): the file, joined from its packages
and held to its pinned sha256, and the tensor types it must hold.  The engine imports the file
itself in each checker, so a fault in the import acts on what is measured; the references read the
same file independently: gguf-py (through the engine's float32 import, which dequantizes with
gguf-py) and llama.cpp, which runs the same blocks against activations it quantizes itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import torch

from engine.generate import generate
from engine.gguf_import import import_gguf
from engine.quantized import BlockLinear, stored_blocks
from falsifiers.shared.real_models import CORPUS_HEAD, CORPUS_TAIL, gguf_file, prompt_ids
from falsifiers.shared.real_models import model as listed
from falsifiers.shared.references import llama_cpp_copy
from pv.checkers import checker

CHAT_PROMPTS = (
    "What is the capital of France?",
    "Write a Python function that returns the square of a number.",
    "Explain what a list is in Python in one sentence.",
)
# the shared texts, and contractions: where the qwen2 split (single digits, its own contraction
# rule) and GPT-2's differ
CORPUS = (
    *CORPUS_HEAD,
    "I'm sure it's THEIR'S, don't you think? We'll see; they'd've known.",
    *CORPUS_TAIL,
)


@checker(
    observes=["tensor_types_as_listed", "linear_layers", "layers_in_blocks", "kinds_in_blocks", "values_differing"],
    ids=["FALSIFY-RMF-001"],
)
def blocks_as_gguf_py_reads_them(model: str) -> dict[str, Any]:
    """The file holds the tensor types its list entry names; imported with its blocks kept, every
    linear layer runs blocks, and each layer's blocks dequantize to exactly the matrix of the
    float32 import (gguf-py's dequantization of the same tensor, rows un-permuted as the engine's)."""
    # gguf is the reference reader: it loads only in the checkers that compare with it
    import gguf

    entry = listed(model)
    path = gguf_file(entry)
    types = Counter(t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors)
    kept = import_gguf(path, quantized=True).model
    reference = import_gguf(path).model
    linears = [n for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)]
    differing, kinds = 0, Counter[str]()
    for name, layer in kept.named_modules():
        if not isinstance(layer, BlockLinear):
            continue
        kinds[layer.kind] += 1
        float_layer = reference.get_submodule(name)
        assert isinstance(float_layer, torch.nn.Linear)
        want = float_layer.weight.detach().numpy()
        differing += int(np.count_nonzero(stored_blocks(layer).dequantize() != want))
    return {
        "tensor_types_as_listed": dict(types) == dict(entry.tensor_types),
        "linear_layers": len(linears),
        "layers_in_blocks": sum(kinds.values()),
        "kinds_in_blocks": sorted(kinds),
        "values_differing": differing,
    }


@checker(
    observes=["positions", "max_abs_logit_diff", "logit_scale", "argmax_agreement", "steps", "worst_gap"],
    ids=["FALSIFY-RMF-002"],
)
def logits_vs_llama_cpp(model: str, n_tokens: int = 12) -> dict[str, Any]:
    """Teacher-forced over each chat prompt (plain text for a file without a chat template) and the
    engine's ``n_tokens`` greedy tokens after it: the engine's logits (blocks kept) against
    llama.cpp's on the same file at every position, how often their argmax agrees, and how far
    each greedy token trails llama.cpp's argmax."""
    path = gguf_file(listed(model))
    loaded = import_gguf(path, quantized=True)
    llm = llama_cpp_copy(path)
    worst = scale = gap = 0.0
    agree = positions = steps = 0
    for prompt in CHAT_PROMPTS:
        ids = prompt_ids(loaded, prompt)
        new = generate(loaded.model, torch.tensor([ids]), max_new_tokens=n_tokens, eos_token_id=[]).new_tokens[0]
        sequence = ids + [int(t) for t in new]
        with torch.no_grad():
            ours = loaded.model(torch.tensor([sequence])).logits[0].float().numpy()
        llm.reset()
        llm.eval(sequence)
        theirs = np.asarray(llm.scores[: len(sequence)], dtype=np.float32)[:, : ours.shape[1]]
        worst = max(worst, float(np.abs(ours - theirs).max()))
        scale = max(scale, float(np.abs(theirs).max()))
        agree += int((ours.argmax(-1) == theirs.argmax(-1)).sum())
        positions += len(sequence)
        for step, token in enumerate(sequence[len(ids) :]):
            row = theirs[len(ids) - 1 + step]
            gap = max(gap, float(row.max() - row[token]))
            steps += 1
    del llm
    return {
        "positions": positions,
        "max_abs_logit_diff": worst,
        "logit_scale": scale,
        "argmax_agreement": agree / positions,
        "steps": steps,
        "worst_gap": gap,
    }


@checker(observes=["texts", "mismatched_texts", "tokens_compared", "round_trips"], ids=["FALSIFY-RMF-003"])
def tokenizer_vs_llama_cpp(model: str) -> dict[str, Any]:
    """The tokenizer rebuilt from the file's metadata against llama.cpp's on the same file, text by
    text (control tokens matched whole), and each text decoded back to itself."""
    path = gguf_file(listed(model))
    tokenizer = import_gguf(path, quantized=True).tokenizer
    llm = llama_cpp_copy(path)
    mismatched = tokens = round_trips = 0
    for text in CORPUS:
        ours = tokenizer.encode(text)
        theirs = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        tokens += len(theirs)
        mismatched += ours != theirs
        round_trips += tokenizer.decode(ours) == text
    del llm
    return {"texts": len(CORPUS), "mismatched_texts": mismatched, "tokens_compared": tokens, "round_trips": round_trips}
