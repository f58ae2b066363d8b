"""Which decoder layers ``engine.model.fused_layers`` fuses, and that a fused layer is the module.

Decoding runs eligible layers as four matmuls on rearranged weights (:meth:`DecoderLayer.fuse`).
Only float32 layers of plain linears and RMSNorms qualify: half-precision layers take RMSNorm's
float32 upcast, which the fused norm does not copy, and LoRA-wrapped projections keep their own
forward.  Which layers are fused is read directly (each layer's ``fused`` inside the block), not
through logits that may happen to agree: a float32 model has every layer fused, bf16 and fp16
models and a LoRA-wrapped one none, and a layer whose two norms hold different epsilons is left
alone (the fused path has one).  A fused layer must compute what the module does, so the
model's logits with and without the block are compared on Llama and Qwen2 (q/k/v biases)
models, including one whose ``rms_norm_eps`` is 0.5, large enough that a norm dropping it shows.
No engine config builds an MLP bias, or a bias on some of q/k/v but not all; a model given one by
hand must still decode as its modules compute: a layer with an up-projection bias is not fused,
and one with a q bias alone is fused with zeros for k and v.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.lora import LoraSettings, apply_lora
from engine.model import DecoderLayer, fused_layers
from pv.checkers import checker

FUSED_TOLERANCE = 1e-4  # float32 logits of reordered matmuls, N(0, 0.2) weights: about 1e-6 measured


def _fused(model: Any) -> list[bool]:

    layers = [m for m in model.modules() if isinstance(m, DecoderLayer)]
    with fused_layers(model):
        inside = [layer.fused is not None for layer in layers]
    return inside + [layer.fused is not None for layer in layers]  # and none left fused after it


@checker(observes=["fused", "max_abs_diff", "models_compared"], ids=["FALSIFY-GEN-018"])
def fused_layers_are_the_module(tiny_model_factory: Any, seed: int = 0) -> dict[str, Any]:
    """fused_layers on float32, bf16, fp16, LoRA-wrapped, unequal-eps and MLP-bias models; logits
    with and without it on four float32 models."""

    uneven = tiny_model_factory(seed)
    uneven.model.layers[0].post_attention_layernorm.eps = 2e-6
    # biases no engine config builds, given by hand: the fused path has no MLP bias, and pads a
    # q/k/v bias it lacks with zeros
    gen = torch.Generator().manual_seed(seed)
    mlp_bias = tiny_model_factory(seed)
    up = mlp_bias.model.layers[0].mlp.up_proj
    up.bias = torch.nn.Parameter(torch.randn(up.out_features, generator=gen))
    q_bias = tiny_model_factory(seed, std=0.2)
    q = q_bias.model.layers[0].self_attn.q_proj
    q.bias = torch.nn.Parameter(torch.randn(q.out_features, generator=gen))
    fused = [
        _fused(tiny_model_factory(seed)),
        _fused(tiny_model_factory(seed).to(torch.bfloat16)),
        _fused(tiny_model_factory(seed).to(torch.float16)),
        _fused(apply_lora(tiny_model_factory(seed), LoraSettings(r=4, targets=("q_proj", "v_proj")))),
        _fused(uneven),
        _fused(mlp_bias),
    ]
    worst = 0.0
    models = [
        tiny_model_factory(seed, std=0.2),
        tiny_model_factory(seed, std=0.2, rms_norm_eps=0.5),
        tiny_model_factory(seed, std=0.2, architecture="qwen2", attention_bias=True),
        q_bias,
    ]
    for model in models:
        ids = torch.randint(3, model.config.vocab_size, (2, 12), generator=gen)
        with torch.inference_mode():
            module = model(ids).logits.float()
            with fused_layers(model):
                fused_logits = model(ids).logits.float()
        worst = max(worst, float((module - fused_logits).abs().max()))
    return {"fused": fused, "max_abs_diff": worst, "models_compared": len(models)}
