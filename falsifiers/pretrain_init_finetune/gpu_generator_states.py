"""A run saved on GPUs keeps each GPU's generator state, and a resume gives each back to its GPU.

A training checkpoint holds the CPU generator's state and one state per GPU of the machine that
saved it (``rng.cuda.{index}`` in ``train_state.safetensors``); a resume restores them by GPU
index, as many as the resuming machine has GPUs, and none on a machine without CUDA.  No GPU is
needed to read this: torch's three calls that touch the GPUs' generators (``get_rng_state_all``,
``device_count``, ``set_rng_state_all``) are stood in for by a machine of 12 GPUs whose generator
states are distinguishable (GPU i's state is 16 bytes of value i), 12 so that ``rng.cuda.10`` sorts
before ``rng.cuda.2`` as text.  A tiny pretraining run saves under it; the run is then resumed on
12 GPUs, on 3, and on none, each time recording which saved state each GPU was given.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from safetensors.torch import load_file

from engine.config import preset
from engine.data import TokenData
from engine.tokenizer import EngineTokenizer
from engine.train import LATEST_NAME, TrainConfig, pretrain
from engine.train.state import STATE_TENSORS
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

SAVED_ON = 12
STATE_BYTES = 16


def _state(gpu: int) -> torch.Tensor:
    return torch.full((STATE_BYTES,), gpu, dtype=torch.uint8)


@contextmanager
def _machine(gpus: int, restored: list[list[int]]) -> Iterator[None]:
    """torch.cuda as a machine with ``gpus`` GPUs sees it; each restore appends which saved state
    (by its byte value) went to GPU 0, 1, ..."""

    def set_all(states: Any) -> None:
        restored.append([int(s[0]) if torch.equal(s, _state(int(s[0]))) else -1 for s in states])

    with (
        mock.patch.object(torch.cuda, "get_rng_state_all", lambda: [_state(i) for i in range(gpus)]),
        mock.patch.object(torch.cuda, "device_count", lambda: gpus),
        mock.patch.object(torch.cuda, "set_rng_state_all", set_all),
    ):
        yield


@checker(observes=["saved_states", "restored_on_12", "restored_on_3", "restored_on_0", "resumed_steps"],
         ids=["FALSIFY-PINIT-022"])  # fmt: skip
def gpu_generator_states_follow_their_gpu(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path
) -> dict[str, Any]:
    """Pretrain 2 steps (a checkpoint after each) on 12 stood-in GPUs; read the step-1 folder's
    GPU states; resume from it on 12, 3 and 0 GPUs."""

    cfg = TrainConfig(steps=2, batch_size=2, seq_len=16, lr=1e-3, warmup_steps=0, save_every=1, seed=0)
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)
    root = fresh_dir(tmp_path, "gpu-states-")
    saving: list[list[int]] = []
    with _machine(SAVED_ON, saving):
        pretrain(root / "whole", cfg, config=config, tokenizer=engine_tokenizer, data=pretrain_data, device="cpu")
    tensors = load_file(str(root / "whole" / "step-000001" / STATE_TENSORS))
    # which GPU's state each rng.cuda key holds, keys in GPU order
    saved = sorted(
        (int(k.removeprefix("rng.cuda.")), int(v[0])) for k, v in tensors.items() if k.startswith("rng.cuda.")
    )

    out: dict[str, Any] = {"saved_states": [state for _, state in saved], "resumed_steps": []}
    for gpus in (SAVED_ON, 3, 0):
        folder = root / f"resumed-on-{gpus}"
        shutil.copytree(root / "whole" / "step-000001", folder / "step-000001")
        (folder / LATEST_NAME).write_text(json.dumps({"folder": "step-000001", "step": 1}), encoding="utf-8")
        restored: list[list[int]] = []
        with _machine(gpus, restored):
            result = pretrain(
                folder, cfg, config=config, tokenizer=engine_tokenizer, data=pretrain_data, device="cpu", resume=True
            )
        out[f"restored_on_{gpus}"] = restored
        out["resumed_steps"].append(result.start_step)
    return out
