"""The optional native kernel for Q4_0, Q4_1 and Q8_0 blocks (engine/native_blocks.cpp), and which
kernel a quantized layer runs.

torch's int kernels (``_weight_int4pack_mm_for_cpu``, ``_weight_int8pack_mm``) are fast where the
CPU has AVX-512 and not within 2x of llama.cpp on an AVX2-only one (3 GB/s of 4-bit weights on an
AVX2 EPYC, where llama.cpp decodes the same file at twice the engine's speed).  The native kernel
reads the file's blocks where they lie and multiplies them in integers against each input row
rounded to int16 per block, so it is also closer to the dequantized matrix than the bfloat16
activations torch's kernels take (see the .cpp file for the arithmetic).

It is built with ``torch.utils.cpp_extension`` on first use (about 30 s; kept in torch's extension
cache, ``TORCH_EXTENSIONS_DIR``, for later processes) and used only where it loads: no compiler, a
CPU without AVX2 or a failed build leave every layer on torch's kernels, and :func:`kernel_status`
says why.  ``ENGINE_BLOCK_KERNEL`` chooses: ``auto`` (the default: native where it loads),
``torch`` (never build it) or ``native`` (fail with the reason where it does not load).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import torch

from engine.errors import BlocksError
from engine.faults import FAULTS

SOURCE = Path(__file__).with_name("native_blocks.cpp")
KINDS = {"Q4_0": 0, "Q4_1": 1, "Q8_0": 2}  # the block kinds the native kernel reads, as it numbers them
ENV = "ENGINE_BLOCK_KERNEL"
CHOICES = ("auto", "torch", "native")
LAYER = "layer"  # what _DEFECTS names for the decoder layer's own faults, beside the block kinds
# the engine's planted faults that reach the native path too, as the kernel's defect bits, with what
# they break: the matrices of these block kinds, or the decoder layer itself
_DEFECTS = {
    "q4_block_halves_swapped": (1, ("Q4_0", "Q4_1")),
    "q4_1_zero_off_by_8": (2, ("Q4_1",)),
    "q8_block_scales_shifted": (4, ("Q8_0",)),
    "q4_scales_transposed": (8, ("Q4_0", "Q4_1")),
    "native_decode_key_unrotated": (16, (LAYER,)),
}

BlockMatmul = Callable[[torch.Tensor, torch.Tensor, int, int], torch.Tensor]
DecodeLayer = Callable[..., torch.Tensor]  # engine_blocks::decode_layer (see the .cpp file for its arguments)


@dataclass(frozen=True)
class KernelStatus:
    """Which kernel quantized layers of the native kinds run, and why."""

    kernel: Literal["native", "torch"]
    reason: str


_FORCED: list[str] = []  # what :func:`forced` holds, innermost last


@contextmanager
def forced(kernel: str) -> Iterator[None]:
    """Within the block, quantized layers choose as if ``ENGINE_BLOCK_KERNEL`` were ``kernel``
    (a claim about one kernel states which one it measures, whatever the environment says)."""
    if kernel not in CHOICES:
        raise BlocksError(f"{kernel!r} is not a kernel choice; use one of {', '.join(CHOICES)}")
    _FORCED.append(kernel)
    try:
        yield
    finally:
        _FORCED.pop()


def choice() -> str:
    """The kernel choice in force: :func:`forced`'s, else ``ENGINE_BLOCK_KERNEL`` as set, checked."""
    if _FORCED:
        return _FORCED[-1]
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise BlocksError(f"{ENV}={value!r} is not a kernel choice; use one of {', '.join(CHOICES)}")
    return value


@cache
def _build() -> BlockMatmul | str:
    """The loaded kernel, or why it could not be loaded (computed once per process)."""
    capability = torch.backends.cpu.get_cpu_capability()
    if not capability.startswith(("AVX2", "AVX512")):
        return f"this CPU's vector capability is {capability}; the native kernel needs AVX2"
    # named for its source and torch's version, so an edited kernel is never served from torch's
    # extension cache, and two torch versions sharing that cache do not rebuild it in turn
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    version = re.sub(r"[^0-9A-Za-z]+", "_", torch.__version__)
    # loaded here only: building needs a compiler, and the torch kernels need none of it
    from torch.utils.cpp_extension import _get_build_directory, load

    name = f"engine_blocks_{digest}_torch_{version}"
    try:
        built = (Path(_get_build_directory(name, verbose=False)) / f"{name}.so").exists()
    except OSError as exc:
        return f"its build folder cannot be made ({exc})"
    _ninja_on_path()
    if not built:
        print("engine: building the native block kernel (once; about 30 s)", file=sys.stderr, flush=True)
    try:
        load(
            name=name,
            sources=[str(SOURCE)],
            # -fopenmp: at::parallel_for runs its chunks on torch's OpenMP threads only when the
            # extension is compiled with OpenMP (else it runs them one after another)
            extra_cflags=["-O3", "-mavx2", "-mfma", "-mf16c", "-fopenmp"],
            extra_ldflags=["-fopenmp"],
            is_python_module=False,
            verbose=False,
        )
    except (OSError, RuntimeError, ImportError, SystemExit) as exc:  # a missing compiler or ninja, a failed build
        return (
            f"it did not build ({type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc})"
        )
    op: BlockMatmul = torch.ops.engine_blocks.block_matmul
    return op


def _ninja_on_path() -> None:
    """Put the ``ninja`` package's binary (the engine extra installs it) on PATH for torch's build,
    which runs ``ninja`` by name: a venv's scripts are not on PATH when its python runs unactivated."""
    if shutil.which("ninja") is not None:
        return
    try:
        # optional: a system ninja serves as well, and without either the build fails with its reason
        import ninja
    except ImportError:
        return
    os.environ["PATH"] = os.pathsep.join([ninja.BIN_DIR, os.environ.get("PATH", "")])


def kernel_status() -> KernelStatus:
    """Which kernel runs the Q4_0, Q4_1 and Q8_0 layers in this process, and why."""
    wanted = choice()
    if wanted == "torch":
        return KernelStatus("torch", f"{ENV}=torch")
    built = _build()
    if isinstance(built, str):
        if wanted == "native":
            raise BlocksError(f"{ENV}=native, but the native block kernel is not available: {built}")
        return KernelStatus("torch", f"the native block kernel is not available: {built}")
    return KernelStatus("native", "built for this CPU" if wanted == "auto" else f"{ENV}=native")


def native_kernel(kind: str) -> BlockMatmul | None:
    """The native kernel where it runs ``kind`` blocks in this process, else None (torch's kernels)."""
    if kind not in KINDS:
        return None
    # a decode step asks once per layer: the choice in force is read each time (an environment or
    # forced() change takes effect at once), what it resolves to once per choice
    wanted = _FORCED[-1] if _FORCED else os.environ.get(ENV, "auto")
    resolved = _RESOLVED.get(wanted)
    if resolved is None:
        built = _build() if kernel_status().kernel == "native" else None
        resolved = _RESOLVED[wanted] = (None if isinstance(built, str) else built,)
    return resolved[0]


_RESOLVED: dict[str, tuple[BlockMatmul | None]] = {}  # what native_kernel's choice resolved to


_SEPARATE: list[bool] = []  # what :func:`separate_calls` holds
DECODE_LAYER_CALLS = [0]  # decoder layers run as one native call in this process (a claim counts them)


@contextmanager
def separate_calls() -> Iterator[None]:
    """Within the block, a decode step runs each layer as its separate calls (norms, the block
    kernel per matrix, torch's attention), never as :func:`decode_layer`'s one: its reference."""
    _SEPARATE.append(True)
    try:
        yield
    finally:
        _SEPARATE.pop()


def decode_layer() -> DecodeLayer | None:
    """The native kernel's whole decoder layer for one token of one sequence, where the native
    kernel runs (:func:`native_kernel`) and :func:`separate_calls` is not in force, else None."""
    if _SEPARATE or native_kernel("Q4_0") is None:
        return None
    step: DecodeLayer = torch.ops.engine_blocks.decode_layer
    return step


def layer_defects() -> int:
    """The decoder layer's defect bits of the planted faults active now."""
    return defects(LAYER)


def defects(kind: str) -> int:
    """The kernel's defect bits of the engine's planted faults active now for ``kind`` blocks
    (or for the decoder layer itself, :data:`LAYER`)."""
    if not FAULTS.active_names():  # the common case, decided in one call
        return 0
    return sum(bit for name, (bit, kinds) in _DEFECTS.items() if kind in kinds and FAULTS.active(name))
