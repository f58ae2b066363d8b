"""GGUF export (through the ``gguf`` package) in the layout llama.cpp loads.

- Architecture: ``qwen2`` when the config has QKV bias, else ``llama`` (the same rule as the
  Hugging Face export; llama.cpp's ``qwen2`` requires the q/k/v biases, ``llama`` has none).
- Tensor names and the llama q/k row permutation are :mod:`engine.gguf_layout`'s, which the
  importer reads too.
- Tokenizer: ``tokenizer.ggml.model = gpt2`` with the pre-tokenizer name of the rule the tokenizer
  really uses (:mod:`engine.pretokenizers`), add_bos as the tokenizer sets it, the chat template,
  the end-of-turn id beside EOS, the byte-level token
  strings, merges, token types (special tokens CONTROL), bos/eos/pad ids, and the token list
  padded to the model's ``vocab_size`` with ``[PAD<id>]`` tokens of type UNUSED.

Norm weights stay float32 (llama.cpp requires it); matrices are float32, float16, or quantized
with ``gguf``'s own quantizer to Q8_0 or Q4_0 (32-weight blocks, one scale each; a matrix whose
rows are not a whole number of blocks falls back to float16, as llama.cpp's converter does).
Reading back (:func:`engine.gguf_layout.read_gguf`) dequantizes, so a quantized export
round-trips within its step.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal

import gguf
import numpy as np
import torch

from engine.architectures import exported_as
from engine.atomic import atomic_file
from engine.checkpoint import load_checkpoint
from engine.config import ModelConfig
from engine.errors import ExportError
from engine.faults import FAULTS
from engine.gguf_layout import gguf_arch, gguf_tensor_name, permute_qk
from engine.model import DecoderLM
from engine.pretokenizers import PRE_TOKENIZERS, llama_cpp_name
from engine.quantized import require_float_weights
from engine.tokenizer import EngineTokenizer

GgufDtype = Literal["f32", "f16", "q8_0", "q4_0"]


class GgufEosWarning(UserWarning):
    """A model stops on more end-of-generation ids than a GGUF file can name (eos, eot, eom)."""


GGUF_DTYPES: tuple[str, ...] = ("f32", "f16", "q8_0", "q4_0")
_QUANT = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}
_FILE_TYPE = {
    "f32": gguf.LlamaFileType.ALL_F32,
    "f16": gguf.LlamaFileType.MOSTLY_F16,
    "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
}


def gguf_tensors(model: DecoderLM, dtype: GgufDtype = "f32") -> dict[str, np.ndarray]:
    """The model's tensors under llama.cpp names, permuted for the ``llama`` rope layout."""
    require_float_weights(model, "a GGUF export")
    cfg = model.config
    permutes = exported_as(cfg).gguf_permutes_qk
    out: dict[str, np.ndarray] = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        # the defect: fp16 weights stay fp16 in an f32 file
        if FAULTS.active("gguf_tensors_keep_checkpoint_dtype"):  # pragma: no mutate
            array = tensor.detach().to("cpu").numpy()  # pragma: no mutate
        else:
            array = tensor.detach().to("cpu", torch.float32).numpy()
        if permutes and name.endswith("q_proj.weight"):
            array = permute_qk(array, cfg.num_attention_heads)
        elif permutes and name.endswith("k_proj.weight"):
            array = permute_qk(array, cfg.num_key_value_heads)
        # Norms and biases (1-D) must stay F32 for llama.cpp.
        if dtype == "f16" and array.ndim == 2:
            array = array.astype(np.float16)
        out[gguf_tensor_name(name)] = np.ascontiguousarray(array)
    if FAULTS.active("gguf_gate_up_swapped"):  # the defect: the two SwiGLU inputs written under each other's names
        for n in range(cfg.num_hidden_layers):  # pragma: no mutate
            gate, up = f"blk.{n}.ffn_gate.weight", f"blk.{n}.ffn_up.weight"  # pragma: no mutate
            out[gate], out[up] = out[up], out[gate]  # pragma: no mutate
    return out


def gguf_vocab(tokenizer: EngineTokenizer, vocab_size: int) -> tuple[list[str], list[int]]:
    """Token strings and types, padded with ``[PAD<id>]`` (UNUSED) to ``vocab_size`` entries.

    Every added special token is CONTROL and every other added token USER_DEFINED, so llama.cpp
    matches them whole in text as the tokenizer does (not only bos/eos/pad: a chat model's
    ``<|im_start|>`` too)."""
    tokens = tokenizer.tokens()
    kinds = {i: t.special for i, t in tokenizer.backend.get_added_tokens_decoder().items()}
    special = tokenizer.special_ids()
    types = [
        int(
            gguf.TokenType.CONTROL
            if i in special or kinds.get(i)
            else gguf.TokenType.USER_DEFINED
            if i in kinds
            else gguf.TokenType.NORMAL
        )
        for i in range(len(tokens))
    ]
    if len(tokens) > vocab_size:
        raise ExportError(f"tokenizer has {len(tokens)} tokens but vocab_size is {vocab_size}")
    if not FAULTS.active("gguf_vocab_unpadded"):
        for i in range(len(tokens), vocab_size):
            tokens.append(f"[PAD{i}]")
            types.append(int(gguf.TokenType.UNUSED))
    return tokens, types


def _write_metadata(writer: gguf.GGUFWriter, cfg: ModelConfig, tok: EngineTokenizer, dtype: GgufDtype) -> None:
    writer.add_name("pv-engine")
    declared = "f32" if dtype == "f16" and FAULTS.active("gguf_f16_declared_f32") else dtype
    writer.add_file_type(_FILE_TYPE[declared])
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_freq_base(cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    tokens, types = gguf_vocab(tok, cfg.vocab_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(gguf_pre_tokenizer(tok))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(tok.merges())
    writer.add_bos_token_id(tok.bos_id)
    eos = cfg.eos_ids or (tok.eos_id,)
    writer.add_eos_token_id(eos[0])
    if len(eos) > 1:  # llama.cpp stops on the end-of-turn and end-of-message ids as well as on EOS
        writer.add_eot_token_id(eos[1])
    if len(eos) > 2 and not FAULTS.active("gguf_eom_dropped"):
        writer.add_eom_token_id(eos[2])
    if len(eos) > 3:
        warnings.warn(
            f"GGUF has three end-of-generation keys (eos, eot, eom): {list(eos[3:])} of the model's EOS ids "
            f"{list(eos)} are not written, and llama.cpp will not stop on them",
            GgufEosWarning,
            stacklevel=3,
        )
    writer.add_pad_token_id(tok.pad_id)
    writer.add_add_bos_token(tok.add_bos_token and not FAULTS.active("gguf_add_bos_dropped"))
    writer.add_add_eos_token(False)
    if tok.chat_template is not None:
        writer.add_chat_template(tok.chat_template)


def gguf_pre_tokenizer(tok: EngineTokenizer) -> str:
    """``tokenizer.ggml.pre`` for ``tok``: the llama.cpp rule that cuts text as ``tok`` does."""
    name = llama_cpp_name(tok.backend)
    if name is None:
        raise ExportError(
            "the tokenizer's pre-tokenizer has no llama.cpp equivalent (known: "
            f"{', '.join(sorted(PRE_TOKENIZERS))}); llama.cpp would give other token ids"
        )
    return name


def export_gguf(
    model: DecoderLM,
    tokenizer: EngineTokenizer,
    path: str | Path,
    dtype: GgufDtype = "f32",
) -> Path:
    """Write ``model`` + ``tokenizer`` as one GGUF file, atomically (temp file, then rename)."""
    if dtype not in GGUF_DTYPES:
        raise ExportError(f"GGUF dtype must be one of {', '.join(GGUF_DTYPES)}, got {dtype!r}")
    path = Path(path)
    if path.is_dir():
        raise ExportError(f"{path} is a directory; give a .gguf file path")
    cfg = model.config
    qtype = _QUANT.get(dtype)
    tensors = gguf_tensors(model, "f32" if qtype is not None else dtype)
    with atomic_file(path) as tmp:
        writer = gguf.GGUFWriter(str(tmp), gguf_arch(cfg))
        _write_metadata(writer, cfg, tokenizer, dtype)
        for name, array in tensors.items():
            if qtype is None:
                writer.add_tensor(name, array)
                continue
            data, raw = quantize_for_gguf(array, qtype)
            writer.add_tensor(name, data, raw_dtype=raw)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file(progress=False)
        writer.close()
    return path


def quantize_for_gguf(
    array: np.ndarray, qtype: gguf.GGMLQuantizationType
) -> tuple[np.ndarray, gguf.GGMLQuantizationType | None]:
    """One tensor as written to a quantized file: matrices in ``qtype`` when their rows are whole
    blocks, else float16; norms and biases float32 (llama.cpp requires it)."""
    block, _ = gguf.GGML_QUANT_SIZES[qtype]
    if array.ndim == 1 and not FAULTS.active("gguf_norms_quantized"):
        return array.astype(np.float32), None
    if array.shape[-1] % block:
        return array.astype(np.float16), None
    return gguf.quants.quantize(np.ascontiguousarray(array, dtype=np.float32), qtype), qtype


def export_checkpoint_gguf(checkpoint: str | Path, path: str | Path, dtype: GgufDtype = "f32") -> Path:
    """Load ``checkpoint`` and write it to ``path`` as a GGUF file of ``dtype``; returns ``path``."""
    if FAULTS.active("checkpoint_gguf_export_ignores_dtype"):  # the defect: every file written as f32
        dtype = "f32"  # pragma: no mutate
    loaded = load_checkpoint(checkpoint)
    return export_gguf(loaded.model, loaded.tokenizer, path, dtype)
