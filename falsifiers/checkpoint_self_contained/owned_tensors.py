"""A loaded checkpoint's tensors live in memory of their own, not in a mapping of the file.

safetensors' default reader maps the whole file and hands out tensors that are views into that
mapping: while any of them lives, every page of the file stays resident, so quantizing a loaded
base to NF4 frees nothing.  ``load_state`` (and ``load_checkpoint``, which reads through it) must
give each tensor memory of its own: no tensor's bytes may lie inside a mapping of the checkpoint
file, and once the tensors are returned the process maps the file nowhere.  The mappings are read
from Linux's ``/proc/self/maps`` (the kernel's own account of the process's address space), so the
claim is judged on Linux and skipped elsewhere.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

import engine.checkpoint
from engine.checkpoint import load_checkpoint, load_state, save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker
from pv.outcomes import skip

MAPS = Path("/proc/self/maps")


def _mapped(path: Path) -> list[tuple[int, int]]:
    """The address ranges the kernel says this process maps from ``path`` (by device and inode)."""
    st = os.stat(path)
    ranges = []
    for line in MAPS.read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or int(fields[4]) != st.st_ino:
            continue
        major, minor = (int(x, 16) for x in fields[3].split(":"))
        if os.makedev(major, minor) != st.st_dev:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        ranges.append((start, end))
    return ranges


def _in_mapping(tensors: dict[str, torch.Tensor], ranges: list[tuple[int, int]]) -> list[str]:
    return sorted(n for n, t in tensors.items() if any(lo <= t.untyped_storage().data_ptr() < hi for lo, hi in ranges))


@contextlib.contextmanager
def _safetensors_before_0_8() -> Iterator[None]:
    """``safe_open`` where engine.checkpoint looks it up, as safetensors before 0.8 has it: no
    ``backend`` keyword (a TypeError for any keyword it does not know), every tensor a view into
    the file's mapping."""

    real = engine.checkpoint.safe_open

    def before_0_8(filename: str, framework: str, device: str = "cpu", **unknown: Any) -> Any:
        if unknown:
            raise TypeError(f"safe_open() got an unexpected keyword argument '{next(iter(unknown))}'")
        return real(filename, framework=framework, device=device)

    setattr(engine.checkpoint, "safe_open", before_0_8)  # noqa: B010 -- a class cannot be assigned a function
    try:
        yield
    finally:
        setattr(engine.checkpoint, "safe_open", real)  # noqa: B010


@checker(
    observes=["loads", "tensors_in_mapping", "file_still_mapped", "values_differing", "reference_mapped"],
    ids=["FALSIFY-CKPT-015"],
)
def tensors_own_their_memory(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """load_state and load_checkpoint of the tiny preset's checkpoint, with the safetensors
    installed and with ``safe_open`` as safetensors before 0.8 has it: the tensors whose storage
    starts inside a mapping of the file (``tensors_in_mapping``, names), how many of the loads
    leave the file mapped once their tensors are returned (``file_still_mapped``) and the tensors
    that differ from safetensors' own load_file (``values_differing``).  ``reference_mapped``:
    safetensors' default reader, held open, maps the file (1), so that an empty answer above is
    the engine's and not a blind reading."""
    if not MAPS.is_file():
        skip("the process's mappings are read from /proc/self/maps, which this system lacks")

    work = fresh_dir(tmp_path, "owned-tensors-")
    path = save_checkpoint(work / "model.safetensors", tiny_model_factory(0), engine_tokenizer)
    with safe_open(str(path), framework="pt", device="cpu") as fh:
        view = fh.get_tensor(next(iter(fh.keys())))
        reference_mapped = int(bool(_in_mapping({"view": view}, _mapped(path))))
    del view
    gc.collect()
    want = {k: v.clone() for k, v in load_file(str(path)).items()}  # copies: load_file's own views map the file
    gc.collect()
    out: dict[str, Any] = {"loads": 0, "tensors_in_mapping": [], "file_still_mapped": 0, "values_differing": []}
    loads: dict[str, Callable[[], dict[str, torch.Tensor]]] = {
        "load_state": lambda: load_state(path),
        "load_checkpoint": lambda: dict(load_checkpoint(path).model.state_dict()),
    }
    runs = [(label, load, False) for label, load in loads.items()]
    runs += [(f"{label} (safetensors < 0.8)", load, True) for label, load in loads.items()]
    for label, load, before_0_8 in runs:
        with _safetensors_before_0_8() if before_0_8 else contextlib.nullcontext():
            state = load()  # one load alive at a time, so that a mapping left is this one's
        gc.collect()
        ranges = _mapped(path)
        out["loads"] += 1
        out["file_still_mapped"] += bool(ranges)
        out["tensors_in_mapping"] += [f"{label}: {n}" for n in _in_mapping(state, ranges)]
        out["values_differing"] += [
            f"{label}: {n}" for n, t in want.items() if n not in state or not torch.equal(state[n], t)
        ]
        del state
    return out | {"reference_mapped": reference_mapped}
