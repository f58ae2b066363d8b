"""QLoRA memory: NF4 weight bytes against fp16, the training footprint, and measured process memory.

What is counted (FALSIFY-QMEM-001): the linear layers the engine sets out to quantize, i.e. every
``nn.Linear`` of the bare model except those ``NF4Config.skip`` names (``lm_head``) and those the
engine reports in ``model.nf4_kept_full_precision`` (on CPU, layers whose input width is not a
multiple of the blocksize).  Each is charged the bytes it really holds after
``engine.quant.quantize_model`` (packed codes, absmax, the double-quantization constants and the
code tables for a 4-bit layer; the weight tensor for a layer left as it was) against 2 bytes per
weight in fp16.
Biases and the layers left out are the same in both setups and are not counted.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from engine.config import preset as engine_preset
from engine.lora import LoraSettings, prepare_qlora
from engine.memory import Method, linear_shapes, nf4_bytes, tensor_footprint
from engine.model import build_model
from engine.quant import NF4_BLOCKSIZE, NF4AlignmentWarning, NF4Config, is_nf4_linear, quantize_model
from engine.train import TrainConfig, make_optimizer, trainable_named_parameters
from falsifiers.training import unique_bytes
from pv.checkers import checker

FP16_BYTES = 2


def nf4_weight_tensors(layer: Any, *, tables: bool = True) -> list[torch.Tensor]:
    """What a bitsandbytes 4-bit layer stores for its weight: packed codes and block absmax (8-bit
    plus their own fp32 absmax under double quantization), and with ``tables`` the per-layer
    constants that do not grow with the layer (the 16-entry NF4 code, the 256-entry code book of
    the nested quantization and its offset)."""
    state = layer.weight.quant_state
    out = [layer.weight.data, state.absmax]
    if state.nested:
        out.append(state.state2.absmax)
    if tables:
        out.append(state.code)
        if state.nested:
            out += [state.state2.code, state.offset]
    return out


def linear_weight_bytes(module: nn.Module, *, tables: bool = True) -> int:
    """Bytes a (possibly 4-bit) linear layer holds for its weight."""
    if is_nf4_linear(module):
        return unique_bytes(nf4_weight_tensors(module, tables=tables))
    lin: Any = module
    return int(lin.weight.numel() * lin.weight.element_size())


@checker(
    observes=[
        "weight_ratio_measured",
        "weight_ratio_analytic",
        "counted_layers",
        "nf4_counted_layers",
        "kept_full_precision_layers",
    ],
    ids=["FALSIFY-QMEM-001"],
)
def weight_ratio(preset: str, analytic_preset: str, double_quant: bool = True) -> dict[str, Any]:
    """Measured (``preset``, quantized by the engine) and analytic (``analytic_preset``, on meta)
    NF4 bytes / fp16 bytes over the linear weights the engine quantizes."""
    config = NF4Config(double_quant=double_quant)
    model = build_model(engine_preset(preset))
    shapes = {s.name: s for s in linear_shapes(model)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        quantize_model(model, config)
    kept = set(getattr(model, "nf4_kept_full_precision", ()))
    counted = [n for n in shapes if n.rsplit(".", 1)[-1] not in config.skip and n not in kept]
    modules = dict(model.named_modules())
    measured = sum(linear_weight_bytes(modules[n]) for n in counted)
    fp16 = sum(shapes[n].out_features * shapes[n].in_features * FP16_BYTES for n in counted)

    meta = build_model(engine_preset(analytic_preset), device="meta")
    targets = [s for s in linear_shapes(meta) if s.name.rsplit(".", 1)[-1] not in config.skip]
    nf4_total = sum(nf4_bytes(s.out_features * s.in_features, NF4_BLOCKSIZE, double_quant) for s in targets)
    fp16_total = sum(s.out_features * s.in_features * FP16_BYTES for s in targets)
    return {
        "weight_ratio_measured": measured / fp16 if fp16 else float("nan"),
        "weight_ratio_analytic": nf4_total / fp16_total,
        "counted_layers": len(counted),
        "nf4_counted_layers": sum(1 for n in counted if is_nf4_linear(modules[n])),
        "kept_full_precision_layers": len(kept),
    }


@checker(observes=["lora_params", "grad_params", "optimizer_state_params"], ids=["FALSIFY-QMEM-002"])
def training_footprint(preset: str, rank: int, steps: int, seed: int = 0) -> dict[str, Any]:
    """Run ``steps`` QLoRA updates with the engine's optimizer over the parameters the engine's
    training loop would train, then count parameter elements with a gradient and elements held in
    AdamW's state (``exp_avg`` and ``exp_avg_sq``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        model: Any = prepare_qlora(build_model(engine_preset(preset)), LoraSettings(r=rank, alpha=2.0 * rank))
    params = [p for _, p in trainable_named_parameters(model)]
    optimizer = make_optimizer(params, TrainConfig(steps=steps, lr=1e-3, seed=seed))
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        ids = torch.randint(0, model.config.vocab_size, (2, 16), generator=gen)
        optimizer.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()
        optimizer.step()
    lora = sum(p.numel() for n, p in model.named_parameters() if ".lora_A." in n or ".lora_B." in n)
    grads = sum(p.numel() for p in model.parameters() if p.grad is not None)
    state = sum(
        t.numel()
        for entry in optimizer.state.values()
        for key, t in entry.items()
        if key in ("exp_avg", "exp_avg_sq") and isinstance(t, torch.Tensor)
    )
    return {"lora_params": lora, "grad_params": grads, "optimizer_state_params": state}


@checker(
    observes=["qlora_tensor_bytes", "lora_tensor_bytes", "qlora_model_bytes", "lora_model_bytes"],
    ids=["FALSIFY-QMEM-003"],
)
def tensor_footprint_comparison(
    preset: str, rank: int, steps: int, lora_base_dtype: str = "fp32", seed: int = 0
) -> dict[str, Any]:
    """The tensor storages a run keeps alive (model build plus ``steps`` training steps, counted by
    ``engine.memory.tensor_footprint``): QLoRA on NF4 against LoRA on a ``lora_base_dtype`` base.
    Exact byte counts, the same on every run and every machine load."""
    config = engine_preset(preset)
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    if lora_base_dtype not in dtypes:
        raise ValueError(f"lora_base_dtype must be one of {', '.join(dtypes)}, not {lora_base_dtype!r}")
    out = {}
    for method in ("qlora", "lora"):
        m = tensor_footprint(config, method, lora=settings, steps=steps, seed=seed, base_dtype=dtypes[lora_base_dtype])
        out[f"{method}_tensor_bytes"] = m.total_bytes
        out[f"{method}_model_bytes"] = m.model_bytes
    return out


FORMULA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
CATEGORIES = ("base_weight_bytes", "trainable_params", "trainable_weight_bytes", "gradient_bytes", "optimizer_bytes")


@checker(
    observes=["setups", "categories_compared", "categories_differing", "worst", "qlora_base_bytes"],
    ids=["FALSIFY-QMEM-004"],
)
def formula_is_the_footprint(
    tmp_path: Any, engine_tokenizer: Any, tiny_model_factory: Any, rank: int = 4, intermediate_size: int = 192
) -> dict[str, Any]:
    """engine.memory.estimate (through engine.checkpoint_memory.formula) against the tensor storages
    two real training steps keep (engine.checkpoint_memory.measure), category by category, for a
    llama and a biased, tied qwen2 checkpoint: LoRA on an fp32 and an fp16 base, QLoRA on NF4 with
    double quantization.  The MLP is 192 wide so that every linear is quantized on CPU too (the
    engine keeps misaligned ones in full precision, which the formula does not model)."""
    from engine.checkpoint import make_manifest, save_checkpoint
    from engine.checkpoint_memory import formula, measure
    from falsifiers._workdir import fresh_dir

    lora = LoraSettings(r=rank, alpha=2.0 * rank, targets=FORMULA_TARGETS)
    variants = {"llama": {}, "qwen2": {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True}}
    setups: tuple[tuple[Method, torch.dtype], ...] = (
        ("lora", torch.float32),
        ("lora", torch.float16),
        ("qlora", torch.float32),
    )
    out: dict[str, Any] = {"setups": 0, "categories_compared": 0, "categories_differing": 0, "worst": ""}
    worst = 0.0
    for name, overrides in variants.items():
        config = engine_preset("tiny", intermediate_size=intermediate_size, **overrides)
        folder = fresh_dir(tmp_path, f"formula-{name}-")
        path = save_checkpoint(folder / "model.safetensors", tiny_model_factory(0, config=config), engine_tokenizer,
                               make_manifest(step=0))  # fmt: skip
        for method, dtype in setups:
            measured = measure(path, method, lora, dtype, steps=2, batch_size=2, seq_len=16).to_dict()
            predicted = formula(path, method, lora, dtype).to_dict()
            out["setups"] += 1
            if method == "qlora" and name == "llama":
                out["qlora_base_bytes"] = measured["base_weight_bytes"]
            for key in CATEGORIES:
                out["categories_compared"] += 1
                gap = abs(measured[key] - predicted[key]) / max(predicted[key], 1)
                if measured[key] != predicted[key]:
                    out["categories_differing"] += 1
                    if gap >= worst:
                        worst = gap
                        where = f"{name} {method} {dtype}: {key}"
                        out["worst"] = f"{where} {measured[key]} measured, {predicted[key]} predicted"
    return out
