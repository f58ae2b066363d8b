"""``engine.memory.tensor_footprint`` against the same run's storages counted by walking it.

tensor_footprint counts what the garbage collector can reach (every tensor storage that appeared
while the model was built, and over the training steps).  Here the same model is built again and
trained the same steps, and its storages are counted from what holds them: the model's parameters
and buffers and each NF4 layer's quantization state (packed codes, absmax, nested absmax and code
tables) for the model; the gradients, every AdamW state tensor (moments and step counters) and
what the buffers grew by (RoPE tables filled on the first forward) for training.  A full
fine-tune on an fp16 base, LoRA on a bfloat16 base and QLoRA, with LoRA settings other than the
defaults, and one call with every default.  And ``engine.quant.nf4_storage_bytes`` (what a QLoRA
base's NF4 layers hold) is the bytes of those same states, with and without double quantization.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from engine.config import preset as engine_preset
from engine.lora import LoraSettings, apply_lora, prepare_qlora
from engine.memory import tensor_footprint
from engine.model import build_model
from engine.quant import NF4Config, is_nf4_linear, nf4_storage_bytes, quantize_model
from falsifiers.shared.training import module_tensors, unique_bytes
from falsifiers.shared.weight_bytes import nf4_weight_tensors
from pv.checkers import checker

TARGETS = ("q_proj", "k_proj", "o_proj")


def recount(config: Any, method: str, lora: Any, base_dtype: torch.dtype, steps: int, seed: int) -> tuple[int, int]:
    """(model bytes, training bytes) of the run, counted from the model and its optimizer."""

    torch.manual_seed(seed)
    model: Any = build_model(config, dtype=torch.float32)
    if method == "full":
        model = model.to(base_dtype)
    elif method == "lora":
        model = apply_lora(model.to(base_dtype), lora)
    else:
        model = prepare_qlora(model, lora, device="cpu")
    held = module_tensors(model)
    for module in model.modules():
        if is_nf4_linear(module):
            held += nf4_weight_tensors(module)
    buffers = unique_bytes(list(model.buffers()))
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        ids = torch.randint(0, config.vocab_size, (2, 32), generator=gen)
        model(ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    grads = unique_bytes([p.grad for p in trainable if p.grad is not None])
    state = unique_bytes([t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)])
    return unique_bytes(held), grads + state + unique_bytes(list(model.buffers())) - buffers


def _beside_sparse(measure: Any) -> Any:
    """``measure()`` while a sparse COO tensor is alive."""
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1.0, -1.0]), (4,), check_invariants=True)
    try:
        return measure()
    finally:
        del sparse


@checker(
    observes=["runs", "model_bytes_differing", "training_bytes_differing", "steps_differing", "nf4_storage_differing"],
    ids=["FALSIFY-QMEM-007"],
)
def footprint_is_the_recount(preset: str = "tiny", intermediate_size: int = 192, seed: int = 0) -> dict[str, Any]:
    """Four tensor_footprint calls, each against its recount."""

    config = engine_preset(preset, intermediate_size=intermediate_size)
    lora = LoraSettings(r=6, alpha=3.0, targets=TARGETS)
    out: dict[str, Any] = {"runs": 0, "model_bytes_differing": 0, "training_bytes_differing": 0, "steps_differing": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NF4 alignment notices: the layers are counted as they are
        cases = [
            (tensor_footprint(config, "full", lora=lora, steps=3, seed=seed, base_dtype=torch.float16),
             ("full", lora, torch.float16, 3)),
            (tensor_footprint(config, "lora", lora=lora, seed=seed, base_dtype=torch.bfloat16),
             ("lora", lora, torch.bfloat16, 2)),
            (tensor_footprint(config, "qlora", lora=lora, seed=seed), ("qlora", lora, torch.float16, 2)),
            # with a sparse tensor alive (an embedding's sparse gradient's kind: it owns no plain
            # storage), made before the run, so the walk meets it before the run's own tensors
            (_beside_sparse(lambda: tensor_footprint(config, "lora")), ("lora", LoraSettings(), torch.float16, 2)),
        ]  # fmt: skip
        for got, (method, settings, dtype, steps) in cases:
            model_bytes, training_bytes = recount(config, method, settings, dtype, steps, seed)
            out["runs"] += 1
            out["model_bytes_differing"] += got.model_bytes != model_bytes
            out["training_bytes_differing"] += got.training_bytes != training_bytes
            out["steps_differing"] += got.steps != steps
        # what the NF4 layers hold, by engine.quant.nf4_storage_bytes, against their states read here
        out["nf4_storage_differing"] = 0
        for double_quant in (True, False):
            model = quantize_model(build_model(config), NF4Config(double_quant=double_quant), "cpu")
            held = [t for module in model.modules() if is_nf4_linear(module) for t in nf4_weight_tensors(module)]
            out["nf4_storage_differing"] += nf4_storage_bytes(model) != unique_bytes(held)
    return out
