"""What ``save_checkpoint`` refuses, word for word, and that a refused save leaves no file.

Two models cannot be saved.  One whose vocabulary is smaller than its tokenizer's: ids the
tokenizer gives would index past the embedding.  One whose tensors mix dtypes: a checkpoint holds
one, and ``load_checkpoint`` refuses a file that mixes them.  Each refusal is a ``CheckpointError``
that names its cause: the two sizes, or every dtype the model holds, sorted and named as torch
names them without its ``torch.`` prefix, with ", " between.  The messages are written out here
from that rule, not copied from the engine's output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import save_checkpoint
from engine.errors import CheckpointError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _mixed(tiny_model_factory: Callable[..., Any], dtypes: list[torch.dtype]) -> Any:
    """The tiny model in ``dtypes[0]``, its first layer's input norm in ``dtypes[1]`` and its final
    norm in ``dtypes[2]`` (where given): a norm kept in float32 after ``model.to(bfloat16)``."""
    model = tiny_model_factory(0).to(dtypes[0])
    model.model.layers[0].input_layernorm.to(dtypes[1])
    if len(dtypes) > 2:
        model.model.norm.to(dtypes[2])
    return model


@checker(observes=["refusals_differing", "files_left", "refusals"], ids=["FALSIFY-CKPT-010"])
def save_refusals_named(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """save_checkpoint of the tiny preset with one token fewer than the tokenizer, and of the tiny
    preset with two and with three dtypes mixed, each into its own path of an empty folder."""

    work = fresh_dir(tmp_path, "save-refusals-")
    vocab = engine_tokenizer.vocab_size
    small = tiny_model_factory(0, vocab_size=vocab - 1)
    two = _mixed(tiny_model_factory, [torch.bfloat16, torch.float32])
    three = _mixed(tiny_model_factory, [torch.float32, torch.bfloat16, torch.float16])
    cases = [
        (small, f"tokenizer has {vocab} tokens but the model's vocab_size is {vocab - 1}"),
        (two, "the model's tensors mix dtypes bfloat16, float32; a checkpoint holds one: cast the model first"),
        (
            three,
            "the model's tensors mix dtypes bfloat16, float16, float32; a checkpoint holds one: cast the model first",
        ),
    ]
    differing = refusals_differing(
        (
            functools.partial(save_checkpoint, work / f"refused-{i}.safetensors", model, engine_tokenizer),
            CheckpointError,
            message,
        )
        for i, (model, message) in enumerate(cases)
    )
    return {
        "refusals": len(cases),
        "refusals_differing": differing,
        "files_left": sorted(p.name for p in work.iterdir()),
    }
