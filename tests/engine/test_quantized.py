"""engine.quantized: what it refuses, and the import that keeps a file's blocks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from engine.checkpoint import load_checkpoint, load_state, read_header, save_checkpoint
from engine.config import preset
from engine.errors import BlocksError, CheckpointError, ExportError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.model import build_model
from engine.quantized import BlockLinear, Int4Linear, require_float_weights, unpack
from engine.tokenizer import cached_tokenizer


def _q4_1_bytes(rows: int, k: int, seed: int) -> np.ndarray:
    """Q4_1 blocks of a [rows, k] matrix as a file holds them: float16 d and m, then 16 bytes of codes."""
    rng = np.random.default_rng(seed)
    blocks = rows * (k // 32)
    dm = rng.random((blocks, 2)).astype(np.float16).view(np.uint8).reshape(blocks, 4)
    return np.concatenate([dm, rng.integers(0, 256, (blocks, 16), dtype=np.uint8)], axis=1).reshape(-1)


def test_unpack_refuses_a_kind_it_does_not_keep_and_a_row_of_partial_blocks() -> None:
    with pytest.raises(
        ValueError, match=r"^Q2_K blocks are not kept quantized; supported: Q4_0, Q4_1, Q4_K, Q5_0, Q6_K, Q8_0$"
    ):
        unpack("Q2_K", np.zeros(84, dtype=np.uint8), (1, 256))
    with pytest.raises(ValueError, match=r"^a Q6_K row of 128 weights is not a whole number of 256-weight blocks$"):
        unpack("Q6_K", np.zeros(105, dtype=np.uint8), (1, 128))
    with pytest.raises(ValueError, match=r"^a Q4_0 row of 48 weights is not a whole number of 32-weight blocks$"):
        unpack("Q4_0", np.zeros(27, dtype=np.uint8), (1, 48))
    with pytest.raises(ValueError, match=r"^40 bytes are not the Q4_0 blocks of a \[1, 64\] matrix$"):
        unpack("Q4_0", np.zeros(40, dtype=np.uint8), (1, 64))
    assert np.array_equal(unpack("Q4_0", np.zeros(36, dtype=np.uint8), (2, 32)).raw, np.zeros((2, 18)))


@pytest.fixture(scope="module")
def q8_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = build_model(preset("tiny", intermediate_size=192)).eval()
    return export_gguf(model, cached_tokenizer(512), tmp_path_factory.mktemp("q8") / "tiny-q8_0.gguf", "q8_0")


def test_a_kept_import_runs_its_layers_from_blocks_and_says_which(q8_file: Path) -> None:
    loaded = import_gguf(q8_file, quantized=True)
    layers = [m for m in loaded.model.modules() if isinstance(m, BlockLinear)]
    assert len(layers) == 15 and {m.kind for m in layers} == {"Q8_0"}
    assert loaded.manifest["quantized"] == {"Q8_0": 15}
    assert "quantized" not in import_gguf(q8_file).manifest
    assert not any(isinstance(m, torch.nn.Linear) for m in loaded.model.modules())


@pytest.mark.parametrize(("device", "dtype"), [("meta", None), ("cpu", torch.float16)])
def test_a_kept_import_refuses_another_device_or_dtype(q8_file: Path, device: str, dtype: torch.dtype | None) -> None:
    with pytest.raises(ExportError, match=r"^quantized layers run on the CPU under float32 activations"):
        import_gguf(q8_file, device, dtype, quantized=True)


def test_layers_stack_only_where_every_part_but_the_last_is_whole_row_tiles() -> None:
    from engine.quantized import can_stack, stacked

    def layer(rows: int) -> Int4Linear:
        return Int4Linear.from_blocks(unpack("Q4_1", _q4_1_bytes(rows, 64, rows), (rows, 64)), torch.randn(rows))

    x = torch.randn(3, 64)
    for rows in ((64, 32), (128, 64, 64)):
        parts = [layer(n) for n in rows]
        assert can_stack(parts)
        assert torch.equal(stacked(parts)(x), torch.cat([p(x) for p in parts], dim=-1))
    assert not can_stack([layer(32), layer(32)]) and not can_stack([layer(96), layer(32)])
    with pytest.raises(ValueError, match=r"^layers of \[32, 32\] rows cannot be stacked$"):
        stacked([layer(32), layer(32)])


def test_a_checkpoint_of_a_kept_import_loads_as_the_model_it_was(q8_file: Path, tmp_path: Path) -> None:
    loaded = import_gguf(q8_file, quantized=True)
    path = save_checkpoint(tmp_path / "q8.safetensors", loaded.model, loaded.tokenizer, loaded.manifest)
    tensors, meta = read_header(path)
    kinds = json.loads(meta["quantized"])
    assert len(kinds) == 15 and set(kinds.values()) == {"Q8_0"} and kinds["lm_head"] == "Q8_0"
    assert {t.dtype for name, t in tensors.items() if name.endswith(".raw")} == {"U8"}
    assert tensors["lm_head.raw"].shape == (512, 64 // 32 * 34) and "lm_head.weight" not in tensors
    again = load_checkpoint(path)
    ids = torch.tensor([[1, 5, 9, 200]])
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, again.model(ids).logits)
    assert again.model.num_parameters() == loaded.model.num_parameters() == build_model(loaded.config).num_parameters()
    with pytest.raises(CheckpointError, match=r"^quantized layers run on the CPU under float32 activations"):
        load_checkpoint(path, dtype=torch.float16)


def _rewritten(path: Path, out: Path, **meta: str) -> Path:
    tensors, old = load_state(path), read_header(path)[1]
    save_file(tensors, str(out), metadata={**old, **meta})
    return out


@pytest.mark.parametrize(
    ("kinds", "refusal"),
    [
        ("[]", r"^metadata key `quantized` is not a JSON object$"),
        (
            '{"model.norm": "Q8_0"}',
            r"^metadata `quantized` names `model.norm`, which is not a linear layer of the model$",
        ),
        (
            '{"lm_head": "Q2_K"}',
            r"^metadata `quantized` gives `lm_head` the kind 'Q2_K'; "
            r"the engine runs Q4_0, Q4_1, Q4_K, Q5_0, Q6_K, Q8_0$",
        ),
        ('{"lm_head": "Q4_K"}', r"^`lm_head` rows of 64 weights are not whole Q4_K blocks$"),
        ('{"lm_head": "Q4_0"}', r"^tensor `lm_head.raw` has shape \[512, 68\], expected \[512, 36\]$"),
    ],
)
def test_a_checkpoint_whose_blocks_metadata_does_not_fit_is_refused_naming_it(
    q8_file: Path, tmp_path: Path, kinds: str, refusal: str
) -> None:
    loaded = import_gguf(q8_file, quantized=True)
    path = save_checkpoint(tmp_path / "q8.safetensors", loaded.model, loaded.tokenizer)
    edited = json.loads(read_header(path)[1]["quantized"]) if kinds.startswith('{"lm_head"') else None
    text = json.dumps({**edited, **json.loads(kinds)}) if edited is not None else kinds
    with pytest.raises(CheckpointError, match=refusal):
        load_checkpoint(_rewritten(path, tmp_path / "bad.safetensors", quantized=text))


def test_what_needs_float_weights_refuses_a_model_in_blocks_with_the_way_out(q8_file: Path) -> None:
    model = import_gguf(q8_file, quantized=True).model
    with pytest.raises(BlocksError) as refused:
        require_float_weights(model, "training")
    assert str(refused.value) == (
        "training needs float weights, and 15 layers of this model run a GGUF file's quantized blocks (15 Q8_0): "
        "import the file with --dtype f32 (or f16, bf16) to dequantize them"
    )
    require_float_weights(import_gguf(q8_file).model, "training")  # a float model passes
