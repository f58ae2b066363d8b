"""Which device a run uses: the one asked for, ``$PV_DEVICE``, or the first torch offers, and a
device the machine lacks refused by name; where NF4 work runs for each.

The expected device is worked out here from torch's own availability flags
(``torch.cuda.is_available``, ``torch.cuda.device_count``, ``torch.backends.mps.is_available``,
``torch.xpu.is_available``), so the same falsifier holds on a CPU-only machine, a CUDA machine and
a Mac: on each, every request must give the device those flags allow or a ``DeviceError`` naming
where the request came from (the argument or ``PV_DEVICE``) and what is missing.  ``nf4_device``
is pure: CUDA, CPU and meta stay, MPS and XPU fall back to the CPU with a warning naming them.
A command given a device the machine lacks exits 2 naming it, as any other bad input.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import make_manifest, save_checkpoint
from engine.device import DeviceError, nf4_device, resolve_device
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

ENV = "PV_DEVICE"


@contextmanager
def _env(value: str | None) -> Iterator[None]:
    before = os.environ.get(ENV)
    if value is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def _flags() -> dict[str, Any]:
    mps = getattr(torch.backends, "mps", None)
    xpu = getattr(torch, "xpu", None)
    return {
        "cuda": torch.cuda.is_available(),
        "cuda_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "mps": bool(mps is not None and mps.is_available()),
        "xpu": bool(xpu is not None and xpu.is_available()),
    }


def _cases(f: dict[str, Any]) -> list[tuple[str, Any, str | None, Any]]:
    """(case, argument, PV_DEVICE, expected): a device string, or ("refused", words the error holds)."""
    auto = "cuda" if f["cuda"] else "xpu" if f["xpu"] else "mps" if f["mps"] else "cpu"
    too_far = f"cuda:{f['cuda_count']}"
    cuda_missing = ("refused", ["no CUDA device"])
    return [
        ("nothing asked", None, None, auto),
        ("auto", "auto", None, auto),
        ("empty", "", None, auto),
        ("cpu", "cpu", None, "cpu"),
        ("a torch.device", torch.device("cpu"), None, "cpu"),
        ("meta", "meta", None, "meta"),
        ("PV_DEVICE cpu", None, "cpu", "cpu"),
        ("PV_DEVICE auto", None, "auto", auto),
        ("PV_DEVICE with spaces", None, "  cpu  ", "cpu"),
        ("the argument over PV_DEVICE", "cpu", "nonsense", "cpu"),
        ("auto over PV_DEVICE", "auto", "cpu", "cpu"),
        ("PV_DEVICE not a device", None, "nonsense", ("refused", [ENV, "'nonsense'", "not a device name"])),
        ("not a device", "gpu0", None, ("refused", ["argument", "'gpu0'", "not a device name"])),
        ("unsupported type", "hpu", None, ("refused", ["argument", "'hpu'", "not supported"])),
        ("cuda", "cuda", None, "cuda" if f["cuda"] else cuda_missing),
        ("cuda past the last", too_far, None,
         ("refused", [too_far, f"only {f['cuda_count']} CUDA"]) if f["cuda"] else cuda_missing),
        ("PV_DEVICE cuda", None, "cuda", "cuda" if f["cuda"] else ("refused", [ENV, "no CUDA device"])),
        ("mps", "mps", None, "mps" if f["mps"] else ("refused", ["argument", "no MPS backend"])),
        ("xpu:0", "xpu:0", None, "xpu:0" if f["xpu"] else ("refused", ["argument", "xpu:0", "no XPU device"])),
    ]  # fmt: skip


@checker(
    observes=["machine", "cases", "as_expected", "differing", "nf4_cases", "nf4_as_expected", "cli_refused_cleanly"],
    ids=["FALSIFY-DEVICE-005"],
)
def device_choice(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """resolve_device for 19 requests against torch's availability flags, nf4_device for six
    devices, and ``generate --device`` with a CUDA device this machine does not have."""

    flags = _flags()
    cases = _cases(flags)
    differing: list[str] = []
    for case, arg, env, want in cases:
        with _env(env):
            try:
                got: Any = str(resolve_device(arg))
            except DeviceError as exc:
                got = ("refused", str(exc))
            except Exception as exc:  # anything else is not a clean refusal
                got = ("raised", type(exc).__name__)
        if isinstance(want, str):
            ok = got == want
        else:
            ok = isinstance(got, tuple) and got[0] == "refused" and all(w in got[1] for w in want[1])
        if not ok:
            differing.append(f"{case}: {got!r}")
    nf4_want: dict[str, tuple[str, str | None]] = {
        "cpu": ("cpu", None),
        "cuda": ("cuda", None),
        "cuda:1": ("cuda:1", None),
        "meta": ("meta", None),
    }
    nf4_want |= {"mps": ("cpu", "mps"), "xpu:0": ("cpu", "xpu")}
    nf4_ok = 0
    for name, (device, warned_of) in nf4_want.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got_device = nf4_device(torch.device(name))
        runtime = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        warned = (len(runtime) == 1 and warned_of in runtime[0]) if warned_of else not runtime
        nf4_ok += str(got_device) == device and warned
    work = fresh_dir(tmp_path, "device-")
    ckpt = save_checkpoint(work / "model.safetensors", tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    missing = f"cuda:{flags['cuda_count']}"
    result = cli_runner()("generate", ckpt, "-p", "x", "--max-new-tokens", 1, "--device", missing)
    return {
        "machine": ", ".join(k for k in ("cuda", "xpu", "mps") if flags[k]) or "cpu only",
        "cases": len(cases),
        "as_expected": len(cases) - len(differing),
        "differing": differing,
        "nf4_cases": len(nf4_want),
        "nf4_as_expected": nf4_ok,
        "cli_refused_cleanly": refused_cleanly(result, [missing]),
    }
