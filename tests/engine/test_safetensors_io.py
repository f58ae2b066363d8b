"""engine.safetensors_io: the same tensors and metadata give the same file bytes."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import torch
from safetensors import safe_open

from engine.safetensors_io import save_tensors, sort_header

TENSORS = {name: torch.arange(6, dtype=torch.float32).reshape(2, 3) + i for i, name in enumerate("zyxwvu")}
METADATA = {key: f"value of {key}" for key in ("format", "split", "step", "architecture", "manifest", "arch")}


def header_keys(path: Path) -> list[str]:
    """The metadata keys, "|", then the header's keys, each in file order."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    return [*header.get("__metadata__", {}), "|", *header]


def test_the_same_content_gives_the_same_bytes(tmp_path: Path) -> None:
    digests = set()
    for i in range(6):  # safetensors alone orders the header differently from one save to the next
        path = tmp_path / f"{i}.safetensors"
        save_tensors(TENSORS, path, METADATA)
        digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
    assert len(digests) == 1
    assert header_keys(path) == [*sorted(METADATA), "|", "__metadata__", *sorted(TENSORS)]
    with safe_open(str(path), "pt") as f:
        assert f.metadata() == METADATA
        assert all(torch.equal(f.get_tensor(k), v) for k, v in TENSORS.items())


def test_a_file_without_metadata_is_sorted_too(tmp_path: Path) -> None:
    path = tmp_path / "plain.safetensors"
    save_tensors(TENSORS, path)
    assert header_keys(path)[0] == "|" and sort_header(path)
