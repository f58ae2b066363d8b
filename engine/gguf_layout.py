"""The GGUF layout llama.cpp reads, shared by import and export: tensor names, the q/k row order,
and reading a file's metadata and tensors back.

- Tensors: ``token_embd``, ``blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,
  ffn_up,ffn_down}``, ``blk.N.attn_{q,k,v}.bias`` for qwen2, ``output_norm``, and ``output`` unless
  the embeddings are tied (llama.cpp then reuses ``token_embd``).
- llama.cpp's ``llama`` architecture applies rotary embeddings to interleaved pairs while the
  engine (like Hugging Face) rotates the two halves of each head, so q/k rows are permuted per
  head exactly as llama.cpp's ``convert_hf_to_gguf.py`` does (``LlamaModel.permute``); whether an
  architecture needs it is its entry's ``gguf_permutes_qk`` (:mod:`engine.architectures`).
- Reading (:func:`read_gguf`) dequantizes with gguf-py, or leaves the tensors a caller reads as
  blocks itself (engine.quantized) unread; :func:`engine_state_from_gguf` undoes the renaming
  and the permutation.

The writer is :mod:`engine.gguf_export`, the importer :mod:`engine.gguf_import`; neither enters
the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch

from engine.architectures import by_gguf_name, exported_as
from engine.checkpoint import expected_tensors
from engine.config import ModelConfig
from engine.errors import ExportError
from engine.faults import FAULTS

_T = gguf.MODEL_TENSOR
_LAYER_MAP = {
    "input_layernorm.weight": (_T.ATTN_NORM, "weight"),
    "self_attn.q_proj.weight": (_T.ATTN_Q, "weight"),
    "self_attn.k_proj.weight": (_T.ATTN_K, "weight"),
    "self_attn.v_proj.weight": (_T.ATTN_V, "weight"),
    "self_attn.q_proj.bias": (_T.ATTN_Q, "bias"),
    "self_attn.k_proj.bias": (_T.ATTN_K, "bias"),
    "self_attn.v_proj.bias": (_T.ATTN_V, "bias"),
    "self_attn.o_proj.weight": (_T.ATTN_OUT, "weight"),
    "post_attention_layernorm.weight": (_T.FFN_NORM, "weight"),
    "mlp.gate_proj.weight": (_T.FFN_GATE, "weight"),
    "mlp.up_proj.weight": (_T.FFN_UP, "weight"),
    "mlp.down_proj.weight": (_T.FFN_DOWN, "weight"),
}
_GLOBAL_MAP = {
    "model.embed_tokens.weight": f"{gguf.TENSOR_NAMES[_T.TOKEN_EMBD]}.weight",
    "model.norm.weight": f"{gguf.TENSOR_NAMES[_T.OUTPUT_NORM]}.weight",
    "lm_head.weight": f"{gguf.TENSOR_NAMES[_T.OUTPUT]}.weight",
}


def gguf_arch(config: ModelConfig) -> str:
    return exported_as(config).gguf_name


def gguf_tensor_name(hf_name: str) -> str:
    """The llama.cpp name of an engine (Hugging Face) parameter name."""
    if hf_name in _GLOBAL_MAP:
        return _GLOBAL_MAP[hf_name]
    parts = hf_name.split(".")
    if len(parts) > 3 and parts[0] == "model" and parts[1] == "layers":
        rest = ".".join(parts[3:])
        if rest in _LAYER_MAP:
            kind, suffix = _LAYER_MAP[rest]
            return f"{gguf.TENSOR_NAMES[kind].format(bid=int(parts[2]))}.{suffix}"
    raise ExportError(f"no GGUF name for tensor `{hf_name}`")


def permute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Half-rotation rows -> interleaved-pair rows, per head (llama.cpp's ``LlamaModel.permute``)."""
    return w.reshape(n_heads, 2, w.shape[0] // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Inverse of :func:`permute_qk`."""
    return w.reshape(n_heads, w.shape[0] // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@dataclass
class GgufContents:
    arch: str
    fields: dict[str, Any]
    tensors: dict[str, np.ndarray]  # quantized tensors dequantized to float32
    tensor_types: dict[str, str]  # as stored: F32, F16, Q8_0, Q4_0
    raw: dict[str, Any] = field(default_factory=dict)  # with `unread`: gguf-py's tensors, their blocks not dequantized

    def field(self, key: str) -> Any:
        return self.fields[key]


def _field_value(field: Any) -> Any:
    types = list(field.types)
    if not types:
        return None
    if types[0] == gguf.GGUFValueType.ARRAY:
        if len(types) > 1 and types[1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def read_gguf(path: str | Path, unread: Callable[[str, str], bool] | None = None) -> GgufContents:
    """Metadata and tensors of a GGUF file (tensors in PyTorch row-major order, as written).

    ``unread(name, type)``: a tensor it picks is not dequantized but stands as zeros of its shape
    (allocated lazily), for a caller that reads its blocks itself (engine.quantized)."""
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:
        raise ExportError(f"{path}: not a readable GGUF file: {exc}") from None
    fields = {name: _field_value(f) for name, f in reader.fields.items()}
    tensors = {
        t.name: (
            np.zeros([int(d) for d in reversed(t.shape)], dtype=np.float32)
            if unread is not None and unread(t.name, t.tensor_type.name)
            else _tensor_values(t)
        )
        for t in reader.tensors
    }
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    raw = {t.name: t for t in reader.tensors} if unread is not None else {}
    return GgufContents(
        arch=str(fields.get("general.architecture")), fields=fields, tensors=tensors, tensor_types=types, raw=raw
    )


def _tensor_values(t: Any) -> np.ndarray:
    shape = [int(d) for d in reversed(t.shape)]
    if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        return np.array(t.data).reshape(shape)
    values = np.asarray(gguf.quants.dequantize(np.array(t.data), t.tensor_type))
    if FAULTS.active("gguf_dequant_through_f16"):
        values = values.astype(np.float16).astype(np.float32)  # pragma: no mutate
    return values.reshape(shape)


def engine_state_from_gguf(contents: GgufContents, config: ModelConfig) -> dict[str, torch.Tensor]:
    """Undo the export's renaming and permutation: the engine state dict a GGUF file encodes."""
    out: dict[str, torch.Tensor] = {}
    family = by_gguf_name(contents.arch)
    permutes = family is not None and family.gguf_permutes_qk
    for hf_name in expected_tensors(config):
        array = contents.tensors[gguf_tensor_name(hf_name)].astype(np.float32)
        if permutes and hf_name.endswith("q_proj.weight"):
            array = unpermute_qk(array, config.num_attention_heads)
        elif permutes and hf_name.endswith("k_proj.weight"):
            array = unpermute_qk(array, config.num_key_value_heads)
        out[hf_name] = torch.from_numpy(np.ascontiguousarray(array))
    return out
