from __future__ import annotations

import copy

import pytest
import torch

from engine.config import preset
from engine.lora import LoraSettings, apply_lora, lora_parameter_names
from engine.memory import (
    compare_lora_qlora,
    estimate,
    lora_param_count,
    lora_param_count_square,
    measure_method,
    measure_training,
    memory_table,
    nf4_bytes,
    seven_b_report,
)
from engine.model import build_model
from engine.quant import NF4Config, nf4_layers, nf4_storage_bytes, quantize_model

QV16 = LoraSettings(r=16, alpha=32, targets=("q_proj", "v_proj"))


def test_seven_b_lora_counts_formula_and_real() -> None:
    report = seven_b_report(r=16)
    assert report["lora_params_square_formula"] == 28 * 2 * 16 * 3584 * 2 == 6_422_528
    # GQA: v_proj maps 3584 -> 4 kv heads * 128 = 512
    assert report["lora_params_real"] == 28 * (16 * (3584 + 3584) + 16 * (3584 + 512)) == 5_046_272
    assert report["base_params"] == build_model(preset("qwen2.5-7b"), device="meta").num_parameters()
    lora_row, qlora_row = report["rows"]
    assert lora_row["trainable_params"] == qlora_row["trainable_params"] == 5_046_272
    assert lora_row["optimizer_bytes"] == 2 * 4 * 5_046_272
    # fp16 base is ~2 bytes/param; NF4 + DQ base must be well under half of it
    assert lora_row["base_weight_bytes"] > 2 * 7.5e9
    assert qlora_row["base_weight_bytes"] < 0.4 * lora_row["base_weight_bytes"]


def test_real_count_matches_peft() -> None:
    torch.manual_seed(0)
    model = build_model(preset("tiny"))
    settings = LoraSettings(r=4, targets=("q_proj", "v_proj", "gate_proj", "down_proj"))
    expected = lora_param_count(model, settings)
    wrapped = apply_lora(copy.deepcopy(model), settings)
    params = dict(wrapped.named_parameters())
    assert expected == sum(params[n].numel() for n in lora_parameter_names(wrapped))
    assert lora_param_count_square(model.config, LoraSettings(r=4)) != lora_param_count(model, LoraSettings(r=4))


@pytest.mark.parametrize("double_quant", [False, True])
def test_nf4_formula_matches_bitsandbytes_storage(double_quant: bool) -> None:
    torch.manual_seed(0)
    model = build_model(preset("tiny", intermediate_size=192))
    analytic = estimate(model, "qlora", base_dtype=torch.float32, lora=LoraSettings(r=4), double_quant=double_quant)
    quantize_model(model, NF4Config(double_quant=double_quant))
    nf4_names = {name + ".weight" for name, _ in nf4_layers(model)}
    rest = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if n not in nf4_names)
    assert analytic.base_weight_bytes == nf4_storage_bytes(model) + rest
    single = nf4_bytes(64 * 64, double_quant=False)
    assert single == 64 * 64 // 2 + 64 * 4 + 16 * 4  # codes, fp32 absmax per block, the 16 NF4 levels


def test_full_estimate_counts_every_parameter_once() -> None:
    model = build_model(preset("qwen2.5-0.5b"), device="meta")  # tied embeddings
    est = estimate(model, "full", base_dtype=torch.bfloat16)
    assert est.trainable_params == model.num_parameters()
    assert est.trainable_weight_bytes == 2 * model.num_parameters()
    assert est.optimizer_bytes == 2 * est.gradient_bytes


def test_table_lists_both_setups() -> None:
    rows = compare_lora_qlora(preset("small"), LoraSettings(r=8))
    text = memory_table(rows, measured={"LoRA, fp16 base": 12345678})
    assert "LoRA, fp16 base" in text and "QLoRA, NF4 base + DQ" in text
    assert "11.77 MiB" in text  # the measured column
    assert rows[1].base_weight_bytes < rows[0].base_weight_bytes


def test_measured_training_memory_matches_the_formulas() -> None:
    config = preset("small", intermediate_size=704)
    meta = build_model(config, device="meta")
    full = measure_method(config, "full", base_dtype=torch.float32, seq_len=16)
    analytic = estimate(meta, "full", base_dtype=torch.float32)
    assert full.steps == 2
    assert 0.9 * analytic.trainable_weight_bytes <= full.model_bytes <= 1.3 * analytic.trainable_weight_bytes
    # grads + two Adam moments are new memory; activations come on top
    state = analytic.gradient_bytes + analytic.optimizer_bytes
    assert 0.9 * state <= full.training_bytes <= 2.5 * state
    with pytest.raises(ValueError, match="at least 2 steps"):
        measure_training(
            lambda: build_model(preset("tiny")), lambda: (torch.zeros(1, 4, dtype=torch.long),) * 2, steps=1
        )


def test_measured_qlora_base_is_smaller_than_fp16_lora_base() -> None:
    config = preset("small", intermediate_size=704)
    settings = LoraSettings(r=8)
    lora = measure_method(config, "lora", lora=settings, base_dtype=torch.float16, seq_len=16)
    qlora = measure_method(config, "qlora", lora=settings, seq_len=16)
    lora_est = estimate(build_model(config, device="meta"), "lora", base_dtype=torch.float16, lora=settings)
    assert 0.8 * lora_est.base_weight_bytes <= lora.model_bytes <= 1.3 * lora_est.base_weight_bytes
    assert qlora.model_bytes < lora.model_bytes
