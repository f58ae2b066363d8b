from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.config import preset
from engine.faults import FAULTS
from engine.model import build_model
from engine.quant import (
    NF4AlignmentWarning,
    NF4Config,
    dequantize_model,
    dequantize_weight,
    import_bnb,
    nf4_layers,
    nf4_storage_bytes,
    quant_type_of,
    quantize_model,
)

bnb = import_bnb()


def tiny(seed: int = 0, **overrides: object) -> Any:
    """The tiny preset with an MLP width that is a multiple of the NF4 blocksize."""
    torch.manual_seed(seed)
    return build_model(preset("tiny", **{"intermediate_size": 192, **overrides}))


def test_linear_layers_become_nf4_with_blocksize_64() -> None:
    model = tiny()
    reference = {n: p.detach().clone() for n, p in model.named_parameters()}
    quantize_model(model)
    layers = dict(nf4_layers(model))
    # 7 projections per layer, lm_head kept in full precision
    assert len(layers) == 7 * model.config.num_hidden_layers
    assert type(model.lm_head) is torch.nn.Linear
    assert model.is_loaded_in_4bit is True
    for name, layer in layers.items():
        assert quant_type_of(layer) == "nf4"
        assert layer.weight.quant_state.blocksize == 64
        assert layer.weight.dtype == torch.uint8
        assert layer.support_avx512bf16_for_cpu is False
        ref = reference[name + ".weight"]
        rel = ((dequantize_weight(layer) - ref).abs().mean() / ref.abs().mean()).item()
        assert 0.0 < rel < 0.15, name


def test_fp4_default_fault_changes_quant_type_and_error() -> None:
    model = tiny()
    ref = model.model.layers[0].mlp.up_proj.weight.detach().clone()
    with FAULTS.enabled("nf4_as_fp4"):
        quantize_model(model)
    layer = model.model.layers[0].mlp.up_proj
    assert quant_type_of(layer) == "fp4"
    nf4_model = quantize_model(tiny())
    err_fp4 = (dequantize_weight(layer) - ref).pow(2).mean()
    err_nf4 = (dequantize_weight(nf4_model.model.layers[0].mlp.up_proj) - ref).pow(2).mean()
    # NF4 is the better code for normally distributed weights.
    assert err_nf4 < err_fp4


def test_double_quant_storage_matches_its_layout() -> None:
    n = 1024 * 1024
    single = nf4_storage_bytes(
        quantize_model(torch.nn.Sequential(torch.nn.Linear(1024, 1024, bias=False)), NF4Config(double_quant=False))
    )
    double = nf4_storage_bytes(
        quantize_model(torch.nn.Sequential(torch.nn.Linear(1024, 1024, bias=False)), NF4Config(double_quant=True))
    )
    # codes at 4 bits + one fp32 absmax per 64 values + the layer's 16 fp32 NF4 levels
    assert single == n // 2 + (n // 64) * 4 + 16 * 4
    # codes + 8-bit absmax + fp32 absmax per 256 absmax + 256-entry fp32 code book + fp32 offset + NF4 levels
    assert double == n // 2 + n // 64 + (n // 64 // 256) * 4 + 256 * 4 + 4 + 16 * 4
    assert double < single


def test_quantized_forward_is_close_to_full_precision() -> None:
    model = tiny()
    x = torch.randint(0, 512, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(x).logits
        quantize_model(model)
        q = model(x).logits
    rel = ((q - full).abs().mean() / full.abs().mean()).item()
    assert 0.0 < rel < 0.25


def _lora_grad_after_eval_forward(model: Any) -> torch.Tensor | None:
    from engine.lora import LoraSettings, apply_lora

    peft_model: Any = apply_lora(model, LoraSettings(r=4))
    x = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(0))
    peft_model.eval()
    with torch.no_grad():
        peft_model(x)
    peft_model.train()
    layer = peft_model.base_model.model.model.layers[0].self_attn.q_proj
    torch.nn.init.normal_(layer.lora_B["default"].weight, std=0.1)
    peft_model(x, labels=x).loss.backward()
    return layer.lora_A["default"].weight.grad


@pytest.mark.skipif(not bnb.functional.has_avx512bf16(), reason="the repack only exists on AVX512-BF16 CPUs")
def test_eval_forward_repack_is_off_so_gradients_survive() -> None:
    grad = _lora_grad_after_eval_forward(quantize_model(tiny()))
    assert grad is not None and grad.abs().sum() > 0
    with FAULTS.enabled("bf16_repack_left_on"):
        model = quantize_model(tiny())
    assert model.model.layers[0].self_attn.q_proj.support_avx512bf16_for_cpu is True
    assert _lora_grad_after_eval_forward(model) is None


def test_cpu_misaligned_layers_stay_full_precision() -> None:
    model = tiny(intermediate_size=176)  # down_proj is 176 wide: not a multiple of 64
    with pytest.warns(NF4AlignmentWarning, match="kept in full precision"):
        quantize_model(model)
    assert model.nf4_kept_full_precision == ("model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj")
    assert type(model.model.layers[0].mlp.down_proj) is torch.nn.Linear
    assert quant_type_of(model.model.layers[0].mlp.up_proj) == "nf4"


def test_cpu_kernel_misalignment_is_real() -> None:
    # Why the guard exists: the CPU dequantize of a 64x176 weight is far off a row-independent NF4.
    w = torch.randn(64, 176, generator=torch.Generator().manual_seed(0)) * 0.02
    codes, state = bnb.functional.quantize_4bit(w, blocksize=64, quant_type="nf4")
    flat_codes, flat_state = bnb.functional.quantize_4bit(w.reshape(-1), blocksize=64, quant_type="nf4")
    shaped = bnb.functional.dequantize_4bit(codes, state)
    flat = bnb.functional.dequantize_4bit(flat_codes, flat_state).reshape(64, 176)
    assert (flat - w).abs().mean() / w.abs().mean() < 0.12
    shaped_err = float((shaped - w).abs().mean() / w.abs().mean())
    if shaped_err < 0.12:
        # The defect lives in one of bitsandbytes' CPU kernels (seen on AVX512 machines); other CPUs
        # take a path that gets it right, where keeping those layers in full precision only costs memory.
        pytest.skip(
            f"bitsandbytes dequantizes row-crossing blocks correctly on this CPU "
            f"({torch.backends.cpu.get_cpu_capability()}, error {shaped_err:.3f})"
        )
    assert shaped_err > 0.15


def test_dequantize_model_restores_linear_layers() -> None:
    model = quantize_model(tiny())
    expected = dequantize_weight(model.model.layers[1].self_attn.o_proj)
    dequantize_model(model)
    assert not list(nf4_layers(model))
    assert "is_loaded_in_4bit" not in model.__dict__
    assert torch.equal(model.model.layers[1].self_attn.o_proj.weight, expected)
