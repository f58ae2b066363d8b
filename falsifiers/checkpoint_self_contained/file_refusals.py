"""What ``load_checkpoint`` says of a file that is not a safetensors checkpoint, or not one it can read.

A safetensors file is an 8-byte little-endian header length, that many bytes of JSON (a tensor
table and an optional ``__metadata__`` map of strings) and the tensors' bytes.  The engine reads
the first bytes itself, so that a pickle is never handed to a loader, and refuses what it finds
with a ``CheckpointError`` that begins with the path as given and says what the file is: a missing
path, a folder, a zip archive, a pickle of any protocol torch.save and pickle write (2 to 5), a
GGUF file, fewer than 8 bytes, a declared length past safetensors' own limit (one with the top bit
set included: the length is unsigned), a header longer than the file, a header that is not JSON or
not an object, metadata that is not strings, a tensor entry without its fields, a tensor that
ends past the data, and offsets safetensors' own reader refuses (its words quoted).  A header that
fills the file to its last byte is no truncation: it is read, and the refusal that follows is of
its keys.  The files are written here byte by byte.
"""

from __future__ import annotations

import functools
import io
import json
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

from safetensors import safe_open

from engine.checkpoint import load_checkpoint, read_header, save_checkpoint
from engine.errors import CheckpointError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

MAX_HEADER = 100_000_000  # safetensors' limit on the JSON header, in bytes
NOT_A_CHECKPOINT = "not a safetensors checkpoint"
NOT_STRINGS = "safetensors metadata is not a string-to-string map"


def _safetensors(header: object, data: bytes = b"", declared: int | None = None) -> bytes:
    """A file laid out as safetensors lays one out: the header's length (``declared`` when given),
    the header (JSON unless already bytes) and ``data``."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if declared is None else declared) + raw + data


def _safetensors_refusal(path: Path) -> str:
    """What safetensors' own reader says of ``path``'s tensors."""

    try:
        with safe_open(str(path), framework="pt") as fh:
            for name in fh.keys():  # noqa: SIM118 -- safe_open has no __iter__
                fh.get_tensor(name)
    except Exception as exc:  # safetensors' SafetensorError, whatever its module
        return str(exc)
    return "(read)"


def _table(data: bytes) -> tuple[dict[str, tuple[str, tuple[int, ...], tuple[int, int]]], dict[str, str]]:
    """A safetensors file's tensor table and metadata, parsed here from its bytes as the format lays
    them out (the reference ``read_header`` is held to)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    table = {
        k: (v["dtype"], tuple(v["shape"]), (v["data_offsets"][0], v["data_offsets"][1])) for k, v in header.items()
    }
    return table, meta


@checker(observes=["refusals", "refusals_differing", "tensors_read", "table_differing"], ids=["FALSIFY-CKPT-013"])
def file_refusals_named(engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, tmp_path: Path) -> dict[str, Any]:
    """load_checkpoint of each file below, each refusal read word for word; the tiny preset's
    checkpoint is cut one byte short of its header's end.  ``table_*``: read_header of the whole
    checkpoint gives each tensor's dtype, shape and data offsets, and the metadata, as its bytes
    say (the names of what differs)."""

    work = fresh_dir(tmp_path, "file-refusals-")
    good = save_checkpoint(work / "good.safetensors", tiny_model_factory(0), engine_tokenizer).read_bytes()
    (n,) = struct.unpack("<Q", good[:8])
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"w": 1}))
    top_bit = 2**63 + 5
    files: list[tuple[str, bytes, str]] = [
        ("zip", zipped.getvalue(), f"a zip archive (a torch.save/pickle file?), {NOT_A_CHECKPOINT}"),
        *(
            (
                f"pickle-{protocol}",
                pickle.dumps({"w": 1}, protocol=protocol),
                f"a Python pickle, {NOT_A_CHECKPOINT}; pickles are never loaded",
            )
            for protocol in (2, 3, 4, 5)
        ),
        ("gguf", b"GGUF" + bytes(60), f"a GGUF file, {NOT_A_CHECKPOINT}"),
        ("five-bytes", b"12345", "truncated (5 bytes; a safetensors file starts with an 8-byte length)"),
        (
            "top-bit",
            _safetensors({}, declared=top_bit),
            f"not a safetensors file (declared header length {top_bit} is implausible)",
        ),
        (
            "past-limit",
            _safetensors({}, declared=MAX_HEADER + 1),
            f"not a safetensors file (declared header length {MAX_HEADER + 1} is implausible)",
        ),
        (
            "at-limit",
            _safetensors({}, declared=MAX_HEADER),
            f"truncated: header declares {MAX_HEADER} bytes but the file has only 2 after it",
        ),
        (
            "cut-header",
            good[: 8 + n - 1],
            f"truncated: header declares {n} bytes but the file has only {n - 1} after it",
        ),
        ("not-utf8", _safetensors(b"\xff\xfe{}"), "not a safetensors file (its header is not JSON)"),
        ("not-json", _safetensors(b"{not json"), "not a safetensors file (its header is not JSON)"),
        ("json-list", _safetensors([1]), "not a safetensors file (its header is not a JSON object)"),
        (
            "meta-number",
            _safetensors({"__metadata__": {"format": 1}}),
            NOT_STRINGS,
        ),
        ("meta-list", _safetensors({"__metadata__": ["format"]}), NOT_STRINGS),
        ("entry-fields", _safetensors({"t": {"dtype": "F32"}}), "corrupt header entry for tensor `t`"),
        (
            "entry-shape",
            _safetensors({"t": {"dtype": "F32", "shape": ["two"], "data_offsets": [0, 8]}}, bytes(8)),
            "corrupt header entry for tensor `t`",
        ),
        (
            "past-data",
            _safetensors({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(4)),
            "truncated: tensor `t` ends at byte 8 of the data but the file holds 4",
        ),
    ]
    cases = [(work / "absent.safetensors", f"{work / 'absent.safetensors'}: no such checkpoint file")]
    (work / "folder.safetensors").mkdir()
    cases.append((work / "folder.safetensors", f"{work / 'folder.safetensors'}: not a file"))
    for label, data, message in files:
        path = work / f"{label}.safetensors"
        path.write_bytes(data)
        cases.append((path, f"{path}: {message}"))
    # A header that ends on the file's last byte is whole: what is refused is that it has no format.
    (work / "header-only.safetensors").write_bytes(_safetensors({"__metadata__": {"a": "b"}}))
    cases.append((work / "header-only.safetensors", "missing metadata key `format`: not a pv engine checkpoint"))
    # A header the engine's checks pass whose offsets safetensors refuses: its own words are quoted.
    header = json.loads(good[8 : 8 + n])
    start, end = header["model.norm.weight"]["data_offsets"]
    header["model.norm.weight"]["data_offsets"] = [start, end - 4]
    short = work / "short-offsets.safetensors"
    short.write_bytes(_safetensors(header, good[8 + n :]))
    cases.append((short, f"{short}: cannot read tensors: {_safetensors_refusal(short)}"))
    differing = refusals_differing(
        (functools.partial(load_checkpoint, path), CheckpointError, message) for path, message in cases
    )
    table, meta = _table(good)
    tensors, read_meta = read_header(work / "good.safetensors")
    got = {k: (t.dtype, t.shape, t.offsets) for k, t in tensors.items()}
    table_differing = sorted(k for k in table.keys() | got.keys() if table.get(k) != got.get(k))
    table_differing += ["__metadata__"] if read_meta != meta else []
    return {
        "refusals": len(cases),
        "refusals_differing": differing,
        "tensors_read": len(got),
        "table_differing": table_differing,
    }
