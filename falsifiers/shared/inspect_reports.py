"""What ``inspect --json`` must report, written out from a file's own bytes: sha256 digests,
safetensors headers and tensors, an adapter's report, and the count of fields that differ."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _header(path: Path) -> tuple[dict[str, str], dict[str, tuple[int, ...]], set[str]]:

    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata() or {})
        shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (no __iter__)
        dtypes = {str(f.get_slice(k).get_dtype()) for k in f.keys()}  # noqa: SIM118
    return meta, shapes, dtypes


def adapter_report(folder: Path, **run: Any) -> dict[str, Any]:
    """Every field ``inspect --json`` reports for the adapter in ``folder``, written out from its
    files (adapter_config.json, the weights' header read by safetensors, hashlib's sha256) and
    ``run``: the facts of the run that trained it (method, base, base_weights_sha256, step, nf4)."""
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    _, shapes, _ = _header(folder / "adapter_model.safetensors")
    return {
        "path": str(folder),
        "kind": "adapter",
        **run,
        "peft_type": config["peft_type"],
        "r": config["r"],
        "lora_alpha": config["lora_alpha"],
        "lora_dropout": config["lora_dropout"],
        "target_modules": sorted(config["target_modules"]),
        "tensors": len(shapes),
        "parameters": sum(int(np.prod(s)) for s in shapes.values()),
        "sha256": _sha256(folder / "adapter_model.safetensors"),
    }


def fields_differing(got: dict[str, Any], want: dict[str, Any]) -> int:
    """Fields of ``want`` that ``got`` lacks or holds another value for, plus fields only ``got`` has."""
    return sum(got.get(k, "<missing>") != v for k, v in want.items()) + len(set(got) - set(want))


def _tensors(path: Path) -> dict[str, torch.Tensor]:

    with safe_open(str(path), "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not a mapping)
