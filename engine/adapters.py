"""Adapter folders end to end: what ``finetune --method lora|qlora`` writes, used by the other commands.

A LoRA or QLoRA run writes ``<run>/step-NNNNNN/adapter/`` (PEFT's ``adapter_config.json`` and
``adapter_model.safetensors``) with ``manifest.json`` beside it naming the method and the base.
Every command that takes an adapter accepts the run folder (its latest step), a step folder, or
the adapter folder itself.  A QLoRA adapter was trained on the NF4-quantized base, so it is
applied to the base quantized the same way unless the caller says otherwise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import safe_open

from engine.checkpoint import LoadedCheckpoint, load_checkpoint, save_checkpoint, weights_digest
from engine.device import nf4_device
from engine.errors import EngineError
from engine.faults import FAULTS
from engine.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS, load_adapter, merge_adapter
from engine.model import DecoderLM
from engine.quant import NF4Config, quantize_model
from engine.train import LATEST_NAME, STATE_JSON, latest_checkpoint

if TYPE_CHECKING:
    from peft import PeftModel

ADAPTER_DIR = "adapter"
MANIFEST = "manifest.json"


class AdapterError(EngineError):
    """A path that holds no adapter, or an adapter that does not fit its base."""


@dataclass(frozen=True)
class AdapterFolder:
    path: Path  # the folder with adapter_config.json and adapter_model.safetensors
    method: str | None  # "lora" or "qlora" from the step's manifest; None when it has none
    base: str | None  # the base checkpoint the run recorded
    step: int | None
    nf4: NF4Config | None = None  # how a QLoRA run quantized its base (None: the defaults)
    base_sha256: str | None = None  # the base's weights digest (engine.checkpoint.weights_digest)

    @property
    def sha256(self) -> str:
        return hashlib.sha256((self.path / ADAPTER_WEIGHTS).read_bytes()).hexdigest()

    def summary(self) -> dict[str, Any]:
        """What ``inspect`` reports for an adapter, as JSON-able data."""

        config = json.loads((self.path / ADAPTER_CONFIG).read_text())
        with safe_open(str(self.path / ADAPTER_WEIGHTS), "pt") as f:
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
        params = sum(int(torch.Size(s).numel()) for s in shapes.values())
        return {
            "path": str(self.path),
            "kind": "adapter",
            "method": self.method,
            "base": self.base,
            "base_weights_sha256": self.base_sha256,
            "step": self.step,
            "nf4": {"blocksize": self.nf4.blocksize, "double_quant": self.nf4.double_quant} if self.nf4 else None,
            "peft_type": config.get("peft_type"),
            "r": config.get("r"),
            "lora_alpha": config.get("lora_alpha"),
            "lora_dropout": config.get("lora_dropout"),
            "target_modules": sorted(config.get("target_modules") or []),
            "tensors": len(shapes),
            "parameters": params,
            "sha256": self.sha256,
        }


def is_adapter_path(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (
        (p / ADAPTER_CONFIG).is_file() or (p / ADAPTER_DIR / ADAPTER_CONFIG).is_file() or (p / LATEST_NAME).is_file()
    )


def find_adapter(path: str | Path) -> AdapterFolder:
    """The adapter at ``path``: a run folder (its latest step), a step folder, or an adapter folder."""
    p = Path(path)
    if not p.is_dir():
        raise AdapterError(f"{p}: not a folder (an adapter is a run, step or adapter folder)")
    if (p / LATEST_NAME).is_file() and not (p / ADAPTER_DIR).is_dir():
        latest = latest_checkpoint(p)
        if latest is None:
            raise AdapterError(f"{p}: {LATEST_NAME} names no checkpoint folder")
        p = latest
    if (p / ADAPTER_DIR / ADAPTER_CONFIG).is_file():
        step_dir, adapter = p, p / ADAPTER_DIR
    elif (p / ADAPTER_CONFIG).is_file():
        step_dir, adapter = p.parent, p
    else:
        raise AdapterError(
            f"{p}: no adapter here ({ADAPTER_CONFIG} not found); a full fine-tune writes a checkpoint, "
            "not an adapter: use it as a checkpoint"
        )
    if not (adapter / ADAPTER_WEIGHTS).is_file():
        raise AdapterError(f"{adapter}: {ADAPTER_WEIGHTS} is missing")
    manifest = _json(step_dir / MANIFEST)
    state = _json(step_dir / STATE_JSON)
    step = manifest.get("step", state.get("step"))
    quant = manifest.get("nf4")
    nf4 = None
    if isinstance(quant, dict):
        try:
            nf4 = NF4Config(blocksize=int(quant["blocksize"]), double_quant=bool(quant["double_quant"]))
            if FAULTS.active("adapter_nf4_blocksize_dropped"):  # the defect: the recorded block size is lost
                nf4 = NF4Config(double_quant=nf4.double_quant)  # pragma: no mutate
        except (KeyError, TypeError, ValueError):
            raise AdapterError(f"{step_dir / MANIFEST}: nf4 settings unreadable: {quant!r}") from None
    return AdapterFolder(
        adapter,
        manifest.get("method") if isinstance(manifest.get("method"), str) else None,
        manifest.get("base") if isinstance(manifest.get("base"), str) else None,
        step if isinstance(step, int) else None,
        nf4,
        manifest.get("base_weights_sha256") if isinstance(manifest.get("base_weights_sha256"), str) else None,
    )


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AdapterError(f"{path}: unreadable ({exc})") from None
    return data if isinstance(data, dict) else {}


# what a merged manifest carries over from the base check, when it happened
BASE_NOTES: tuple[str, ...] = ("base_override", "base_unchecked")


def unchecked_base_note(adapter: AdapterFolder) -> str | None:
    """What to say when ``adapter`` records no base weights digest (a folder PEFT wrote, or a run
    whose manifest lost it): it applies to any base of its shape, and nothing checked that base."""
    if adapter.base_sha256 is not None or FAULTS.active("adapter_unrecorded_base_unsaid"):
        return None  # the fault's defect: applied as if the base had matched, and recorded so
    return f"adapter {adapter.path} records no base weights digest; the base it is applied to was not checked"


def check_base(adapter: AdapterFolder, base: str | Path, loaded: LoadedCheckpoint, allow_other_base: bool) -> str:
    """The base's weights digest; refuses a base other than the one the adapter was trained on,
    and records in ``loaded.manifest["base_unchecked"]`` that an adapter recording no base had none.

    An adapter of the right shape on another base loads without complaint and answers with
    neither model's behaviour; only the digest tells.  ``allow_other_base`` lets it through, and
    the caller records that it did (``LoadedCheckpoint.manifest["base_override"]``).
    """
    actual = weights_digest(loaded.model)
    expected = adapter.base_sha256
    unchecked = unchecked_base_note(adapter)
    if unchecked is not None:
        loaded.manifest["base_unchecked"] = unchecked
    if expected is not None and expected != actual and not FAULTS.active("adapter_base_unchecked"):
        if not allow_other_base:
            raise AdapterError(
                f"adapter {adapter.path} was trained on a base with weights sha256 {expected}, but {base} has "
                f"{actual}; apply it to its own base, or pass --allow-other-base to do it anyway (recorded)"
            )
        loaded.manifest["base_override"] = {"expected_base_weights_sha256": expected, "base_weights_sha256": actual}
    return actual


def load_adapted(
    base: str | Path,
    adapter: AdapterFolder,
    device: str | torch.device = "cpu",
    quantize: bool | None = None,
    allow_other_base: bool = False,
) -> tuple[PeftModel, LoadedCheckpoint]:
    """The base checkpoint with the adapter applied, in eval mode; NF4 base for a QLoRA adapter.

    The base must be the one the adapter recorded (:func:`check_base`)."""
    nf4 = quantize if quantize is not None else adapter.method == "qlora"
    if nf4:  # the NF4 base, and so the adapter on it, where bitsandbytes has kernels
        device = nf4_device(torch.device(device))
    loaded = load_checkpoint(Path(base), device=device)
    loaded.manifest["base_weights_sha256"] = check_base(adapter, base, loaded, allow_other_base)
    if nf4:
        recorded = adapter.nf4 or NF4Config()
        if FAULTS.active("adapter_nf4_settings_ignored"):  # the defect: the default NF4 base, whatever was recorded
            recorded = NF4Config()  # pragma: no mutate
        quantize_model(loaded.model, recorded, device)
    try:
        model = load_adapter(loaded.model, adapter.path)
    except (ValueError, RuntimeError) as exc:
        raise AdapterError(f"adapter {adapter.path} does not fit {base}: {exc}") from None
    model.eval()
    return model, loaded


def merged(
    base: str | Path,
    adapter: AdapterFolder,
    device: str | torch.device = "cpu",
    quantize: bool | None = None,
    allow_other_base: bool = False,
) -> tuple[DecoderLM, LoadedCheckpoint]:
    """The base with ``W + B·A·alpha/r`` folded into every adapted layer, as a plain full-precision model.

    On an NF4 base the merge dequantizes exactly (``dequant(W) + B·A·scale``), never re-quantizes.
    """
    model, loaded = load_adapted(base, adapter, device, quantize, allow_other_base)
    result = merge_adapter(model, dequantize=adapter.method == "qlora" if quantize is None else quantize)
    if not isinstance(result, DecoderLM):
        raise AdapterError(f"merging {adapter.path} gave a {type(result).__name__}, not an engine model")
    return result, loaded


def merge_to_checkpoint(
    base: str | Path,
    adapter: AdapterFolder,
    out: str | Path,
    quantize: bool | None = None,
    allow_other_base: bool = False,
) -> Path:
    """Write the merged model as a full checkpoint whose manifest names the base (path and weights
    digest) and the adapter, and any override of the base check."""
    if FAULTS.active("merge_nf4_option_ignored"):  # the defect: --nf4 / --no-nf4 never reaches the merge
        quantize = None  # pragma: no mutate
    model, loaded = merged(base, adapter, "cpu", quantize, allow_other_base)
    digest = adapter.sha256
    if FAULTS.active("merge_digest_of_adapter_config"):  # the defect: the config's digest, not the weights'
        digest = hashlib.sha256((adapter.path / "adapter_config.json").read_bytes()).hexdigest()  # pragma: no mutate
    manifest = {
        "kind": "merged",
        "base": str(base),
        "adapter": str(adapter.path),
        "adapter_sha256": digest,
        "method": adapter.method,
        "base_weights_sha256": loaded.manifest["base_weights_sha256"],
        **{key: loaded.manifest[key] for key in BASE_NOTES if key in loaded.manifest},
    }
    return save_checkpoint(Path(out), model, loaded.tokenizer, manifest)
