"""Self-contained checkpoints: one safetensors file with the architecture, tokenizer and manifest.

Layout of the safetensors metadata (all values are strings, as safetensors requires):

- ``format`` = ``pv-engine-checkpoint`` and ``format_version`` = ``1``;
- one entry per architecture key (:data:`engine.config.ARCHITECTURE_KEYS`), its value JSON-encoded
  (``hidden_size`` = ``"64"``, ``architecture`` = ``"\\"llama\\""``); the special-token ids too when set;
- ``tokenizer``: :meth:`EngineTokenizer.to_json` (vocabulary, merges, special tokens and ids);
- ``manifest``: the training manifest as JSON (step, seed, data digest, versions, anything else);
- ``quantized``, only in a checkpoint of a model that runs a GGUF file's blocks: ``{layer: kind}``
  (``Q4_0``, ``Q4_1``, ``Q8_0``; :mod:`engine.quantized`).

Tensors use the Hugging Face parameter names.  With tied embeddings the shared matrix is stored
once, as ``model.embed_tokens.weight``; ``lm_head.weight`` is absent and re-tied on load.  A layer
listed under ``quantized`` is stored as ``<layer>.raw``: its blocks byte for byte as the GGUF file
holds them (uint8, one row of blocks per output row), instead of ``<layer>.weight``; a tied head in
blocks stores the shared matrix once, as those blocks, and the embedding is their dequantization.

Loading parses and checks the header before any tensor is read, and reports every defect as a
:class:`CheckpointError` naming it.  Nothing here unpickles: ``torch.load`` is never used.
Saving is atomic: the file is written beside its target, fsynced, then renamed over it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import safetensors
import tokenizers
import torch
from safetensors import safe_open

from engine.architectures import ARCHITECTURES, names
from engine.atomic import atomic_file
from engine.config import ARCHITECTURE_KEYS, BOOL_KEYS, FLOAT_KEYS, INT_KEYS, SPECIAL_ID_KEYS, ModelConfig
from engine.errors import CheckpointError, TokenizerError
from engine.faults import FAULTS
from engine.model import DecoderLM, build_model
from engine.quantized import (
    ACTIVATION_DTYPE,
    FORMATS,
    KINDS,
    BlockLinear,
    block_kinds,
    quantized_linear,
    row_bytes,
    stored_blocks,
    unpack,
)
from engine.safetensors_io import save_tensors
from engine.tokenizer import EngineTokenizer

FORMAT = "pv-engine-checkpoint"
FORMAT_VERSION = "1"
TIED_HEAD = "lm_head.weight"
EMBEDDING = "model.embed_tokens.weight"
QUANTIZED = "quantized"  # metadata key: the layers stored as their file's blocks, with their kind
HEAD = "lm_head"
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header
_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


@dataclass
class LoadedCheckpoint:
    model: DecoderLM
    tokenizer: EngineTokenizer
    config: ModelConfig
    manifest: dict[str, Any]
    metadata: dict[str, str] = field(default_factory=dict)
    path: Path | None = None


def runtime_versions() -> dict[str, str]:

    torch_version = str(torch.__version__)
    if FAULTS.active("manifest_torch_build_dropped"):  # the defect: 2.13.0+cpu and 2.13.0+cu128 look alike
        torch_version = torch_version.split("+")[0]  # pragma: no mutate
    return {
        "python": platform.python_version(),
        "torch": torch_version,
        "safetensors": safetensors.__version__,
        "tokenizers": tokenizers.__version__,
    }


def weights_digest(model: DecoderLM) -> str:
    """sha256 over every tensor's name, dtype, shape and bytes (a tied head once): which weights
    these are, whatever file or manifest they came in."""

    h = hashlib.sha256()
    tied = model.config.tie_word_embeddings
    if FAULTS.active("weights_digest_hashes_tied_head"):  # the defect: the digest of no file's tensors
        tied = False  # pragma: no mutate
    for name, tensor in sorted(model.state_dict().items()):
        if tied and name == TIED_HEAD:
            continue
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def base_identity(model: DecoderLM) -> dict[str, Any]:
    """What an adapter records of the base it was trained on: its weights' digest and architecture."""
    return {"base_weights_sha256": weights_digest(model), "base_architecture": model.config.to_dict()}


def make_manifest(
    step: int = 0, seed: int | None = None, data_digest: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A training manifest with the required keys; ``extra`` holds anything else worth recording."""
    return {"step": step, "seed": seed, "data_digest": data_digest, "versions": runtime_versions(), **extra}


def _normalise_manifest(manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    out = make_manifest()
    if manifest is not None:
        out.update(dict(manifest))
    if FAULTS.active("manifest_step_unchecked"):  # pragma: no mutate
        return out  # pragma: no mutate -- the defect: any step is written as given
    if not isinstance(out["step"], int) or isinstance(out["step"], bool) or out["step"] < 0:
        raise ValueError(f"manifest step must be a non-negative int, got {out['step']!r}")
    return out


def checkpoint_metadata(
    config: ModelConfig, tokenizer: EngineTokenizer, manifest: Mapping[str, Any] | None
) -> dict[str, str]:
    meta: dict[str, str] = {"format": FORMAT, "format_version": FORMAT_VERSION}
    cfg = config.to_dict()
    if not FAULTS.active("checkpoint_drops_arch_metadata"):
        for key in ARCHITECTURE_KEYS:
            meta[key] = json.dumps(cfg[key])
    for key in SPECIAL_ID_KEYS:
        if cfg.get(key) is not None:
            meta[key] = json.dumps(cfg[key])
    if not FAULTS.active("checkpoint_without_tokenizer"):
        meta["tokenizer"] = tokenizer.to_json()
    meta["manifest"] = json.dumps(_normalise_manifest(manifest), sort_keys=True, default=str)
    return meta


def _tensors_for_save(model: DecoderLM) -> dict[str, torch.Tensor]:
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        state.pop(TIED_HEAD, None)
        head = model.get_submodule(HEAD)
        if isinstance(head, BlockLinear):
            # the shared matrix once, as the head's blocks, when the embedding is exactly what they encode
            shared = torch.from_numpy(stored_blocks(head).dequantize())
            if not torch.equal(model.model.embed_tokens.weight.detach().cpu(), shared):
                raise CheckpointError(
                    "the embedding is tied to a head of quantized blocks but differs from their values: "
                    "a checkpoint stores the shared matrix once"
                )
            state.pop(EMBEDDING)
    # The planted defect: a "space-saving" cast that silently loses precision.
    dtype = torch.float16 if FAULTS.active("checkpoint_downcast") else None
    return {
        name: t.detach().to("cpu", dtype=dtype if t.is_floating_point() else None).contiguous()
        for name, t in state.items()
    }


def save_checkpoint(
    path: str | Path,
    model: DecoderLM,
    tokenizer: EngineTokenizer,
    manifest: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``model`` + ``tokenizer`` + ``manifest`` to ``path`` atomically; returns the path."""
    path = Path(path)
    if model.config.vocab_size < tokenizer.vocab_size:
        if FAULTS.active("save_refusal_unnamed"):  # pragma: no mutate
            raise CheckpointError("cannot save this checkpoint")  # pragma: no mutate -- the defect: no cause named
        raise CheckpointError(
            f"tokenizer has {tokenizer.vocab_size} tokens but the model's vocab_size is {model.config.vocab_size}"
        )
    meta = checkpoint_metadata(model.config, tokenizer, manifest)
    kinds = block_kinds(model)
    if kinds:
        meta[QUANTIZED] = json.dumps(kinds, sort_keys=True)
    tensors = _tensors_for_save(model)
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in tensors.values() if t.is_floating_point()})
    if FAULTS.active("checkpoint_mixed_dtypes_saved"):  # the defect: a file load_checkpoint refuses is written
        dtypes = dtypes[:1]  # pragma: no mutate
    if len(dtypes) > 1:
        raise CheckpointError(
            f"the model's tensors mix dtypes {', '.join(dtypes)}; a checkpoint holds one: cast the model first"
        )
    with atomic_file(path) as tmp:
        _write_tensors(tensors, tmp, meta)
    _fsync_dir(path.parent)
    return path


def _write_tensors(tensors: dict[str, torch.Tensor], path: Path, meta: dict[str, str]) -> None:
    save_tensors(tensors, str(path), metadata=meta)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open a directory; the rename is still atomic there
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    offsets: tuple[int, int]


def read_header(path: str | Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse and check a safetensors header; returns (tensor table, metadata).  No tensor is read."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"{path}: not a file")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        if head[:4] == b"PK\x03\x04":
            raise CheckpointError(f"{path}: a zip archive (a torch.save/pickle file?), not a safetensors checkpoint")
        pickled = head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
        if pickled and not FAULTS.active("checkpoint_pickle_unnamed"):  # the defect: no sniffing
            raise CheckpointError(f"{path}: a Python pickle, not a safetensors checkpoint; pickles are never loaded")
        if head[:4] == b"GGUF":
            raise CheckpointError(f"{path}: a GGUF file, not a safetensors checkpoint")
        if len(head) < 8:
            raise CheckpointError(f"{path}: truncated ({size} bytes; a safetensors file starts with an 8-byte length)")
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER:
            raise CheckpointError(f"{path}: not a safetensors file (declared header length {n} is implausible)")
        if 8 + n > size:
            raise CheckpointError(
                f"{path}: truncated: header declares {n} bytes but the file has only {size - 8} after it"
            )
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointError(f"{path}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (its header is not a JSON object)")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise CheckpointError(f"{path}: safetensors metadata is not a string-to-string map")
    data_len = size - 8 - n
    tensors: dict[str, TensorInfo] = {}
    for name, info in header.items():
        try:
            dtype, shape, (start, end) = info["dtype"], tuple(int(d) for d in info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: corrupt header entry for tensor `{name}`") from None
        if end > data_len:
            raise CheckpointError(
                f"{path}: truncated: tensor `{name}` ends at byte {end} of the data but the file holds {data_len}"
            )
        tensors[name] = TensorInfo(str(dtype), shape, (int(start), int(end)))
    return tensors, meta


def _json_value(meta: Mapping[str, str], key: str) -> Any:
    if key not in meta:
        raise CheckpointError(f"missing metadata key `{key}`")
    try:
        return json.loads(meta[key])
    except json.JSONDecodeError:
        raise CheckpointError(f"metadata key `{key}` is not valid JSON: {meta[key][:60]!r}") from None


def config_from_metadata(meta: Mapping[str, str]) -> ModelConfig:
    fmt = meta.get("format")
    if fmt is None:
        raise CheckpointError("missing metadata key `format`: not a pv engine checkpoint")
    if fmt != FORMAT:
        raise CheckpointError(f"metadata `format` is {fmt!r}, expected {FORMAT!r}: not a pv engine checkpoint")
    version = meta.get("format_version")
    if version is None:
        raise CheckpointError("missing metadata key `format_version`: the checkpoint's format cannot be told")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"unsupported checkpoint format_version {version!r}; this engine reads {FORMAT_VERSION!r}"
        )
    values: dict[str, Any] = {key: _json_value(meta, key) for key in ARCHITECTURE_KEYS}
    arch = values["architecture"]
    if arch not in ARCHITECTURES:
        raise CheckpointError(f"unknown architecture `{arch}`; supported: {', '.join(names())}")
    for key in INT_KEYS:
        v = values[key]
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise CheckpointError(f"metadata key `{key}` must be a positive integer, got {meta[key]}")
    for key in FLOAT_KEYS:
        v = values[key]
        if not isinstance(v, int | float) or isinstance(v, bool) or v <= 0:
            raise CheckpointError(f"metadata key `{key}` must be a positive number, got {meta[key]}")
        values[key] = float(v)
    for key in BOOL_KEYS:
        if not isinstance(values[key], bool):
            raise CheckpointError(f"metadata key `{key}` must be true or false, got {meta[key]}")
    for key in SPECIAL_ID_KEYS:
        if key in meta:
            v = _json_value(meta, key)
            several = key == "eos_token_id" and isinstance(v, list) and len(v) > 0
            ids = v if several else [v]
            if v is not None and not all(_token_id(i, values["vocab_size"]) for i in ids):
                alt = " or a list of them" if key == "eos_token_id" else ""
                raise CheckpointError(f"metadata key `{key}` must be a token id below vocab_size{alt}, got {meta[key]}")
            values[key] = tuple(v) if several else v
    try:
        return ModelConfig.from_dict(values)
    except ValueError as exc:
        raise CheckpointError(f"inconsistent architecture metadata: {exc}") from None


def _token_id(v: Any, vocab_size: int) -> bool:
    if FAULTS.active("checkpoint_bool_token_id_accepted"):  # pragma: no mutate
        return isinstance(v, int) and 0 <= v < vocab_size  # pragma: no mutate -- the defect: true reads as id 1
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < vocab_size


def tokenizer_from_metadata(meta: Mapping[str, str], config: ModelConfig) -> EngineTokenizer:
    if "tokenizer" not in meta:
        if FAULTS.active("checkpoint_tokenizer_refusal_unnamed"):  # pragma: no mutate
            raise CheckpointError("cannot load this checkpoint")  # pragma: no mutate -- the defect: no key named
        raise CheckpointError("missing metadata key `tokenizer`: the checkpoint has no embedded tokenizer")
    try:
        tok = EngineTokenizer.from_json(meta["tokenizer"])
    except TokenizerError as exc:
        raise CheckpointError(f"metadata key `tokenizer` is unusable: {exc}") from None
    if tok.vocab_size > config.vocab_size:
        raise CheckpointError(f"tokenizer has {tok.vocab_size} tokens but vocab_size is {config.vocab_size}")
    return tok


def manifest_from_metadata(meta: Mapping[str, str]) -> dict[str, Any]:
    manifest = _json_value(meta, "manifest")
    if not isinstance(manifest, dict):
        raise CheckpointError("metadata key `manifest` is not a JSON object")
    for key in ("step", "seed", "data_digest", "versions"):
        if key not in manifest:
            raise CheckpointError(f"manifest lacks `{key}`")
    return manifest


def expected_tensors(config: ModelConfig, quantized: Mapping[str, str] | None = None) -> dict[str, tuple[int, ...]]:
    """Names and shapes a checkpoint of ``config`` must hold (computed on the meta device), with
    the layers in ``quantized`` ({layer: kind}, kinds checked by :func:`quantized_layers`) stored
    as their blocks: each must be a linear layer of the model whose rows are whole blocks."""
    model = build_model(config, device="meta")
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    if config.tie_word_embeddings:
        shapes.pop(TIED_HEAD, None)
    if not quantized:
        return shapes
    linears = {name: m for name, m in model.named_modules() if type(m) is torch.nn.Linear}
    for layer, kind in quantized.items():
        linear = linears.get(layer)
        if linear is None:
            raise CheckpointError(f"metadata `{QUANTIZED}` names `{layer}`, which is not a linear layer of the model")
        if linear.in_features % FORMATS[kind].block_weights:
            raise CheckpointError(f"`{layer}` rows of {linear.in_features} weights are not whole {kind} blocks")
        shapes.pop(f"{layer}.weight", None)
        shapes[f"{layer}.raw"] = (linear.out_features, row_bytes(kind, linear.in_features))
        if layer == HEAD and config.tie_word_embeddings:
            shapes.pop(EMBEDDING)  # stored once, as the head's blocks
    return shapes


def quantized_layers(meta: Mapping[str, str]) -> dict[str, str]:
    """The ``quantized`` metadata ({layer: kind}): a JSON object whose kinds the engine runs.  That
    each names a linear layer with rows of whole blocks is :func:`expected_tensors`' check."""
    if QUANTIZED not in meta:
        return {}
    kinds = _json_value(meta, QUANTIZED)
    if not isinstance(kinds, dict):
        raise CheckpointError(f"metadata key `{QUANTIZED}` is not a JSON object")
    for layer, kind in kinds.items():
        if kind not in FORMATS:
            raise CheckpointError(
                f"metadata `{QUANTIZED}` gives `{layer}` the kind {kind!r}; the engine runs {', '.join(KINDS)}"
            )
    return dict(kinds)


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def check_tensors(
    tensors: Mapping[str, TensorInfo], config: ModelConfig, quantized: Mapping[str, str] | None = None
) -> None:
    expected = expected_tensors(config, quantized)
    missing = [n for n in expected if n not in tensors]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointError(f"missing tensor `{missing[0]}`{more}")
    unexpected = sorted(n for n in tensors if n not in expected)
    if unexpected:
        hint = " (tied embeddings store the head once)" if unexpected[0] == TIED_HEAD else ""
        raise CheckpointError(f"unexpected tensor `{unexpected[0]}`{hint}")
    for name, shape in expected.items():
        info = tensors[name]
        if info.shape != shape:
            raise CheckpointError(f"tensor `{name}` has shape {_fmt_shape(info.shape)}, expected {_fmt_shape(shape)}")
        blocks = name.endswith(".raw")
        if blocks and info.dtype != "U8":
            raise CheckpointError(f"tensor `{name}` has dtype {info.dtype}; quantized blocks are stored as U8 bytes")
        if not blocks and info.dtype not in _DTYPES:
            raise CheckpointError(f"tensor `{name}` has dtype {info.dtype}; a checkpoint holds floating-point weights")
    dtypes = {t.dtype for name, t in tensors.items() if not name.endswith(".raw")}
    if len(dtypes) > 1:
        raise CheckpointError(f"tensors mix dtypes {sorted(dtypes)}; a checkpoint holds one dtype")


def inspect_checkpoint(path: str | Path) -> tuple[ModelConfig, EngineTokenizer, dict[str, Any], dict[str, str]]:
    """Validate everything except tensor contents; returns (config, tokenizer, manifest, metadata)."""
    tensors, meta = read_header(path)
    config = config_from_metadata(meta)
    tokenizer = tokenizer_from_metadata(meta, config)
    stored_pad = config.pad_token_id
    config = with_special_ids(config, tokenizer)
    if FAULTS.active("checkpoint_pad_id_dropped"):  # the defect: the header's missing pad id stays missing
        config = config.replace(pad_token_id=stored_pad)  # pragma: no mutate
    manifest = manifest_from_metadata(meta)
    check_tensors(tensors, config, quantized_layers(meta))
    return config, tokenizer, manifest, meta


def with_special_ids(config: ModelConfig, tok: EngineTokenizer) -> ModelConfig:
    """``config`` with the special ids it names, and the tokenizer's for those it leaves out."""
    return config.replace(
        bos_token_id=tok.bos_id if config.bos_token_id is None else config.bos_token_id,
        eos_token_id=tok.eos_id if config.eos_token_id is None else config.eos_token_id,
        pad_token_id=tok.pad_id if config.pad_token_id is None else config.pad_token_id,
    )


def load_step_weights(model: DecoderLM, path: str | Path) -> None:
    """A run step's ``model.safetensors`` into ``model``, wherever its parameters live (each is
    copied into place).  The file holds a tied head once, as the embedding, so the head's entry
    is the embedding's."""
    state = load_state(path)
    if model.config.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
        if FAULTS.active("step_weights_head_from_model"):  # the defect: the model's own head, copied in last
            state["lm_head.weight"] = model.lm_head.weight.detach().clone()  # pragma: no mutate
    model.load_state_dict(state)


def load_state(path: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of a (header-checked) safetensors file on CPU, each in memory of its own.

    safetensors' default backend hands out views into one memory map of the whole file, which
    stays resident while any tensor lives: quantizing a loaded base to NF4 then frees nothing (the
    embedding alone pins every page).  ``pread`` (safetensors >= 0.8) reads each tensor into its
    own buffer; older versions get a copy of each view.  A read failure is a CheckpointError.
    """
    try:
        try:
            if FAULTS.active("checkpoint_mmap_kept"):  # the defect: tensors stay views of one file mapping
                raise TypeError  # pragma: no mutate
            handle = safe_open(str(path), framework="pt", device="cpu", backend="pread")
            owned = True
        except TypeError:  # safetensors < 0.8 has no backend choice
            handle = safe_open(str(path), framework="pt", device="cpu")
            owned = False
        with handle as fh:
            names = list(fh.keys())  # safe_open has no __iter__
            copy = not owned and not FAULTS.active("checkpoint_mmap_kept")
            return {name: fh.get_tensor(name).clone() if copy else fh.get_tensor(name) for name in names}
    except Exception as exc:
        raise CheckpointError(f"{path}: cannot read tensors: {exc}") from None


def model_from_state(
    config: ModelConfig,
    state: dict[str, torch.Tensor],
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    quantized: Mapping[str, str] | None = None,
) -> DecoderLM:
    """Build a model of ``config`` from a (tied-once) state dict without a throwaway random init;
    the layers in ``quantized`` ({layer: kind}) from their blocks (``<layer>.raw``), on the CPU."""
    state = dict(state)
    kinds = dict(quantized or {})
    if kinds and (torch.device(device).type != "cpu" or dtype not in (None, torch.float32)):
        raise CheckpointError("quantized layers run on the CPU under float32 activations: drop --device and --dtype")
    model = build_model(config, device="meta")
    for layer, kind in kinds.items():
        linear = model.get_submodule(layer)
        raw = state.get(f"{layer}.raw")
        if not isinstance(linear, torch.nn.Linear) or raw is None:
            raise CheckpointError(f"state dict lacks the blocks of `{layer}` ({layer}.raw)")
        try:
            blocks = unpack(kind, raw.numpy(), (linear.out_features, linear.in_features))
        except ValueError as exc:
            raise CheckpointError(f"`{layer}.raw`: {exc}") from None
        bias = state.get(f"{layer}.bias")
        parent, _, child = layer.rpartition(".")
        setattr(model.get_submodule(parent), child, quantized_linear(blocks, bias))
        if layer == HEAD and config.tie_word_embeddings and EMBEDDING not in state:
            shared = blocks  # the shared matrix, stored as the head's blocks
            if FAULTS.active("quantized_embedding_from_kernel_scales"):  # the defect: the kernel's bfloat16 scales
                kernel = torch.from_numpy(blocks.scales).to(ACTIVATION_DTYPE).float().numpy()  # pragma: no mutate
                shared = dataclasses.replace(blocks, scales=kernel)  # pragma: no mutate
            state[EMBEDDING] = torch.from_numpy(shared.dequantize())
    if config.tie_word_embeddings and HEAD not in kinds:
        state[TIED_HEAD] = state[EMBEDDING]
    strict = True
    if FAULTS.active("state_dict_loaded_loosely"):  # pragma: no mutate
        strict = False  # pragma: no mutate -- the defect: a tensor the model lacks is dropped unread
    try:
        model.load_state_dict(state, strict=strict, assign=True)
    except RuntimeError as exc:
        raise CheckpointError(f"state dict does not fit the architecture: {exc}") from None
    if config.tie_word_embeddings and HEAD not in kinds:
        model.lm_head.weight = model.model.embed_tokens.weight
    model = model.to(device=device, dtype=dtype) if dtype is not None else model.to(device=device)
    return model.eval()


def load_checkpoint(
    path: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> LoadedCheckpoint:
    """Load and validate a checkpoint; any defect raises :class:`CheckpointError` naming it."""
    config, tokenizer, manifest, meta = inspect_checkpoint(path)
    state = load_state(path)
    for name, tensor in state.items():
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"tensor `{name}` holds NaN or Inf values")
    model = model_from_state(config, state, device=device, dtype=dtype, quantized=quantized_layers(meta))
    return LoadedCheckpoint(model, tokenizer, config, manifest, dict(meta), Path(path))
