"""``engine.model.RMSNorm`` computes what transformers' Llama and Qwen2 norms compute, bit for bit.

The engine's norm has two paths: float32 activations with float32 weights take torch's fused
``rms_norm``; every other pairing (a bf16 or fp16 model, half-precision activations through a
float32 norm as mixed precision gives, a float32 pass through a half-precision norm) upcasts to
float32, normalises, casts back and then multiplies by the weight, as transformers'
``LlamaRMSNorm`` and ``Qwen2RMSNorm`` do.  A model imported from or exported to a Hugging Face
folder and run in half precision computes as transformers only if every pairing agrees; the
float32 models most falsifiers run never reach the second path.

Each of the 9 pairings of float32, bf16 and fp16 activations and weights is run at two epsilons
(1e-6, and 0.5, large enough that a norm mishandling it shows) on a [2, 5, 64] batch whose rows
differ in scale (one row of zeros) and on one decode row [1, 1, 64], and compared with both
transformers norms holding the same weight: the result's dtype and every value.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

from engine.model import RMSNorm
from pv.checkers import checker

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
EPSILONS = (1e-6, 0.5)
HIDDEN = 64


def _inputs(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    batch = torch.randn(2, 5, HIDDEN, generator=g)
    batch = batch * torch.logspace(-2, 2, 5)[None, :, None]  # row scales from 0.01 to 100
    batch[1, 2] = 0.0
    return [batch, torch.randn(1, 1, HIDDEN, generator=g) * 3]


def _difference(got: torch.Tensor, want: torch.Tensor) -> str | None:
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{got.dtype} {list(got.shape)} where transformers gives {want.dtype} {list(want.shape)}"
    if torch.equal(got, want):
        return None
    differs = got != want
    nan = int((got.isnan() & ~want.isnan()).sum())
    gap = (got.float() - want.float()).abs()[differs & ~got.isnan()]
    largest = f"largest by {float(gap.max()):.3g}" if gap.numel() else "none a number"
    return (
        f"{int(differs.sum())} of {want.numel()} values differ ({nan} NaN where transformers gives a number; {largest})"
    )


@checker(observes=["cases", "differing"], ids=["FALSIFY-HFI-008"])
def norm_matches_transformers(seed: int) -> dict[str, Any]:
    """Every pairing, epsilon and input against LlamaRMSNorm and Qwen2RMSNorm."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    weight = torch.rand(HIDDEN, generator=torch.Generator().manual_seed(seed + 1)) + 0.5
    cases = 0
    differing: list[str] = []
    for (xname, xdtype), (wname, wdtype), eps in itertools.product(DTYPES.items(), DTYPES.items(), EPSILONS):
        engine_norm = RMSNorm(HIDDEN, eps)
        references = {"LlamaRMSNorm": LlamaRMSNorm(HIDDEN, eps=eps), "Qwen2RMSNorm": Qwen2RMSNorm(HIDDEN, eps=eps)}
        with torch.no_grad():
            for norm in (engine_norm, *references.values()):
                norm.get_parameter("weight").copy_(weight)
                norm.to(wdtype)
            for x in _inputs(seed):
                x = x.to(xdtype)
                got = engine_norm(x)
                for name, reference in references.items():
                    cases += 1
                    why = _difference(got, reference(x))
                    if why is not None:
                        differing.append(f"x {xname}, weight {wname}, eps {eps:g}, {list(x.shape)} vs {name}: {why}")
    return {"cases": cases, "differing": differing}
