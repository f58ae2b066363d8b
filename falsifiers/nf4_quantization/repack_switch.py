"""The engine's NF4 layers keep bitsandbytes' eval-time repack off on any CPU, and
``set_cpu_repack`` turns it on only where bitsandbytes says the CPU can run it.

``Linear4bit`` sets ``support_avx512bf16_for_cpu`` from ``has_avx512bf16()`` when it is built, and
an eval forward with that flag set repacks the weight (FALSIFY-EVAL-001 and -002 watch that
forward, on a CPU with AVX512-BF16 only).  The flag itself is plain state, so this checker reads it
directly on every layer, with bitsandbytes answering each way: its ``has_avx512bf16`` is replaced,
where ``Linear4bit`` and the engine look it up, by a stand-in that answers True (a machine with the
instruction set) or False.  No forward runs, so no packed kernel is ever called.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from torch import nn

from engine.quant import NF4Config, import_bnb, nf4_layers, quantize_model, set_cpu_repack
from pv.checkers import checker


@contextmanager
def _cpu_answering(answer: bool) -> Iterator[None]:
    bnb = import_bnb()
    native = int(answer)  # bitsandbytes hands back its native library's int, 1 or 0, not a bool
    with (
        mock.patch.object(bnb.functional, "has_avx512bf16", lambda: native),
        mock.patch.object(bnb.nn.modules, "has_avx512bf16", lambda: native),
    ):
        yield


def _flags(layers: list[Any]) -> list[str]:
    # repr tells True from 1 and False from None, which a repack test for truth would not
    return sorted({repr(layer.support_avx512bf16_for_cpu) for layer in layers})


@checker(
    observes=[
        "layers",
        "quantized_with_avx",
        "enabled_with_avx",
        "disabled_with_avx",
        "quantized_without",
        "enabled_without",
        "disabled_without",
        "plain_left_alone",
    ],
    ids=["FALSIFY-NF4-007"],
)
def repack_switched_off(tiny_model_factory: Any, seed: int = 0) -> dict[str, Any]:
    """For each answer of bitsandbytes (``with_avx`` True, ``without`` False): the distinct flag
    values over the quantized tiny model's NF4 layers as quantize_model leaves them, after
    set_cpu_repack(enabled=True) on each, and after set_cpu_repack(enabled=False);
    ``plain_left_alone``: a plain nn.Linear passes through set_cpu_repack without gaining the flag."""
    out: dict[str, Any] = {}
    for answer, suffix in ((True, "with_avx"), (False, "without")):
        with _cpu_answering(answer):
            layers = [layer for _, layer in nf4_layers(quantize_model(tiny_model_factory(seed), NF4Config(), "cpu"))]
            out["layers"] = len(layers)
            out[f"quantized_{suffix}"] = _flags(layers)
            for layer in layers:
                set_cpu_repack(layer, enabled=True)
            out[f"enabled_{suffix}"] = _flags(layers)
            for layer in layers:
                set_cpu_repack(layer, enabled=False)
            out[f"disabled_{suffix}"] = _flags(layers)
    plain = nn.Linear(4, 4)
    set_cpu_repack(plain, enabled=True)
    out["plain_left_alone"] = int(not hasattr(plain, "support_avx512bf16_for_cpu"))
    return out
