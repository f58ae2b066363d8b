"""Every safetensors file the engine writes: safetensors' own bytes, its header's keys sorted in place.

safetensors writes its header's keys in hash-map order, so two saves of the same tensors differ
and a digest of the file names nothing.  ``engine.safetensors_io.save_tensors`` writes with
safetensors' ``save_file`` and then ``sort_header`` rewrites the header in place: the metadata
first, its keys sorted, then the tensor entries sorted, compact JSON of the same length, so the
file is ``save_file``'s file with only the header's order changed.  ``sort_header`` on a header
whose sorted compact form has another length (one written with spaces after the separators, by
any other writer) leaves the file's bytes alone and says so by returning False.  The layout
(8-byte little-endian length, JSON, data) is parsed here from the bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from engine.safetensors_io import save_tensors, sort_header
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

META = "__metadata__"
# keys in reverse order, and a value outside ASCII (safetensors writes it as UTF-8, unescaped)
TENSORS = {name: torch.arange(6, dtype=torch.float32).reshape(2, 3) + i for i, name in enumerate("zyxwvu")}
METADATA = {"step": "7", "format": "pv", "note": "café ünïcode", "architecture": "llama"}


def _parts(data: bytes) -> tuple[int, list[str], list[str], bytes, bytes]:
    """Declared header length, metadata keys and header keys in file order, the header's bytes
    without padding, and the data after the header."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    return n, list(header.get(META, {})), list(header), data[8 : 8 + n].rstrip(b" "), data[8 + n :]


@checker(
    observes=["files", "unsorted", "not_safetensors_own", "sorted_reports", "spaced_left_alone"],
    ids=["FALSIFY-IO-021"],
)
def headers_sorted_in_place(tmp_path: Path) -> dict[str, Any]:
    """save_tensors of ``TENSORS`` and ``METADATA`` with and without the metadata against
    safetensors' own save_file of the same: the keys' order (metadata first, each sorted), the
    declared length, the compact JSON's entries and the data must match save_file's, and
    safetensors must read back the same tensors and metadata (``not_safetensors_own`` counts what
    differs).  ``sorted_reports``: sort_header returns True on save_file's own file, and again on
    it once sorted, leaving the second's bytes alone.  ``spaced_left_alone``: a header written
    with json.dumps' default separators returns False and keeps every byte."""

    work = fresh_dir(tmp_path, "sorted-header-")
    out = {"files": 0, "unsorted": 0, "not_safetensors_own": 0, "sorted_reports": 0, "spaced_left_alone": 0}
    for label, metadata in (("with-metadata", METADATA), ("plain", None)):
        ours, theirs = work / f"{label}.safetensors", work / f"{label}-own.safetensors"
        save_tensors(TENSORS, ours, metadata)
        save_file(TENSORS, str(theirs), metadata=metadata)
        out["files"] += 1
        n, meta_keys, keys, text, data = _parts(ours.read_bytes())
        own_n, _, own_keys, own_text, own_data = _parts(theirs.read_bytes())
        want = [META, *sorted(TENSORS)] if metadata else sorted(TENSORS)
        out["unsorted"] += (meta_keys, keys) != (sorted(metadata or {}), want)
        out["not_safetensors_own"] += (n, len(text), data, sorted(own_keys)) != (own_n, len(own_text), own_data, keys)
        out["not_safetensors_own"] += json.loads(text) != json.loads(own_text)
        with safe_open(str(ours), "pt") as f:
            out["not_safetensors_own"] += (f.metadata() or None) != metadata
            out["not_safetensors_own"] += sorted(f.keys()) != sorted(TENSORS)
            out["not_safetensors_own"] += not all(torch.equal(f.get_tensor(k), v) for k, v in TENSORS.items())
        first = sort_header(theirs)
        once = theirs.read_bytes()
        out["sorted_reports"] += first is True and once == ours.read_bytes()
        out["sorted_reports"] += sort_header(theirs) is True and theirs.read_bytes() == once
    spaced = work / "spaced.safetensors"
    header = json.dumps({"b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, META: {"z": "1", "a": "2"}})
    raw = header.encode() + b" " * (-len(header) % 8)
    spaced.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    before = spaced.read_bytes()
    out["spaced_left_alone"] = int(sort_header(spaced) is False and spaced.read_bytes() == before)
    return out
