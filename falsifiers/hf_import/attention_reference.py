"""The engine's logits are transformers' eager attention's, at every prompt length and in half precision.

``engine.model.Attention.attend`` hands torch's ``scaled_dot_product_attention`` the causal flag
for an unpadded prompt of two or more tokens (no mask tensor), grouped key-value heads through
``enable_gqa`` where torch has it (2.5 on) and repeated per query head where it does not (2.2 to
2.4, which the engine supports), and a KV cache's keys when decoding.  transformers' *eager*
attention (explicit matmuls, ``repeat_kv``, a causal mask tensor) is an independent reference for
all of it.

Three models with the same random weights in both (scaled up, so that attention is far from
uniform and which keys a query sees shows in the logits): Llama with grouped heads (4 query, 2
key-value), Llama with one key-value head per query head, and Qwen2 (q/k/v biases, a tied head)
with one key-value head.  For each, in float32, bf16 and fp16, a batch of two prompts is run at
every length from 1 to 6 at once, and decoded through a KV cache (2 tokens, then 2 more in one
call, then 1 and 1), and each position's logits are compared with transformers' float32 logits of
the same prefix.  The engine's error may be at most twice transformers' own error in that dtype,
plus 1e-4 of the logits' scale (float32's rounding, the order of the sums):
noise-aware, since bf16 alone moves logits by a few percent.

The same comparisons run in a fresh interpreter whose torch lacks ``enable_gqa``: its
``scaled_dot_product_attention`` is replaced, before the engine is imported, by one with torch
2.4's signature, so the engine takes its older-torch path as it would on that torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

import engine
from engine.config import ModelConfig
from engine.hf_interop import to_hf_config
from engine.model import build_model
from falsifiers.shared.child_env import child_env
from pv.checkers import checker

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
MODELS: dict[str, dict[str, Any]] = {
    "llama, 4 heads / 2 kv": {"num_attention_heads": 4, "num_key_value_heads": 2},
    "llama, 4 heads / 4 kv": {"num_attention_heads": 4, "num_key_value_heads": 4},
    "qwen2, 4 heads / 1 kv": {
        "num_attention_heads": 4, "num_key_value_heads": 1, "attention_bias": True, "tie_word_embeddings": True,
    },
}  # fmt: skip
LENGTH = 6
DECODE_STEPS = (2, 2, 1, 1)  # tokens per call: a prefill, a chunk with a cache, then single tokens
VOCAB = 96

# A fresh interpreter whose scaled_dot_product_attention has torch 2.4's signature.  Its docstring
# must not name the grouped-query flag: the engine looks for it there.
OLDER_TORCH = """
import json, sys
import torch.nn.functional as F

_sdpa = F.scaled_dot_product_attention


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    "torch 2.2 to 2.4: grouped key-value heads are the caller's to repeat."
    return _sdpa(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale)


F.scaled_dot_product_attention = scaled_dot_product_attention
import engine.model
from falsifiers.hf_import.attention_reference import compare_all

print(json.dumps({"grouped_flag": engine.model._SDPA_GQA, **compare_all(int(sys.argv[1]))}))
"""


def _models(settings: dict[str, Any], seed: int) -> tuple[Any, Any]:
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    config = ModelConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, intermediate_size=128, **settings)
    model = build_model(config)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g) + (1.0 if "norm" in name else 0.0))
    hf = dict(to_hf_config(config))
    hf_config = transformers.AutoConfig.for_model(hf.pop("model_type"), **hf)
    reference = transformers.AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager")
    reference.load_state_dict(model.state_dict(), strict=True)
    return model.eval(), reference.eval()


def _within(got: torch.Tensor, own_error: float, truth: torch.Tensor) -> str | None:
    error = float((got.float() - truth).abs().max())
    allowed = 2 * own_error + 1e-4 * float(truth.abs().max())
    return None if error <= allowed else f"off by {error:.3g} where transformers is off by {own_error:.3g}"


def _decoded(model: Any, ids: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
    """(first position, logits) of each decoding call."""
    out, cache, start = [], None, 0
    for n in DECODE_STEPS:
        step = model(ids[:, start : start + n], past_key_values=cache, use_cache=True)
        cache = step.past_key_values
        out.append((start, step.logits))
        start += n
    return out


def compare_all(seed: int) -> dict[str, Any]:
    """Every model, dtype, prompt length and decoding call; what differs beyond the allowance."""
    ids = torch.randint(0, VOCAB, (2, LENGTH), generator=torch.Generator().manual_seed(seed))
    cases = 0
    differing: list[str] = []
    for i, (label, settings) in enumerate(MODELS.items()):
        model, reference = _models(settings, seed + 1 + i)
        with torch.no_grad():
            truth = {n: reference(ids[:, :n]).logits for n in range(1, LENGTH + 1)}
            for dname, dtype in DTYPES.items():
                model.to(dtype)
                reference.to(dtype)
                # transformers' own logits in this dtype, once per prefix: the prompts and the decoding read them
                theirs = {n: reference(ids[:, :n]).logits.float() for n in range(1, LENGTH + 1)}
                for n in range(1, LENGTH + 1):
                    own = float((theirs[n] - truth[n]).abs().max())
                    cases += 1
                    why = _within(model(ids[:, :n]).logits, own, truth[n])
                    if why is not None:
                        differing.append(f"{label}, {dname}, a prompt of {n} at once: {why}")
                for start, logits in _decoded(model, ids):
                    end = start + logits.shape[1]
                    own = float((theirs[end][:, start:] - truth[end][:, start:]).abs().max())
                    cases += 1
                    why = _within(logits, own, truth[end][:, start:])
                    if why is not None:
                        differing.append(f"{label}, {dname}, decoding tokens {start}..{end - 1} with a cache: {why}")
                model.float()
                reference.float()
    return {"cases": cases, "differing": differing}


@checker(
    observes=["cases", "differing", "older_torch_cases", "older_torch_differing", "older_torch_grouped_flag"],
    ids=["FALSIFY-HFI-010"],
)
def logits_match_eager_attention(seed: int) -> dict[str, Any]:
    """The comparisons here, and in a fresh interpreter whose torch lacks enable_gqa."""

    out = compare_all(seed)
    engine_parent = Path(engine.__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-P", "-c", OLDER_TORCH, str(seed)],
        capture_output=True, text=True, env=child_env([engine_parent]), timeout=600,
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    older: dict[str, Any] = json.loads(lines[-1]) if proc.returncode == 0 and lines else {}
    if not older:
        older = {"differing": [f"the interpreter exited {proc.returncode}: {proc.stderr[-800:]}"]}
    out["older_torch_cases"] = older.get("cases", 0)
    out["older_torch_differing"] = older["differing"]
    out["older_torch_grouped_flag"] = older.get("grouped_flag")
    return out
