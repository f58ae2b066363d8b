"""Export to and import from the Hugging Face model-folder layout (``transformers`` not needed).

A folder holds ``config.json``, ``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json``,
``special_tokens_map.json`` and ``generation_config.json``.  The class written to ``architectures``
follows the attention layout, which is what decides whether the weights fit:
``Qwen2ForCausalLM`` when the config has QKV bias (Qwen2 always carries it), ``LlamaForCausalLM``
otherwise (no bias anywhere).  Import sets ``architecture`` from the folder's ``model_type``, so an
engine config labelled ``qwen2`` without bias comes back labelled ``llama``; nothing else changes.

Parameter names are identical on both sides; with tied embeddings ``lm_head.weight`` is left out,
as ``save_pretrained`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from tokenizers import Tokenizer, processors

from engine.architectures import ARCHITECTURES, Architecture, by_hf_model_type, exported_as
from engine.atomic import atomic_file, write_atomic
from engine.checkpoint import (
    EMBEDDING,
    TIED_HEAD,
    CheckpointError,
    LoadedCheckpoint,
    _fmt_shape,
    expected_tensors,
    make_manifest,
    model_from_state,
    read_header,
    with_special_ids,
)
from engine.config import ModelConfig
from engine.errors import ExportError, TokenizerError
from engine.faults import FAULTS
from engine.model import DecoderLM
from engine.quantized import require_float_weights
from engine.safetensors_io import save_tensors
from engine.tokenizer import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, EngineTokenizer

SHARD_INDEX = "model.safetensors.index.json"  # which shard holds each tensor of a sharded folder
HF_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
)


def hf_architecture(config: ModelConfig) -> tuple[str, str]:
    """(``architectures`` class, ``model_type``) for ``config``."""
    family = exported_as(config)
    return family.hf_class, family.hf_model_type


def to_hf_config(config: ModelConfig, dtype: torch.dtype = torch.float32) -> dict[str, Any]:
    """The ``config.json`` dict; rope theta is written both ways so transformers 4.x and 5.x read it."""
    cls, model_type = hf_architecture(config)
    out: dict[str, Any] = {
        "architectures": [cls],
        "model_type": model_type,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.head_dim,
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": config.rope_theta},
        "rope_scaling": None,
        "hidden_act": "silu",
        "tie_word_embeddings": config.tie_word_embeddings,
        "bos_token_id": config.bos_token_id,
        "eos_token_id": list(config.eos_token_id) if isinstance(config.eos_token_id, tuple) else config.eos_token_id,
        "pad_token_id": config.pad_token_id,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": str(dtype).removeprefix("torch."),  # transformers names dtypes as torch does
    }
    if FAULTS.active("hf_config_rope_theta_v5_only"):  # the defect: transformers 4.x reads theta 10000
        del out["rope_theta"]  # pragma: no mutate
    out.update(exported_as(config).hf_config_extras(config.num_hidden_layers))
    return out


def _rope_theta(hf: Mapping[str, Any]) -> float:
    params = hf.get("rope_parameters")
    scaling = hf.get("rope_scaling")
    for block in (params, scaling):
        if isinstance(block, dict) and block.get("rope_type", block.get("type", "default")) != "default":
            raise ExportError(f"rope scaling {block!r} is not supported by the engine (plain RoPE only)")
    if FAULTS.active("hf_import_rope_theta_dropped"):  # the defect: the checkpoint's theta never read
        return 10000.0  # pragma: no mutate
    if isinstance(params, dict) and "rope_theta" in params:
        return float(params["rope_theta"])
    return float(hf.get("rope_theta", 10000.0))


def _default_context(family: Architecture) -> int:
    """transformers' default ``max_position_embeddings`` of the family, for a config.json without it."""
    if FAULTS.active("hf_import_qwen2_context_default_2048"):  # the defect: Llama's default for every family
        return 2048  # pragma: no mutate
    return family.default_context


def from_hf_config(hf: Mapping[str, Any]) -> ModelConfig:
    """A :class:`ModelConfig` from a Llama/Qwen2 ``config.json`` dict; unsupported features are errors."""
    model_type = hf.get("model_type")
    family = by_hf_model_type(model_type)
    if family is None:
        supported = ", ".join(a.hf_model_type for a in ARCHITECTURES.values())
        raise ExportError(f"unknown architecture `{model_type}`; supported model_type: {supported}")
    try:
        hidden, heads = int(hf["hidden_size"]), int(hf["num_attention_heads"])
        values: dict[str, Any] = {
            "architecture": family.name,
            "vocab_size": int(hf["vocab_size"]),
            "hidden_size": hidden,
            "num_hidden_layers": int(hf["num_hidden_layers"]),
            "num_attention_heads": heads,
            "num_key_value_heads": int(hf.get("num_key_value_heads") or heads),
            "intermediate_size": int(hf["intermediate_size"]),
            "max_position_embeddings": int(hf.get("max_position_embeddings", _default_context(family))),
            "rope_theta": _rope_theta(hf),
            "rms_norm_eps": float(hf.get("rms_norm_eps", 1e-6)),
            "attention_bias": family.attention_bias,
            "tie_word_embeddings": bool(hf.get("tie_word_embeddings", False)),
        }
    except KeyError as exc:
        raise ExportError(f"config.json lacks `{exc.args[0]}`") from None
    except ExportError:
        raise  # an unsupported setting says so itself; it is not a malformed value
    except (TypeError, ValueError) as exc:
        raise ExportError(f"config.json has a malformed value: {exc}") from None
    if hf.get("hidden_act", "silu") != "silu":
        raise ExportError(f"hidden_act {hf.get('hidden_act')!r} is not supported (SwiGLU with silu only)")
    refusal = family.hf_config_refusal(hf)
    if refusal is not None:
        raise ExportError(refusal)
    head_dim = hf.get("head_dim")
    if head_dim is not None and int(head_dim) != hidden // heads:
        raise ExportError(f"head_dim {head_dim} != hidden_size / num_attention_heads = {hidden // heads}")
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        v = hf.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            values[key] = v
    eos = _eos_list(hf.get("eos_token_id"), "config.json")
    if eos is not None and FAULTS.active("hf_config_single_eos_list_dropped"):  # the defect: [id] ignored
        eos = eos if len(eos) > 1 else None  # pragma: no mutate
    if eos is not None:  # a list, even of one id, stays a list: an export writes it back as it was
        values["eos_token_id"] = eos
    try:
        return ModelConfig.from_dict(values)
    except ValueError as exc:
        raise ExportError(f"config.json is inconsistent: {exc}") from None


def _eos_list(value: Any, where: str) -> tuple[int, ...] | None:
    """An ``eos_token_id`` that is a list of ids, as a tuple; None when it is not a list."""
    if not isinstance(value, list):
        return None
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ExportError(f"{where}: eos_token_id must be a token id or a non-empty list of them, got {value!r}")
    if FAULTS.active("hf_import_eos_list_dropped"):  # the defect: only a single id is understood
        return None  # pragma: no mutate
    return tuple(value)


def _generation_eos(folder: Path) -> int | tuple[int, ...] | None:
    """``generation_config.json``'s end-of-sequence id(s): what generation stops on, when present."""
    path = folder / "generation_config.json"
    if not path.is_file():
        return None
    value = _read_json(path).get("eos_token_id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _eos_list(value, str(path))  # a list, even of one id, stays a list (export writes it back)


def hf_state_dict(model: DecoderLM, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """The model's tensors under HF names, on CPU, contiguous; the tied head is left out."""
    state = {k: v.detach().to("cpu") for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop(TIED_HEAD, None)
    if FAULTS.active("hf_export_transposed_qk"):
        _scramble_qk(state)  # pragma: no mutate
    return {k: (v.to(dtype) if dtype is not None else v).contiguous() for k, v in state.items()}


def _scramble_qk(state: dict[str, torch.Tensor]) -> None:
    """The planted defect: q/k projections mixed up, in a way that still loads.

    With equal shapes (no GQA) q_proj and k_proj are swapped; otherwise q_proj (always square)
    is written transposed.
    """
    for name in [n for n in state if n.endswith("self_attn.q_proj.weight")]:  # pragma: no mutate
        k_name = name.replace("q_proj", "k_proj")  # pragma: no mutate
        q, k = state[name], state[k_name]  # pragma: no mutate
        if q.shape == k.shape:  # pragma: no mutate
            state[name], state[k_name] = k, q  # pragma: no mutate
        else:
            state[name] = q.t()  # pragma: no mutate


def _bos_is_stand_in(tok: EngineTokenizer) -> bool:
    """A tokenizer without a BOS of its own (Qwen2) gets its EOS in the role; it is never exported as a BOS."""
    if FAULTS.active("hf_export_unadded_bos_dropped"):  # pragma: no mutate
        return not tok.add_bos_token  # pragma: no mutate -- the defect: a BOS the tokenizer does not add goes unnamed
    return tok.bos_id == tok.eos_id and not tok.add_bos_token


def _exported_tokenizer_json(tok: EngineTokenizer) -> str:
    """``tokenizer.json`` as transformers should use it: a post-processor that starts every
    sequence with BOS exactly when the tokenizer's ``add_bos_token`` says so (the engine's own
    encode never applies it; ``PreTrainedTokenizerFast`` follows only the post-processor)."""
    if not tok.add_bos_token or FAULTS.active("hf_export_bos_rule_dropped"):
        return tok.hf_json()
    backend = Tokenizer.from_str(tok.hf_json())
    bos = tok.bos_token
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, tok.bos_id)]
    )
    return str(backend.to_str())


def _tokenizer_config(tok: EngineTokenizer, config: ModelConfig) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None if _bos_is_stand_in(tok) else tok.bos_token,
        "eos_token": tok.eos_token,
        "pad_token": tok.pad_token,
        # the tokenizer's own rule, so transformers starts a prompt with BOS exactly when the engine does
        "add_bos_token": tok.add_bos_token,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": config.max_position_embeddings,
    }
    if tok.chat_template is not None:
        out["chat_template"] = tok.chat_template
    return out


def _json_bytes(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def export_hf(
    model: DecoderLM, tokenizer: EngineTokenizer, out_dir: str | Path, dtype: torch.dtype | None = None
) -> Path:
    """Write ``model`` and ``tokenizer`` as a Hugging Face folder; each file is replaced atomically."""
    require_float_weights(model, "a Hugging Face export")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    # the checkpoint's own special ids as it holds them (an EOS list, even of one id, stays a list:
    # an import keeps what the source folder said), the tokenizer's for those it names none of
    config = with_special_ids(model.config, tokenizer)
    if FAULTS.active("hf_export_eos_from_tokenizer") and len(model.config.eos_ids) < 2:  # the defect
        config = config.replace(eos_token_id=tokenizer.eos_id)  # pragma: no mutate
    if _bos_is_stand_in(tokenizer) and config.bos_token_id == tokenizer.bos_id:
        config = config.replace(bos_token_id=None)  # a stand-in BOS is never exported as a BOS
    eos: int | list[int] | None = (
        list(config.eos_token_id) if isinstance(config.eos_token_id, tuple) else config.eos_token_id
    )
    if tokenizer.vocab_size > config.vocab_size:
        raise ExportError(f"tokenizer has {tokenizer.vocab_size} tokens but vocab_size is {config.vocab_size}")
    tensors = hf_state_dict(model, dtype)
    weight_dtype = next(iter(tensors.values())).dtype
    with atomic_file(out / "model.safetensors") as tmp:
        save_tensors(tensors, str(tmp), metadata={"format": "pt"})
    bos = None if _bos_is_stand_in(tokenizer) else tokenizer.bos_token
    special = {"bos_token": bos, "eos_token": tokenizer.eos_token, "pad_token": tokenizer.pad_token}
    generation = {
        "bos_token_id": config.bos_token_id,
        "eos_token_id": eos,
        "pad_token_id": config.pad_token_id,
        "do_sample": False,
    }
    write_atomic(out / "config.json", _json_bytes(to_hf_config(config, weight_dtype)))
    write_atomic(out / "tokenizer.json", _exported_tokenizer_json(tokenizer).encode("utf-8"))
    write_atomic(out / "tokenizer_config.json", _json_bytes(_tokenizer_config(tokenizer, config)))
    write_atomic(out / "special_tokens_map.json", _json_bytes(special))
    write_atomic(out / "generation_config.json", _json_bytes(generation))
    return out


# --- import ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SpecialNames:
    bos: str
    eos: str
    pad: str


def _token_name(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _special_names(folder: Path) -> _SpecialNames:
    names: dict[str, str | None] = {"bos": None, "eos": None, "pad": None}
    for fname in ("special_tokens_map.json", "tokenizer_config.json"):
        path = folder / fname
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ExportError(f"{path}: not valid JSON: {exc}") from None
        for role in names:
            names[role] = names[role] or _token_name(doc.get(f"{role}_token"))
    if not any(names.values()):
        # the defect: a folder naming no special tokens imports with EOS in every role
        if FAULTS.active("hf_import_default_specials_all_eos"):  # pragma: no mutate
            return _SpecialNames(EOS_TOKEN, EOS_TOKEN, EOS_TOKEN)  # pragma: no mutate
        return _SpecialNames(BOS_TOKEN, EOS_TOKEN, PAD_TOKEN)
    # Some families (Qwen) have no BOS or pad token; the EOS stands in for a missing one.
    eos = names["eos"] or EOS_TOKEN
    return _SpecialNames(bos=names["bos"] or eos, eos=eos, pad=names["pad"] or eos)


@dataclass(frozen=True)
class _TokenizerSettings:
    backend: Tokenizer  # tokenizer.json as the tokenizers library reads it, read once for every use
    add_bos_token: bool
    chat_template: str | None
    bos_in_post_processor: bool  # tokenizer.json's post-processor starts a sequence with BOS


def _read_backend(tokenizer_json: Path) -> Tokenizer:
    try:
        return Tokenizer.from_file(str(tokenizer_json))
    except Exception as exc:  # tokenizers raises a bare Exception for a file it cannot read
        raise ExportError(f"{tokenizer_json}: not a tokenizer the tokenizers library reads: {exc}") from None


def _adds_bos_in_post_processor(backend: Tokenizer, bos: str) -> bool:
    """Whether the tokenizer's post-processor puts ``bos`` before a single sequence: asked of the
    tokenizers library, which applies it, as transformers' fast tokenizers do."""
    if FAULTS.active("hf_import_post_processor_bos_missed"):  # the defect: only tokenizer_config is read
        return False  # pragma: no mutate
    bos_id = backend.token_to_id(bos)
    # no words at all: what comes back is what the post-processor adds
    added = backend.encode([], is_pretokenized=True, add_special_tokens=True).ids
    return bos_id is not None and next(iter(added), None) == bos_id


def _without_bos_template(tok: EngineTokenizer) -> EngineTokenizer:
    """``tok`` without the post-processor that adds BOS: the engine keeps that rule as
    ``add_bos_token`` (its encode never applies a post-processor), and export writes it back."""
    doc = json.loads(tok.hf_json())
    doc["post_processor"] = None
    return tok.with_backend(Tokenizer.from_str(json.dumps(doc)))


def _tokenizer_settings(folder: Path, bos: str) -> _TokenizerSettings:
    """The folder's tokenizer, ``add_bos_token`` and chat template as transformers reads them."""
    config_path = folder / "tokenizer_config.json"
    doc = _read_json(config_path) if config_path.is_file() else {}
    template: Any = doc.get("chat_template")
    if isinstance(template, list):  # named templates: transformers uses the one called "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():  # transformers >= 4.43 saves the template beside the config and prefers it
        template = jinja.read_text(encoding="utf-8")
    if template is not None and not isinstance(template, str):
        raise ExportError(f"{config_path}: chat_template must be a string")
    backend = _read_backend(folder / "tokenizer.json")
    post_bos = _adds_bos_in_post_processor(backend, bos)
    written = doc.get("add_bos_token")
    if written is not None and not isinstance(written, bool):
        raise ExportError(f"{config_path}: add_bos_token must be true or false, got {written!r}")
    # As transformers (5) reads these byte-level tokenizers (its TokenizersBackend): the
    # post-processor alone decides; add_bos_token in tokenizer_config.json and the tokenizer class
    # change nothing, also where add_bos_token says otherwise.
    add_bos = post_bos
    if FAULTS.active("hf_import_llama_class_implies_bos") and written is None:  # pragma: no mutate
        # the defect: transformers 4's Llama default
        add_bos = post_bos or "Llama" in str(doc.get("tokenizer_class"))  # pragma: no mutate
    return _TokenizerSettings(backend, add_bos, template, post_bos)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ExportError(f"{path.parent}: no {path.name}; not a Hugging Face model folder")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ExportError(f"{path}: not a JSON object")
    return doc


def _weight_files(folder: Path) -> dict[Path, frozenset[str] | None]:
    """Each weight file, with the tensor names the index places in it (None for a single file)."""
    single = folder / "model.safetensors"
    if single.is_file():
        return {single: None}
    index = folder / SHARD_INDEX
    if index.is_file():
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise ExportError(f"{index}: no weight_map")
        placed: dict[str, set[str]] = {}
        for name, shard in weight_map.items():
            placed.setdefault(str(shard), set()).add(str(name))
        return {folder / shard: frozenset(names) for shard, names in sorted(placed.items())}
    if any(folder.glob("*.bin")):
        raise ExportError(f"{folder}: only pickle (*.bin) weights found; the engine reads safetensors only")
    raise ExportError(f"{folder}: no model.safetensors")


def _read_weights(files: Mapping[Path, frozenset[str] | None]) -> dict[str, torch.Tensor]:
    """Every tensor of the weight files; a shard must hold exactly the tensors the index places
    in it, so no tensor is read from a copy the index does not name (or left out)."""
    state: dict[str, torch.Tensor] = {}
    for path, placed in files.items():
        if not path.is_file():
            raise ExportError(f"{path}: weight shard missing")
        try:
            read_header(path)  # names what the file is instead (JSON, pickle, zip, GGUF, truncated)
        except CheckpointError as exc:
            raise ExportError(str(exc)) from None
        try:
            with safe_open(str(path), framework="pt", device="cpu") as fh:
                names = set(fh.keys())
                if placed is not None and not FAULTS.active("hf_shard_copies_unchecked"):
                    _check_shard(path, names, placed, files)
                for name in sorted(names):
                    state[name] = fh.get_tensor(name)
        except ExportError:
            raise
        except Exception as exc:  # safetensors raises its own SafetensorError, and others below it
            raise ExportError(f"{path}: cannot read safetensors weights: {exc}") from None
    return state


def _check_shard(
    path: Path, names: set[str], placed: frozenset[str], files: Mapping[Path, frozenset[str] | None]
) -> None:
    """Refuse a shard whose tensors are not the ones the index places in it, naming the first."""
    index = path.parent / SHARD_INDEX
    stray, missing = sorted(names - placed), sorted(placed - names)
    if stray:
        elsewhere = [p.name for p, there in files.items() if there is not None and stray[0] in there]
        where = f"places it in {elsewhere[0]}" if elsewhere else "does not list it"
        raise ExportError(f"{path}: holds tensor `{stray[0]}`, but {index.name} {where}")
    if missing:
        raise ExportError(f"{path}: lacks tensor `{missing[0]}`, which {index.name} places there")


def import_hf(
    folder: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> LoadedCheckpoint:
    """Load a Llama/Qwen2 Hugging Face folder (safetensors weights + ``tokenizer.json``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportError(f"{folder}: not a directory")
    config = from_hf_config(_read_json(folder / "config.json"))
    tok_path = folder / "tokenizer.json"
    if not tok_path.is_file():
        raise ExportError(f"{folder}: no tokenizer.json")
    names = _special_names(folder)
    settings = _tokenizer_settings(folder, names.bos)
    try:
        tokenizer = EngineTokenizer(
            settings.backend,
            names.bos,
            names.eos,
            names.pad,
            add_bos_token=settings.add_bos_token,
            chat_template=settings.chat_template,
        )
    except TokenizerError as exc:
        raise ExportError(f"{tok_path}: {exc}") from None
    if settings.bos_in_post_processor:  # the engine keeps that rule as add_bos_token
        tokenizer = _without_bos_template(tokenizer)
    if tokenizer.vocab_size > config.vocab_size:
        raise ExportError(f"tokenizer has {tokenizer.vocab_size} tokens but vocab_size is {config.vocab_size}")
    generation_eos = _generation_eos(folder)
    if generation_eos is not None:  # what generation stops on wins over config.json's
        config = config.replace(eos_token_id=generation_eos)
    config = with_special_ids(config, tokenizer)
    if any(not 0 <= i < config.vocab_size for i in config.eos_ids):
        raise ExportError(f"eos_token_id {config.eos_token_id!r} is outside the vocabulary of {config.vocab_size}")
    state = _read_weights(_weight_files(folder))
    state = {k: v for k, v in state.items() if not k.endswith("rotary_emb.inv_freq")}
    if config.tie_word_embeddings and TIED_HEAD in state:
        if not torch.equal(state[TIED_HEAD], state.get(EMBEDDING, state[TIED_HEAD])):
            raise ExportError("tie_word_embeddings is true but lm_head.weight differs from the embedding")
        del state[TIED_HEAD]
    expected = expected_tensors(config)
    for name, shape in expected.items():
        if name not in state:
            raise ExportError(f"missing tensor `{name}`")
        if tuple(state[name].shape) != shape:
            got = _fmt_shape(tuple(state[name].shape))
            raise ExportError(f"tensor `{name}` has shape {got}, expected {_fmt_shape(shape)}")
    extra = sorted(set(state) - set(expected))
    if extra:
        raise ExportError(f"unexpected tensor `{extra[0]}`")
    if len({t.dtype for t in state.values()}) > 1:
        state = {k: v.float() for k, v in state.items()}
    # every tensor's name and shape were checked above: the state fits the architecture
    model = model_from_state(config, state, device=device, dtype=dtype)
    # the runtime that converts the file is the one that writes the engine checkpoint: make_manifest's
    manifest: dict[str, Any] = {
        **make_manifest(step=0),
        "imported_from": str(folder),
    }
    return LoadedCheckpoint(model, tokenizer, config, manifest, {}, folder)
