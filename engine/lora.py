"""LoRA and QLoRA on the engine's decoder through PEFT.

``apply_lora`` wraps a full-precision (fp32/fp16/bf16) base; ``prepare_qlora`` quantizes the
base's linear layers to NF4 *first* (engine.quant, which also flags the model as 4-bit so PEFT
picks its bnb-aware LoRA layer) and then wraps.  In both, the LoRA matrices are fp32 and they
are the only trainable parameters.  Adapters are saved in PEFT's own format
(``adapter_model.safetensors`` + ``adapter_config.json``) so ``PeftModel.from_pretrained`` reads
them too.

Imports inside functions: peft loads only when an adapter is applied, loaded or saved (seconds;
pretraining never needs it).
"""

from __future__ import annotations

import json
import os
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file
from torch import nn

from engine.atomic import atomic_dir
from engine.config import ALL_PROJECTIONS as ALL_PROJECTIONS
from engine.config import ATTENTION_PROJECTIONS as ATTENTION_PROJECTIONS
from engine.config import DEFAULT_TARGETS as DEFAULT_TARGETS
from engine.config import MLP_PROJECTIONS as MLP_PROJECTIONS
from engine.faults import FAULTS
from engine.quant import NF4Config, dequantize_model, dequantize_weight, import_bnb, is_nf4_linear, quantize_model
from engine.quantized import require_float_weights
from engine.safetensors_io import save_tensors

if TYPE_CHECKING:
    from peft import LoraConfig, PeftModel


def peft_module() -> types.ModuleType:
    """peft, imported on first use: it pulls in bitsandbytes and transformers (seconds), which a
    command that never touches an adapter must not pay for.  bitsandbytes goes first, through
    :func:`import_bnb`, so its missing-optional-kernel warning stays quiet."""
    import_bnb()
    import peft
    import peft.tuners.lora

    return peft


ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


@dataclass(frozen=True)
class LoraSettings:
    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    targets: tuple[str, ...] = field(default=DEFAULT_TARGETS)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.targets) - set(ALL_PROJECTIONS))
        if unknown:
            raise ValueError(f"unknown LoRA target(s) {unknown}; the engine's projections are {list(ALL_PROJECTIONS)}")
        if not self.targets:
            raise ValueError("LoRA needs at least one target projection")
        if self.r < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {self.r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")

    def peft_config(self) -> LoraConfig:
        return peft_module().LoraConfig(
            r=self.r,
            # the faults: scaling alpha / r collapsed to 1; B drawn at random instead of zeros, so a
            # fresh adapter already changes the model
            lora_alpha=float(self.r) if FAULTS.active("lora_scaling_ignored") else self.alpha,
            init_lora_weights=not FAULTS.active("lora_b_random_init"),
            lora_dropout=self.dropout,
            # the fault wraps every projection whatever the settings name
            target_modules=list(ALL_PROJECTIONS if FAULTS.active("lora_targets_ignored") else self.targets),
            bias="none",
            task_type=None,
        )


def _finish_wrap(model: PeftModel) -> PeftModel:
    for name, p in model.named_parameters():
        if "lora_" in name and p.is_floating_point() and p.dtype != torch.float32:
            p.data = p.data.float()
    if FAULTS.active("lora_base_upcast"):  # pragma: no mutate
        model.float()  # pragma: no mutate -- the defect: the base upcast with its adapters, twice its memory at bf16
    if FAULTS.active("lora_b_frozen"):
        for name, p in model.named_parameters():  # pragma: no mutate
            if ".lora_B." in name:  # pragma: no mutate
                p.requires_grad_(False)  # pragma: no mutate
    if FAULTS.active("base_left_trainable"):
        for p in model.parameters():  # pragma: no mutate
            if p.is_floating_point():  # pragma: no mutate
                p.requires_grad_(True)  # pragma: no mutate
    return model


def apply_lora(model: nn.Module, settings: LoraSettings | None = None, adapter_name: str = "default") -> PeftModel:
    """Wrap ``model`` with a new LoRA adapter; the base is frozen, LoRA weights are fp32."""
    s = settings or LoraSettings()
    require_float_weights(model, "a LoRA adapter")
    peft_model = peft_module().get_peft_model(model, s.peft_config(), adapter_name=adapter_name)
    return _finish_wrap(peft_model)


def prepare_qlora(
    model: nn.Module,
    settings: LoraSettings | None = None,
    nf4: NF4Config | None = None,
    adapter_name: str = "default",
    device: torch.device | str | None = None,
) -> PeftModel:
    """QLoRA: quantize the base's linear layers to NF4, then wrap them with LoRA."""
    s = settings or LoraSettings()
    require_float_weights(model, "QLoRA's NF4 base")
    if FAULTS.active("lora_before_nf4"):
        # The defect: the quantizer runs over an already wrapped model, so it also turns the
        # LoRA matrices into frozen NF4 and PEFT never chose its 4-bit layer.
        wrapped = peft_module().get_peft_model(model, s.peft_config(), adapter_name=adapter_name)  # pragma: no mutate
        inner: Any = wrapped.base_model  # pragma: no mutate
        quantize_model(inner.model, nf4, device)  # pragma: no mutate
        return _finish_wrap(wrapped)  # pragma: no mutate
    quantize_model(model, nf4, device)
    return apply_lora(model, s, adapter_name)


def trainable_parameter_names(model: nn.Module) -> list[str]:
    return sorted(n for n, p in model.named_parameters() if p.requires_grad)


def lora_parameter_names(model: nn.Module) -> list[str]:
    """Names of the LoRA A/B matrices of every adapter."""
    return sorted(n for n, _ in model.named_parameters() if ".lora_A." in n or ".lora_B." in n)


def base_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every non-LoRA parameter and buffer, cloned: the frozen base to compare bit for bit."""
    state = model.state_dict(keep_vars=False)
    if FAULTS.active("base_snapshot_not_cloned"):  # the defect: the "snapshot" is the live tensors
        return {k: v.detach() for k, v in state.items() if "lora_" not in k}  # pragma: no mutate
    return {k: v.detach().clone() for k, v in state.items() if "lora_" not in k}


def lora_weights_dtypes(model: nn.Module) -> dict[str, torch.dtype]:
    return {n: p.dtype for n, p in model.named_parameters() if ".lora_" in n}


def save_adapter(model: PeftModel, path: str | os.PathLike[str], adapter_name: str = "default") -> Path:
    """Write one adapter as PEFT's ``adapter_model.safetensors`` + ``adapter_config.json`` (atomic)."""
    if adapter_name not in model.peft_config:
        raise KeyError(f"no adapter {adapter_name!r}; the model has {sorted(model.peft_config)}")
    final = Path(path)
    with atomic_dir(final) as tmp:
        state = peft_module().get_peft_model_state_dict(model, adapter_name=adapter_name)
        save_tensors(
            {k: v.detach().contiguous().cpu() for k, v in state.items()},
            str(tmp / ADAPTER_WEIGHTS),
            metadata={"format": "pt", "adapter_name": adapter_name},
        )
        model.peft_config[adapter_name].save_pretrained(str(tmp))
        if FAULTS.active("adapter_config_alpha_dropped"):  # the defect: readers fall back to PEFT's alpha 8
            cfg_file = tmp / ADAPTER_CONFIG  # pragma: no mutate
            doc = json.loads(cfg_file.read_text())  # pragma: no mutate
            doc.pop("lora_alpha", None)  # pragma: no mutate
            cfg_file.write_text(json.dumps(doc))  # pragma: no mutate
    return final


def _read_adapter_config(path: Path) -> LoraConfig:
    cfg_file = path / ADAPTER_CONFIG
    missing = not cfg_file.is_file() or not (path / ADAPTER_WEIGHTS).is_file()
    # the defect: a folder holding its config passes without its weights
    if FAULTS.active("adapter_folder_weights_unchecked"):  # pragma: no mutate
        missing = not cfg_file.is_file()  # pragma: no mutate
    if missing:
        raise FileNotFoundError(f"{path} is not an adapter folder (needs {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})")
    data = json.loads(cfg_file.read_text())
    if data.get("peft_type") != "LORA":
        raise ValueError(f"{cfg_file}: peft_type {data.get('peft_type')!r} is not LORA")
    config: LoraConfig = peft_module().LoraConfig.from_pretrained(str(path))
    return config


def load_adapter(
    model: nn.Module, path: str | os.PathLike[str], adapter_name: str = "default", *, trainable: bool = False
) -> PeftModel:
    """Add the adapter saved at ``path`` to ``model`` (a PeftModel or a bare base) and activate it."""
    folder = Path(path)
    config = _read_adapter_config(folder)
    config.inference_mode = not trainable
    weights = load_file(str(folder / ADAPTER_WEIGHTS))  # an unreadable file is refused before the model changes
    target: Any = model  # a PeftModel or a bare base
    wrapped = isinstance(target, peft_module().PeftModel)
    if wrapped and adapter_name in target.peft_config:
        raise ValueError(f"adapter {adapter_name!r} is already loaded; delete it or pick another name")
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    active = target.active_adapter if wrapped else None
    peft_model: Any
    if wrapped:
        target.add_adapter(adapter_name, config)
        peft_model = target
    else:
        peft_model = peft_module().get_peft_model(model, config, adapter_name=adapter_name)
    try:
        result: Any = peft_module().set_peft_model_state_dict(peft_model, weights, adapter_name=adapter_name)
        stray = [k for k in result.unexpected_keys if "lora_" in k]
        if stray:
            raise ValueError(f"adapter at {folder} does not fit this model: unexpected keys {stray[:5]}")
    except (ValueError, RuntimeError):
        if not FAULTS.active("adapter_refusal_leaves_layers"):  # the defect: the refused adapter stays in the model
            _undo_load(peft_model, adapter_name, wrapped, active, flags)
        raise
    peft_model.set_adapter(adapter_name)
    loaded: PeftModel = peft_model
    train = trainable
    if FAULTS.active("adapter_loaded_trainable"):  # the defect: an adapter loaded to run trains too
        train = True  # pragma: no mutate
    for n, p in loaded.named_parameters():
        if ".lora_" in n:
            p.requires_grad_(train and f".{adapter_name}." in n)
    return loaded


def _undo_load(peft_model: Any, adapter_name: str, wrapped: bool, active: Any, flags: dict[str, bool]) -> None:
    """Take a refused adapter out again: the caller's model as it was, layers, active adapter and
    trainable flags."""
    if wrapped:
        peft_model.delete_adapter(adapter_name)
        peft_model.set_adapter(active)
        model: nn.Module = peft_model
    else:
        model = peft_model.unload()  # PEFT's LoRA layers replaced by the base layers, in place
    for n, p in model.named_parameters():
        p.requires_grad_(flags.get(n, p.requires_grad))


def swap_adapter(model: PeftModel, adapter_name: str) -> None:
    """Make ``adapter_name`` the active adapter (all loaded adapters stay in memory)."""
    if adapter_name not in model.peft_config:
        raise KeyError(f"no adapter {adapter_name!r}; loaded: {sorted(model.peft_config)}")
    model.set_adapter(adapter_name)


def merge_adapter(model: PeftModel, adapter_name: str = "default", *, dequantize: bool = False) -> nn.Module:
    """Fold one adapter into the base and return the unwrapped base model.

    On a full-precision base this is PEFT's ``merge_and_unload``.  On an NF4 base, PEFT merges by
    dequantizing, adding B·A·scale and quantizing again (rounding error); with
    ``dequantize=True`` the engine instead returns full-precision linears holding
    ``dequant(W) + B·A·scale`` exactly.
    """
    if adapter_name not in model.peft_config:
        raise KeyError(f"no adapter {adapter_name!r}; loaded: {sorted(model.peft_config)}")
    tuner: Any = model.base_model
    base: nn.Module = tuner.model
    if not dequantize:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Merge lora module to 4-bit linear")
            if FAULTS.active("merge_adapter_merges_active"):  # the defect: the active adapter, not the one named
                return model.merge_and_unload()  # pragma: no mutate
            return model.merge_and_unload(adapter_names=[adapter_name])
    for parent in list(base.modules()):
        for name, child in list(parent.named_children()):
            if not isinstance(child, peft_module().tuners.lora.LoraLayer):
                continue
            lora_layer: Any = child
            inner: Any = lora_layer.get_base_layer()
            weight = dequantize_weight(inner) if is_nf4_linear(inner) else inner.weight.detach().float()
            if adapter_name in lora_layer.lora_A:
                delta = lora_layer.get_delta_weight(adapter_name).float()
                if FAULTS.active("adapter_merge_unscaled"):  # the fault folds in B·A without alpha / r
                    delta = delta / lora_layer.scaling[adapter_name]  # pragma: no mutate
                weight = weight + delta
            lin = nn.Linear(inner.in_features, inner.out_features, bias=inner.bias is not None, device="meta")
            lin.weight = nn.Parameter(weight.detach().clone(), requires_grad=False)
            if inner.bias is not None:
                lin.bias = nn.Parameter(inner.bias.detach().float().clone(), requires_grad=False)
            setattr(parent, name, lin)
    return dequantize_model(base)


def lora_param_count(model: nn.Module) -> int:
    """Values in the LoRA A/B matrices of every adapter, as PEFT's wrapped model holds them."""
    params = dict(model.named_parameters())
    return sum(params[n].numel() for n in lora_parameter_names(model))
