"""Training memory of a saved checkpoint: measured by category in a fresh interpreter, against the formula."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engine.checkpoint import load_state, save_checkpoint
from engine.checkpoint_memory import formula, measure_checkpoint
from engine.config import preset
from engine.lora import LoraSettings
from engine.model import build_model
from engine.tokenizer import cached_tokenizer
from pv.faults import ENV_VAR

SETTINGS = LoraSettings(r=4, alpha=8.0, targets=("q_proj", "v_proj"))
# Widths that are multiples of NF4's blocksize, so bitsandbytes quantizes every linear on CPU;
# 8 layers of 256 hold ~27 MB of fp32 linear weights: well above resident-memory noise.
CONFIG = preset("tiny", hidden_size=256, intermediate_size=768, num_hidden_layers=8, num_attention_heads=4)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    tok = cached_tokenizer(CONFIG.vocab_size)
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    return save_checkpoint(path, build_model(CONFIG), tok, {"kind": "test"})


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_each_measured_category_is_the_formula(checkpoint: Path, method: str) -> None:
    measured = measure_checkpoint(checkpoint, method, lora=SETTINGS)  # type: ignore[arg-type]
    expected = formula(checkpoint, method, SETTINGS, torch.float16)  # type: ignore[arg-type]
    assert measured.trainable_params == expected.trainable_params > 0
    for field in ("trainable_weight_bytes", "gradient_bytes", "optimizer_bytes"):
        assert getattr(measured, field) == getattr(expected, field), field
    # the base also holds RoPE's inverse frequencies (buffers the formula leaves out)
    assert 0 <= measured.base_weight_bytes - expected.base_weight_bytes <= 4096
    assert measured.base_storage == ("nf4" if method == "qlora" else "fp16")


def test_qlora_frees_the_full_precision_base_it_quantized(checkpoint: Path) -> None:
    """QLoRA reads the base in float32, quantizes it and must not keep the float32 copy resident
    (a base left mapped from its file keeps every page after quantization)."""
    linear_fp32 = sum(t.numel() * 4 for name, t in load_state(checkpoint).items() if name.endswith("proj.weight"))
    freed = measure_checkpoint(checkpoint, "qlora", lora=SETTINGS)
    kept = measure_checkpoint(checkpoint, "qlora", lora=SETTINGS, env={**os.environ, ENV_VAR: "checkpoint_mmap_kept"})
    assert freed.rss_model_bytes < kept.rss_model_bytes - linear_fp32 // 2
    assert freed.base_weight_bytes == kept.base_weight_bytes  # the live tensors are the same either way


def test_loaded_tensors_survive_the_file_being_replaced(checkpoint: Path, tmp_path: Path) -> None:
    """load_state's tensors are the process's own memory, not a view of the file."""
    copy = tmp_path / "copy.safetensors"
    copy.write_bytes(checkpoint.read_bytes())
    state = load_state(copy)
    before = {k: v.clone() for k, v in state.items()}
    copy.write_bytes(b"\0" * copy.stat().st_size)  # the same inode rewritten in place
    assert all(torch.equal(state[k], before[k]) for k in state)


def test_only_adapter_methods_are_measured(checkpoint: Path) -> None:
    with pytest.raises(RuntimeError, match="lora and qlora, not 'full'"):
        measure_checkpoint(checkpoint, "full")
