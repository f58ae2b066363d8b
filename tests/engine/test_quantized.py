"""engine.quantized: what it refuses, and the import that keeps a file's blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.config import preset
from engine.errors import ExportError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.model import build_model
from engine.quantized import BlockLinear, Int4Linear, unpack
from engine.tokenizer import cached_tokenizer


def test_unpack_refuses_a_kind_it_does_not_keep_and_a_row_of_partial_blocks() -> None:
    with pytest.raises(ValueError, match=r"^Q5_0 blocks are not kept quantized; supported: Q4_0, Q4_1, Q8_0$"):
        unpack("Q5_0", np.zeros(22, dtype=np.uint8), (1, 32))
    with pytest.raises(ValueError, match=r"^a Q4_0 row of 48 weights is not a whole number of 32-weight blocks$"):
        unpack("Q4_0", np.zeros(27, dtype=np.uint8), (1, 48))


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
    from engine.quantized import QuantBlocks, can_stack, stacked

    def layer(rows: int) -> Int4Linear:
        rng = np.random.default_rng(rows)
        codes = rng.integers(0, 16, (rows, 64)).astype(np.int16)
        scales, zeros = rng.random((rows, 2)).astype(np.float32), rng.random((rows, 2)).astype(np.float32)
        return Int4Linear.from_blocks(QuantBlocks("Q4_1", codes, scales, zeros), torch.randn(rows))

    x = torch.randn(3, 64)
    for rows in ((64, 32), (128, 64, 64)):
        parts = [layer(n) for n in rows]
        assert can_stack(parts)
        assert torch.equal(stacked(parts)(x), torch.cat([p(x) for p in parts], dim=-1))
    assert not can_stack([layer(32), layer(32)]) and not can_stack([layer(96), layer(32)])
    with pytest.raises(ValueError, match=r"^layers of \[32, 32\] rows cannot be stacked$"):
        stacked([layer(32), layer(32)])
