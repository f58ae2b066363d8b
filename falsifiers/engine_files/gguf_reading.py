"""GGUF files other tools wrote: what import makes of a key left out, and what it refuses by name.

A GGUF file from another converter may leave out a key the engine's export always writes, or carry
one the engine cannot honour.  Each file here is the engine's own export rewritten with gguf-py's
``GGUFReader`` and ``GGUFWriter`` (keys dropped, retyped or changed, tensors dropped, added or
reshaped), so every case differs from a file the engine reads correctly in one place only.

- A key left out is read as transformers reads the same file (``AutoConfig.from_pretrained`` with
  ``gguf_file=``: the token list's length for the vocabulary, the family's own context and RoPE
  base), the KV head count as llama.cpp reads it (the head count: transformers' Qwen2Config would
  give its default of 32, which no qwen2 file's tensors fit), and the tokenizer's defaults are the
  ones written out below.
- A file import cannot honour raises ``ExportError`` whose message holds the key, value or tensor
  written out for its case: never another exception, never a model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import ExportError
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.gguf_layout import read_gguf
from engine.tokenizer import EngineTokenizer
from falsifiers.engine_files.files import _transformers_rope_theta, _with_template
from falsifiers.shared.realistic_models import TOKENIZER_TEXTS, WEIGHT_STD, realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# Keys a converter may leave out, for the model and for its tokenizer.
OPTIONAL_MODEL_KEYS = (
    "{arch}.vocab_size", "{arch}.attention.head_count_kv", "{arch}.context_length", "{arch}.rope.freq_base",
    "{arch}.rope.dimension_count",
)  # fmt: skip
OPTIONAL_TOKENIZER_KEYS = (
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
    "tokenizer.chat_template", "tokenizer.ggml.token_type", "tokenizer.ggml.pre",
)  # fmt: skip
# a scaling type that means plain RoPE, as converters write it: llama's file says "", qwen2's "none"
NO_SCALING = {"llama": "", "qwen2": "none"}
# config fields transformers names as the engine does (transformers.integrations.ggml's table)
TRANSFORMERS_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings",
)  # fmt: skip


def rewrite_gguf(
    src: Path,
    dest: Path,
    *,
    drop: set[str] | frozenset[str] = frozenset(),
    values: dict[str, Any] | None = None,
    typed: dict[str, tuple[Any, Any]] | None = None,
    arch: str | None = None,
    tensors: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None,
) -> Path:
    """A copy of the float32 GGUF ``src`` with keys dropped, values replaced (same type), values
    written with another GGUF type (``typed``: key -> (value, GGUFValueType)), another architecture
    name, or its tensors (name -> array in gguf-py's order) edited by ``tensors``."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    reader = gguf.GGUFReader(str(src))
    writer = gguf.GGUFWriter(str(dest), arch or str(reader.fields["general.architecture"].contents()))
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in drop or key in (typed or {}):
            continue
        value = (values or {}).get(key, field.contents())
        kinds = list(field.types)
        writer.add_key_value(key, value, kinds[0], kinds[1] if len(kinds) > 1 else None)
    for key, (value, kind) in (typed or {}).items():
        writer.add_key_value(key, value, kind)
    arrays = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
    for t in reader.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.F32:
            raise ValueError(f"{src}: rewrite_gguf copies float32 files only ({t.name} is {t.tensor_type.name})")
    for name, array in (tensors(arrays) if tensors else arrays).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dest


def _exported(
    tmp_path: Path, tokenizer: EngineTokenizer, factory: Any, name: str, mha: bool = False
) -> tuple[Any, Path]:

    model = realistic_model(factory, 0, name)
    if mha:  # as many KV heads as heads: the one layout a file without head_count_kv can describe
        config = model.config.replace(num_key_value_heads=model.config.num_attention_heads)
        model = factory(0, std=WEIGHT_STD, config=config)
    return model, export_gguf(model, tokenizer, fresh_dir(tmp_path, f"gguf-{name}-") / "m.gguf", "f32")


@checker(
    observes=[
        "files", "imports_refused", "config_fields_compared", "transformers_mismatches", "tokenizer_defaults_differing",
        "texts_compared", "token_mismatches", "added_tokens_without_types",
    ],
    ids=["FALSIFY-IO-010"],
)  # fmt: skip
def gguf_defaults_as_transformers_reads(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """A llama and a tied qwen2 (rope_theta 1e6, eps 1e-5, as many KV heads as heads, ChatML
    template) exported as f32 GGUF,
    then written again without the optional keys: the config import gives equals transformers'
    reading of the same file field by field, and the tokenizer takes the defaults written out here."""
    # references (gguf, transformers): they load only in the checkers that use them
    import gguf
    import transformers

    tokenizer = _with_template(engine_tokenizer)
    out = dict.fromkeys(("files", "imports_refused", "config_fields_compared", "transformers_mismatches"), 0)
    out |= dict.fromkeys(("tokenizer_defaults_differing", "texts_compared", "token_mismatches"), 0)
    out["added_tokens_without_types"] = 0
    for name in ("llama", "qwen2"):
        _, full = _exported(tmp_path, tokenizer, tiny_model_factory, name, mha=True)
        keys = {k.format(arch=name) for k in OPTIONAL_MODEL_KEYS + OPTIONAL_TOKENIZER_KEYS}
        scaling = {f"{name}.rope.scaling.type": (NO_SCALING[name], gguf.GGUFValueType.STRING)}
        bare = rewrite_gguf(full, full.with_name("bare.gguf"), drop=keys, typed=scaling)
        out["files"] += 1
        try:
            ours = import_gguf(bare)
        except ExportError:
            out["imports_refused"] += 1
            continue
        theirs = transformers.AutoConfig.from_pretrained(str(bare.parent), gguf_file=bare.name)
        got = ours.config.to_dict()
        for key in TRANSFORMERS_FIELDS:
            out["config_fields_compared"] += 1
            out["transformers_mismatches"] += got[key] != getattr(theirs, key, None)
        # GGUF floats are float32: transformers keeps the float32's value, the engine its shortest decimal
        for ours_value, theirs_value in (
            (got["rope_theta"], _transformers_rope_theta(theirs)), (got["rms_norm_eps"], theirs.rms_norm_eps)
        ):  # fmt: skip
            out["config_fields_compared"] += 1
            out["transformers_mismatches"] += bool(np.float32(ours_value) != np.float32(theirs_value))
        # no head_count_kv: as many KV heads as heads, llama.cpp's rule and the only count the file's
        # tensors fit (transformers' Qwen2Config would give its own default, 32)
        out["config_fields_compared"] += 1
        out["transformers_mismatches"] += got["num_key_value_heads"] != got["num_attention_heads"]
        # the tokenizer's defaults: BOS and PAD are the EOS token (GPT-2's one <|endoftext|>), no BOS is
        # added, no chat template; the config names no BOS or PAD id the file did not
        tok = ours.tokenizer
        eos = engine_tokenizer.eos_token
        defaults = [tok.bos_token == eos, tok.pad_token == eos, tok.eos_token == eos, tok.add_bos_token is False]
        defaults += [tok.chat_template is None, got["bos_token_id"] is None, got["pad_token_id"] is None]
        defaults += [got["eos_token_id"] == engine_tokenizer.eos_id]
        out["tokenizer_defaults_differing"] += defaults.count(False)
        # without token types every token is a normal one: nothing is matched whole as an added token,
        # and text without special tokens is split as before
        out["added_tokens_without_types"] += len(tok.backend.get_added_tokens_decoder())
        for text in TOKENIZER_TEXTS:
            out["texts_compared"] += 1
            out["token_mismatches"] += tok.encode(text, add_bos=False) != tokenizer.encode(text, add_bos=False)
    return out


def _refusal_cases(config: Any, tokens: int) -> list[tuple[str, dict[str, Any], str]]:
    """(case, rewrite_gguf arguments, the text the error must hold) for a llama file of ``config``."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    t = gguf.GGUFValueType
    head_dim = config.hidden_size // config.num_attention_heads
    required = (
        "llama.block_count", "llama.embedding_length", "llama.attention.head_count", "llama.feed_forward_length",
        "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.tokens", "tokenizer.ggml.merges",
        "tokenizer.ggml.eos_token_id", "tokenizer.ggml.model",
    )  # fmt: skip
    cases: list[tuple[str, dict[str, Any], str]] = [(f"without {k}", {"drop": {k}}, f"`{k}`") for k in required]
    retyped = {
        "llama.block_count": ("2", t.STRING), "llama.context_length": (True, t.BOOL),
        "llama.rope.freq_base": ("1e6", t.STRING), "tokenizer.ggml.pre": (7, t.UINT32),
        "tokenizer.chat_template": (1, t.UINT32), "tokenizer.ggml.add_bos_token": (1, t.UINT32),
        "tokenizer.ggml.eos_token_id": (1.5, t.FLOAT32),
    }  # fmt: skip
    cases += [(f"{k} as {kind.name}", {"typed": {k: (v, kind)}}, f"`{k}`") for k, (v, kind) in retyped.items()]

    def drop_tensor(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: v for k, v in arrays.items() if k != "blk.0.attn_q.weight"}

    def extra_tensor(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {**arrays, "blk.7.ffn_gate.weight": np.zeros((4, 4), dtype=np.float32)}

    def misshapen(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, cols = arrays["blk.1.ffn_up.weight"].shape
        return {**arrays, "blk.1.ffn_up.weight": np.zeros((rows, cols + 1), dtype=np.float32)}

    cases += [
        ("architecture gptneox", {"arch": "gptneox"}, "`gptneox`"),
        ("partial rotary", {"values": {"llama.rope.dimension_count": head_dim // 2}},
         f"({head_dim // 2} of {head_dim} dims)"),
        ("rope scaling", {"values": {}, "typed": {"llama.rope.scaling.type": ("yarn", t.STRING)}}, "`yarn`"),
        ("sentencepiece model", {"values": {"tokenizer.ggml.model": "llama"}}, "`llama`"),
        ("unknown pre-tokenizer", {"values": {"tokenizer.ggml.pre": "mystery"}}, "`mystery`"),
        ("eos past the tokens", {"values": {"tokenizer.ggml.eos_token_id": tokens}}, f"eos_token_id {tokens}"),
        ("bos past the tokens", {"values": {"tokenizer.ggml.bos_token_id": tokens}}, f"bos_token_id {tokens}"),
        ("pad past the tokens", {"values": {"tokenizer.ggml.padding_token_id": tokens}}, f"padding_token_id {tokens}"),
        ("vocab below the tokens", {"values": {"llama.vocab_size": tokens - 1}}, f"vocab_size is {tokens - 1}"),
        ("heads not dividing", {"values": {"llama.attention.head_count": 3}, "drop": {"llama.rope.dimension_count"}},
         "inconsistent"),
        ("missing tensor", {"tensors": drop_tensor}, "blk.0.attn_q.weight"),
        ("unexpected tensor", {"tensors": extra_tensor}, "blk.7.ffn_gate.weight"),
        ("misshapen tensor", {"tensors": misshapen}, "up_proj"),
    ]  # fmt: skip
    return cases


@checker(
    observes=["cases", "refused", "refusals_naming_the_defect", "other_errors", "imported"],
    ids=["FALSIFY-IO-009"],
)
def gguf_files_refused_by_name(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """The engine's llama export rewritten 31 ways import cannot honour (a short token-type list and
    a merge without its space among them), a file that is not GGUF and one that does not exist:
    each must raise ExportError holding the text written out for its case."""

    model, good = _exported(tmp_path, _with_template(engine_tokenizer), tiny_model_factory, "llama")
    fields = read_gguf(good).fields
    tokens, merges = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.merges"]
    types = fields["tokenizer.ggml.token_type"]
    cases = _refusal_cases(model.config, len(tokens))
    cases += [
        ("short token types", {"values": {"tokenizer.ggml.token_type": types[:-1]}},
         f"{len(tokens) - 1} entries for {len(tokens)} tokens"),
        ("merge without a space", {"values": {"tokenizer.ggml.merges": [merges[0].replace(" ", ""), *merges[1:]]}},
         repr(merges[0].replace(" ", ""))),
    ]  # fmt: skip
    work = fresh_dir(tmp_path, "gguf-refusals-")
    paths: list[tuple[str, Path, str]] = []
    for i, (case, edit, text) in enumerate(cases):
        paths.append((case, rewrite_gguf(good, work / f"case-{i}.gguf", **edit), text))
    junk = work / "text.gguf"
    junk.write_text("not a GGUF file\n")
    paths += [("not GGUF", junk, "not a readable GGUF"), ("no file", work / "absent.gguf", "absent.gguf")]
    out = dict.fromkeys(("cases", "refused", "refusals_naming_the_defect", "other_errors", "imported"), 0)
    for _case, path, text in paths:
        out["cases"] += 1
        try:
            import_gguf(path)
        except ExportError as exc:
            out["refused"] += 1
            out["refusals_naming_the_defect"] += text in str(exc)
        except Exception:  # a traceback where a reason was due
            out["other_errors"] += 1
        else:
            out["imported"] += 1
    return out
