"""A whole model decoded from its quantized blocks: the engine's own Q4_0 export of a tiny model.

The tiny preset reshaped (``SHAPE``: every matrix a whole number of 32-weight blocks, so every
linear layer is written as Q4_0, and every projection whole 64-row tiles) and weights drawn wide
(N(0, 0.2)), exported with ``export_gguf(..., "q4_0")``, then imported twice: as float32 (the reference)
and with its blocks kept.  Read teacher-forced over 3 prompts and the float32 model's 16 greedy
tokens after each.  Then ``python -m engine generate FILE.gguf --json``, one prompt a call, which
runs the blocks and stops at EOS as in-process generation with the config's EOS does.  Decoding
runs each layer fused (q/k/v and gate/up stacked into one kernel call each): read once with and
once without it.  The same export in an engine checkpoint is :mod:`.checkpoint`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.generate import generate
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.model import DecoderLayer, fused_layers
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPTS = ("def add(a, b):", "for line in open(path):", "class Point:")
# 64-wide heads and a 192-wide MLP: every matrix whole 32-weight blocks (all Q4_0), and q, k, v,
# gate and up whole 64-row tiles, so each layer's projections can be stacked for decoding
SHAPE = {"hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 192}


@checker(
    observes=[
        "layers_kept", "positions", "max_abs_logit_diff", "logit_scale", "worst_gap", "argmax_agreement",
        "cli_tokens_differing", "fused_layers", "fused_max_abs_diff",
    ],
    ids=["FALSIFY-QDEC-003"],
)  # fmt: skip
def q4_0_export_decoded_from_its_blocks(
    tiny_model_factory: Any, engine_tokenizer: EngineTokenizer, tmp_path: Path, seed: int = 0, n_tokens: int = 16
) -> dict[str, Any]:
    """The tiny model's Q4_0 export, imported as float32 and with its blocks kept, side by side."""
    model = tiny_model_factory(seed, std=0.2, **SHAPE)
    path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, "qdec-") / "tiny-q4_0.gguf", "q4_0")
    reference, quantized = import_gguf(path), import_gguf(path, quantized=True)
    out: dict[str, Any] = {"layers_kept": sum(dict(quantized.manifest["quantized"]).values())}
    out |= {"positions": 0, "max_abs_logit_diff": 0.0, "logit_scale": 0.0, "worst_gap": 0.0, "argmax_agreement": 0}
    expected = []
    for prompt in PROMPTS:
        ids = engine_tokenizer.encode(prompt, add_bos=True)
        new = generate(reference.model, torch.tensor([ids]), max_new_tokens=n_tokens, eos_token_id=[]).new_tokens[0]
        stops = generate(quantized.model, torch.tensor([ids]), max_new_tokens=n_tokens).new_tokens[0]  # at EOS
        expected.append([int(t) for t in stops])
        with torch.no_grad():
            sequence = torch.tensor([ids + [int(t) for t in new]])
            want, got = reference.model(sequence).logits[0], quantized.model(sequence).logits[0]
        out["positions"] += sequence.shape[1]
        out["max_abs_logit_diff"] = max(out["max_abs_logit_diff"], float((want - got).abs().max()))
        out["logit_scale"] = max(out["logit_scale"], float(want.abs().max()))
        for step, token in enumerate(int(t) for t in new):  # the float32 choice, in the quantized logits
            row = got[len(ids) - 1 + step]
            out["worst_gap"] = max(out["worst_gap"], float(row.max() - row[token]))
            out["argmax_agreement"] += int(row.argmax()) == token
    # decoding runs the fused path (q/k/v and gate/up stacked): the same logits as the layers' own
    with torch.no_grad():
        sequence = torch.tensor([engine_tokenizer.encode(PROMPTS[0], add_bos=True)])
        plain = quantized.model(sequence).logits
        with fused_layers(quantized.model):
            layers = [m for m in quantized.model.modules() if isinstance(m, DecoderLayer)]
            out["fused_layers"] = sum(m.fused is not None for m in layers)
            fused = quantized.model(sequence).logits
    out["fused_max_abs_diff"] = float((fused - plain).abs().max())
    run, out["cli_tokens_differing"] = cli_runner(), 0
    for prompt, want_ids in zip(PROMPTS, expected, strict=True):  # one prompt a call: no padding
        result = run("generate", path, "-p", prompt, "-n", n_tokens, "--json")
        rows = json.loads(result.stdout) if result.exit_code == 0 else [{"new_ids": None}]
        out["cli_tokens_differing"] += rows[0]["new_ids"] != want_ids
    return out
