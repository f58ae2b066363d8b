"""What ``engine.lora``'s and ``engine.quant``'s introspection helpers report, against the model itself.

A team checks "the base is frozen" or "only the adapters train" with these helpers, so a helper
that reports the wrong set makes that check vacuous.  Each is compared with a reading that does not
go through it: which parameters a backward pass gives a gradient (``trainable_parameter_names``),
the ``lora_A`` / ``lora_B`` modules PEFT's ``LoraLayer`` holds for every adapter
(``lora_parameter_names``, ``lora_weights_dtypes``), the model's ``state_dict`` without those
modules, as a snapshot that a later in-place change to the model leaves alone (``base_parameters``),
and the ``quant_type`` bitsandbytes' ``Params4bit`` carries (``quant_type_of``), also for an FP4
layer built with bitsandbytes directly.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.config import preset
from engine.lora import (
    LoraSettings,
    apply_lora,
    base_parameters,
    lora_parameter_names,
    lora_weights_dtypes,
    prepare_qlora,
    trainable_parameter_names,
)
from engine.model import build_model
from engine.quant import nf4_layers, quant_type_of
from pv.checkers import checker


def _lora_modules(model: nn.Module) -> dict[str, dict[str, nn.Module]]:
    """``{parameter prefix: module}`` for every adapter's ``lora_A`` / ``lora_B`` matrix, by PEFT's classes."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft.tuners.lora import LoraLayer

    found: dict[str, dict[str, nn.Module]] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            for part in ("lora_A", "lora_B"):
                for adapter, matrix in getattr(module, part).items():
                    found[f"{name}.{part}.{adapter}"] = {"module": matrix}
    return found


def _with_gradient(model: nn.Module, vocab: int) -> list[str]:
    """The parameters one backward pass of a training loss gives a gradient to."""
    model.train()
    ids = torch.arange(16).remainder(vocab).reshape(2, 8)
    model.zero_grad(set_to_none=True)
    model(ids, labels=ids).loss.backward()
    names = sorted(n for n, p in model.named_parameters() if p.grad is not None)
    model.zero_grad(set_to_none=True)
    return names


@checker(
    observes=[
        "models", "trainable_differing", "lora_names_differing", "lora_dtypes_differing",
        "base_keys_differing", "base_values_differing", "base_snapshots_moved", "quant_types_differing",
        "quant_layers",
    ],
    ids=["FALSIFY-LORA-011"],
)  # fmt: skip
def introspection_as_the_model_holds_it(seed: int = 0) -> dict[str, Any]:
    """LoRA on fp32 and bf16 bases (a second adapter added, the first active) and QLoRA, each read
    through the helpers and directly."""
    # bitsandbytes loads only in the checkers that quantize (it probes the CPU and GPU on import)
    import bitsandbytes as bnb

    config = preset("tiny")
    settings = LoraSettings(r=4, alpha=8, targets=("q_proj", "v_proj", "down_proj"))

    def fresh(dtype: torch.dtype = torch.float32) -> nn.Module:
        torch.manual_seed(seed)
        return build_model(config).to(dtype)

    lora = apply_lora(fresh(), settings)
    lora.add_adapter("other", LoraSettings(r=2, alpha=2, targets=("k_proj",)).peft_config())
    models: dict[str, Any] = {
        "lora": lora,
        "lora-bf16": apply_lora(fresh(torch.bfloat16), settings),
        "qlora": prepare_qlora(fresh(), settings),
    }
    out: dict[str, Any] = {"models": len(models), "trainable_differing": 0, "lora_names_differing": 0}
    out |= {"lora_dtypes_differing": 0, "base_keys_differing": 0, "base_values_differing": 0}
    out |= {"base_snapshots_moved": 0, "quant_types_differing": 0, "quant_layers": 0}
    for model in models.values():
        out["trainable_differing"] += trainable_parameter_names(model) != _with_gradient(model, config.vocab_size)
        params = dict(model.named_parameters())
        matrices = {f"{prefix}.{n}": p for prefix, m in _lora_modules(model).items() for n, p in
                    m["module"].named_parameters()}  # fmt: skip
        out["lora_names_differing"] += lora_parameter_names(model) != sorted(matrices)
        dtypes = lora_weights_dtypes(model)
        out["lora_dtypes_differing"] += dtypes != {n: params[n].dtype for n in matrices}
        state = model.state_dict()
        expected = {k: v for k, v in state.items() if k not in matrices}
        snapshot = base_parameters(model)
        out["base_keys_differing"] += sorted(snapshot) != sorted(expected)
        out["base_values_differing"] += sum(
            k not in snapshot or snapshot[k].dtype != v.dtype or not torch.equal(snapshot[k], v)
            for k, v in expected.items()
        )
        kept = {k: v.clone() for k, v in snapshot.items()}
        with torch.no_grad():  # the model moves on; a snapshot must not move with it
            for k, v in model.state_dict(keep_vars=True).items():
                if k in expected and v.is_floating_point():
                    v.add_(1.0)
        out["base_snapshots_moved"] += sum(not torch.equal(kept[k], snapshot[k]) for k in kept)
    layers = [layer for _, layer in nf4_layers(models["qlora"])]
    fp4: Any = bnb.nn.Linear4bit(64, 64, bias=False, quant_type="fp4", device="meta")
    fp4.weight = bnb.nn.Params4bit(torch.randn(64, 64), requires_grad=False, quant_type="fp4", module=fp4)
    fp4 = fp4.to("cpu")  # Params4bit quantizes on its first move
    for layer in [*layers, fp4]:
        out["quant_layers"] += 1
        out["quant_types_differing"] += quant_type_of(layer) != layer.weight.quant_type
    return out
