"""engine.memory.estimate for every method against its documented formula, written out here.

The other memory falsifiers hold the LoRA and QLoRA estimates to measured runs; the full
fine-tune's estimate (what ``--max-memory-gib`` judges a full fine-tune by) and the defaults a caller
relies on were read by none. Here every field of the estimate is the formula of the docstring,
counted from a real (CPU) model's own storages: ``full``: every parameter trains in the base dtype
(weights, a gradient of the same size, two AdamW moments); ``lora``: the frozen base in its dtype
plus fp32 LoRA of r·(in + out) per targeted linear, a gradient and two moments for the LoRA only;
``qlora``: every linear but the head in NF4 (codes, an fp32 absmax per 64-value block, or with
double quantization one byte per block plus an fp32 constant per 256 blocks, the 256-entry fp32
code table and an offset, and each layer's 16 fp32 levels), biases in fp32, the rest in the base
dtype (``skip`` names the linears kept out of NF4: the head by default). A tied head shares its
storage with the embedding and counts once. The defaults: double quantization, LoRA's rank 8 on its
default targets, the labels "full fp16", "lora on fp16 base", "qlora on nf4 base" unless one is
given; ``nf4_bytes`` without double quantization.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.config import preset
from engine.lora import LoraSettings
from engine.memory import estimate, nf4_bytes
from engine.model import build_model
from falsifiers.shared.refusals import refusals_differing
from pv.checkers import checker

BYTES = {torch.float32: ("fp32", 4), torch.float16: ("fp16", 2), torch.bfloat16: ("bf16", 2)}
BLOCK, DQ_BLOCK = 64, 256


def _nf4(numel: int, double_quant: bool) -> int:
    blocks = math.ceil(numel / BLOCK)
    codes = math.ceil(numel / 2)
    levels = 16 * 4
    if not double_quant:
        return codes + 4 * blocks + levels
    return codes + blocks + 4 * math.ceil(blocks / DQ_BLOCK) + 256 * 4 + 4 + levels


def _storages(model: torch.nn.Module) -> dict[int, tuple[str, torch.Tensor]]:
    """Each parameter storage once, under the first name that holds it."""
    out: dict[int, tuple[str, torch.Tensor]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        out.setdefault(p.data_ptr(), (name, p))
    return out


def expected(
    model: torch.nn.Module,
    method: str,
    dtype: torch.dtype,
    lora: Any,
    double_quant: bool,
    label: str | None,
    skip: tuple[str, ...] = ("lm_head",),
) -> dict[str, Any]:
    name, size = BYTES[dtype]
    params = _storages(model).values()
    if method == "full":
        n = sum(p.numel() for _, p in params)
        w = n * size
        fields = (label or f"full {name}", "full", name, 0, n, w, w, 2 * w)
    else:
        linears = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
        n_lora = sum(
            lora.r * (m.in_features + m.out_features)
            for n, m in linears.items()
            if n.rsplit(".", 1)[-1] in lora.targets
        )
        nf4 = {} if method == "lora" else {n: m for n, m in linears.items() if n.rsplit(".", 1)[-1] not in skip}
        base = 0
        for pname, p in params:
            owner, _, kind = pname.rpartition(".")
            if owner in nf4 and kind == "weight":
                base += _nf4(p.numel(), double_quant)
            elif owner in nf4 and kind == "bias":
                base += 4 * p.numel()
            else:
                base += size * p.numel()
        storage = "nf4" if method == "qlora" else name
        fields = (
            label or f"{method} on {storage} base",
            method,
            storage,
            base,
            n_lora,
            4 * n_lora,
            4 * n_lora,
            8 * n_lora,
        )
    keys = (
        "label",
        "method",
        "base_storage",
        "base_weight_bytes",
        "trainable_params",
        "trainable_weight_bytes",
        "gradient_bytes",
        "optimizer_bytes",
    )
    out = dict(zip(keys, fields, strict=True))
    out["total_bytes"] = fields[3] + sum(fields[5:])
    return out


@checker(
    observes=["estimates", "estimates_differing", "differing", "refusals", "refusals_differing"],
    ids=["FALSIFY-QMEM-009"],
)
def estimate_is_its_formula() -> dict[str, Any]:
    """Three models (Llama untied, Qwen2 with attention biases and a tied head, Llama tied) x
    three dtypes x three methods, with the defaults and with other settings; a dtype it has no
    size for."""

    configs = {
        "llama untied": preset("tiny"),
        "qwen2 biased, tied": preset("tiny").replace(
            architecture="qwen2", attention_bias=True, tie_word_embeddings=True
        ),
        "llama tied": preset("tiny").replace(tie_word_embeddings=True, intermediate_size=192),
    }
    other = LoraSettings(r=3, alpha=5.0, targets=("q_proj", "v_proj", "down_proj"))
    differing: list[str] = []
    count = 0
    for what, cfg in configs.items():
        torch.manual_seed(0)
        model = build_model(cfg)
        for dtype in BYTES:
            for method in ("full", "lora", "qlora"):
                calls = [
                    ("defaults", {}, LoraSettings(), True, None),
                    ("other settings", {"lora": other, "double_quant": False, "label": "mine"}, other, False, "mine"),
                ]
                for how, kw, lora, dq, label in calls:
                    got = estimate(model, method, base_dtype=dtype, **kw).to_dict()  # type: ignore[arg-type]
                    want = expected(model, method, dtype, lora, dq, label)
                    count += 1
                    if got != want:
                        diff = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
                        differing.append(f"{what}, {BYTES[dtype][0]}, {method}, {how}: (estimate, formula) {diff}")
    plain = build_model(preset("tiny"))
    if estimate(plain, "lora").to_dict() != expected(plain, "lora", torch.float16, LoraSettings(), True, None):
        differing.append("estimate(model, 'lora') with every default is not the fp16 formula")
    count += 1
    # other layers kept out of NF4 than the head: a projection in every layer, and none
    for skip in (("down_proj", "lm_head"), ()):
        got = estimate(plain, "qlora", base_dtype=torch.float32, skip=skip).to_dict()
        if got != expected(plain, "qlora", torch.float32, LoraSettings(), True, None, skip):
            differing.append(f"qlora skipping {skip}: {got}")
        count += 1
    for numel in (1, 64, 65, 4096 * 11008):  # nf4_bytes' default: no double quantization
        if nf4_bytes(numel) != _nf4(numel, False) or nf4_bytes(numel, double_quant=True) != _nf4(numel, True):
            differing.append(f"nf4_bytes({numel}) = {nf4_bytes(numel)}, documented {_nf4(numel, False)}")
        count += 1
    refused = refusals_differing(
        [
            (
                lambda: estimate(plain, "full", base_dtype=torch.float64),
                ValueError,
                "no byte size for torch.float64; known: fp32, fp16, bf16",
            )
        ]
    )
    return {
        "estimates": count,
        "estimates_differing": len(differing),
        "differing": differing + refused,
        "refusals": 1,
        "refusals_differing": len(refused),
    }
