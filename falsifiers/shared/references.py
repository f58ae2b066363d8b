"""The independent readers of a real model's GGUF file that the real-model checkers compare the
engine with: transformers' float32 copy and llama.cpp.  Neither is under test and no fault
reaches them; each checker loads its own (a forked checker cannot share a parent's), from the
file the model list pins (:mod:`falsifiers.shared.real_models`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def transformers_copy(path: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)``: transformers' float32 reading of the GGUF at ``path``, in eval mode."""
    # transformers is a reference: it loads only for the real-model contracts
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    ).eval()
    return model, tokenizer


def llama_cpp_copy(path: Path, n_ctx: int = 512) -> Any:
    """llama.cpp's reading of the GGUF at ``path``, the logits of every position kept."""
    # optional: llama-cpp-python is installed for the real-model contracts only
    import llama_cpp

    return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, logits_all=True, verbose=False, n_threads=2, seed=0)
