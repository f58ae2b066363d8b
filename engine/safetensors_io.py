"""safetensors files whose bytes depend only on what they hold.

safetensors serialises its header from a hash map, so the metadata keys (and tensor entries) of
two saves of the same tensors come out in different orders: the same checkpoint written twice had
two sha256s.  The engine names files by their digest (an adapter's ``sha256``, a merge's
``adapter_sha256``, qa's report), so every safetensors file it writes goes through
:func:`save_tensors`, which puts the header's keys in sorted order in place (same length: only the
order changes).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from engine.faults import FAULTS

METADATA_KEY = "__metadata__"


def sort_header(path: str | Path) -> bool:
    """Rewrite ``path``'s header with its keys sorted (metadata first); False if it could not be
    done without changing the header's length (the file is then left as it was)."""
    with open(path, "r+b") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        raw = fh.read(size)
        text = raw.rstrip(b" ")
        header: dict[str, Any] = json.loads(text)
        ordered: dict[str, Any] = {}
        if METADATA_KEY in header:
            ordered[METADATA_KEY] = dict(sorted(header[METADATA_KEY].items()))
        ordered |= {k: header[k] for k in sorted(header) if k != METADATA_KEY}
        new = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(new) != len(text):
            return False
        if new != text:
            fh.seek(8)
            fh.write(new)
    return True


def save_tensors(
    tensors: Mapping[str, torch.Tensor], path: str | Path, metadata: Mapping[str, str] | None = None
) -> None:
    """``safetensors.torch.save_file`` with the header in sorted order (see the module)."""
    save_file(dict(tensors), str(path), metadata=dict(metadata) if metadata is not None else None)
    if FAULTS.active("safetensors_header_unsorted"):  # pragma: no mutate
        return  # pragma: no mutate -- the defect: the header keeps safetensors' hash-map order
    sort_header(path)
