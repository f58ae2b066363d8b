"""``engine.lora.merge_adapter`` and ``swap_adapter`` against PEFT's own ``merge_and_unload``.

Without ``dequantize`` the engine's merge is PEFT's ``merge_and_unload`` of the one adapter named:
on a base holding two adapters (the other one active), on a bfloat16 base and on an NF4 base, the
merged model's state dict (names, dtypes, values, NF4 packing included) and module types are
those PEFT gives for the same adapter on an identical model, and merging on NF4 shows the user no
warning (PEFT's re-quantization notice is the documented cost of that path, silenced).  With
``dequantize`` the NF4 base comes back as full-precision linears with every parameter frozen, as
PEFT's merge leaves them.  An adapter name that is not loaded is refused by both functions with a
``KeyError`` naming it and the loaded ones.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from engine.lora import LoraSettings, apply_lora, merge_adapter, swap_adapter
from engine.quant import NF4Config, is_nf4_linear, quantize_model
from pv.checkers import checker

FIRST = ("q_proj", "v_proj")
SECOND = ("q_proj", "k_proj")


def _state_differences(got: nn.Module, want: nn.Module) -> int:
    a, b = got.state_dict(), want.state_dict()
    differing = sum(k not in b or a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k]) for k in a)
    types = [type(m).__name__ for m in got.modules()] != [type(m).__name__ for m in want.modules()]
    return differing + len(set(b) - set(a)) + types


@checker(
    observes=[
        "merges", "state_differing", "warnings_emitted", "dequantized_nf4_layers", "trainable_after_merge",
        "refusals_named",
    ],
    ids=["FALSIFY-LORA-014"],
)  # fmt: skip
def merge_adapter_is_peft_merge(tiny_model_factory: Any, seed: int = 0) -> dict[str, Any]:
    """Two adapters on a biased qwen2 tiny model (fp32, bf16, NF4), each merge done twice: by the
    engine and by PEFT on an identical copy."""

    def wrapped(kind: str) -> Any:
        base = tiny_model_factory(seed, std=0.1, architecture="qwen2", attention_bias=True)
        if kind == "bf16":
            base = base.to(torch.bfloat16)
        elif kind == "nf4":
            quantize_model(base, NF4Config(), "cpu")
        model = apply_lora(base, LoraSettings(r=4, alpha=8, targets=FIRST), "first")
        model.add_adapter("second", LoraSettings(r=2, alpha=6, targets=SECOND).peft_config())
        with torch.no_grad():  # A and B drawn here (PEFT draws A from the global RNG), B non-zero
            for n, p in model.named_parameters():
                if ".lora_" in n:
                    p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(n) + seed)))
        model.set_adapter("first")
        return model

    def quiet(merge: Callable[[], nn.Module]) -> tuple[nn.Module, int]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            merged = merge()
        return merged, len(caught)

    out: dict[str, Any] = {"merges": 0, "state_differing": 0, "warnings_emitted": 0, "trainable_after_merge": 0}
    for kind, name in (("fp32", "second"), ("bf16", "second"), ("nf4", "first"), ("nf4", "second")):
        model = wrapped(kind)
        got, emitted = quiet(lambda: merge_adapter(model, name))  # noqa: B023 (called at once)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = wrapped(kind).merge_and_unload(adapter_names=[name])
        out["merges"] += 1
        out["state_differing"] += _state_differences(got, want)
        out["warnings_emitted"] += emitted if kind == "nf4" else 0
        out["trainable_after_merge"] += sum(p.requires_grad for p in got.parameters())
    nf4 = wrapped("nf4")
    full, _ = quiet(lambda: merge_adapter(nf4, "second", dequantize=True))
    out["dequantized_nf4_layers"] = sum(is_nf4_linear(m) for m in full.modules())
    out["dequantized_nf4_layers"] += sum(p.dtype != torch.float32 for p in full.parameters())
    out["trainable_after_merge"] += sum(p.requires_grad for p in full.parameters())

    out["refusals_named"] = 0
    model = wrapped("fp32")
    for refuse in (swap_adapter, merge_adapter):
        try:
            refuse(model, "third")
        except KeyError as exc:
            out["refusals_named"] += all(n in str(exc) for n in ("third", "first", "second"))
    return out
