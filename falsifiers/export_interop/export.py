"""Exports are usable by the established tools: transformers, the GGUF layout, llama.cpp.

Each checker exports a fresh model itself (the faults act while exporting) and reads the result
back with the other tool, never with the engine's own reader alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.checkpoint import load_checkpoint, make_manifest, model_from_state, save_checkpoint
from engine.config import ModelConfig
from engine.generate import generate, pad_prompts
from engine.gguf_export import GgufDtype, export_checkpoint_gguf, export_gguf
from engine.gguf_layout import engine_state_from_gguf, read_gguf
from engine.hf_interop import export_hf, import_hf
from engine.model import DecoderLayer
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.realistic_models import (
    TOKENIZER_TEXTS,
    VARIANTS,
    WEIGHT_STD,
    expected_gguf_content,
    realistic_model,
    variant_config,
)
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(observes=["max_abs_logit_diff", "logit_scale", "variants_compared"], ids=["FALSIFY-EXPORT-001"])
def hf_logits(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Export each variant to a Hugging Face folder, load it with ``AutoModelForCausalLM``, compare logits."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    gen = torch.Generator().manual_seed(seed)
    worst = 0.0
    scale = 0.0
    for name in VARIANTS:
        model = tiny_model_factory(seed, std=WEIGHT_STD, config=variant_config(name))
        folder = export_hf(model, engine_tokenizer, fresh_dir(tmp_path, f"hf-{name}-"))
        hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        ids = torch.randint(3, engine_tokenizer.vocab_size, (2, 24), generator=gen)
        with torch.inference_mode():
            ours = model(ids).logits.float()
            theirs = hf(input_ids=ids).logits.float()
        worst = max(worst, float((ours - theirs).abs().max()))
        scale = max(scale, float(ours.abs().mean()))
    return {"max_abs_logit_diff": worst, "logit_scale": scale, "variants_compared": len(VARIANTS)}


PAD_LEFT = 4


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


@checker(
    observes=[
        "module_max_abs_diff",
        "decode_max_abs_diff",
        "logit_scale",
        "positions_compared",
        "decode_steps",
        "fused_layers",
        "decoder_layers",
    ],
    ids=["FALSIFY-EXPORT-004", "FALSIFY-EXPORT-005"],
)
def realistic_hf_agreement(
    tmp_path: Path,
    engine_tokenizer: EngineTokenizer,
    tiny_model_factory: Any,
    seed: int = 0,
    prompt_len: int = 16,
    new_tokens: int = 12,
) -> dict[str, Any]:
    """Engine vs transformers on realistic configs (``REALISTIC``, norm weights N(1, 0.3), GQA),
    a left-padded batch: the module forward's logits at every real position, and the fused
    decoding path's per-step logits against transformers' forward over the generated sequence.
    ``fused_layers`` counts the decoder layers that qualify for the fused path, so a fused path
    that silently falls back to the module forward cannot pass as "fused decoding agrees"."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    gen = torch.Generator().manual_seed(seed)
    module_diff = decode_diff = scale = 0.0
    positions = steps = fused = layers = 0
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, seed, name)
        decoder_layers = [m for m in model.modules() if isinstance(m, DecoderLayer)]
        layers += len(decoder_layers)
        fused += sum(layer.fuse() is not None for layer in decoder_layers)
        folder = export_hf(model, engine_tokenizer, fresh_dir(tmp_path, f"hf-real-{name}-"))
        hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        ids = torch.randint(3, engine_tokenizer.vocab_size, (2, prompt_len), generator=gen)
        mask = torch.ones_like(ids)
        mask[1, :PAD_LEFT] = 0
        ids[1, :PAD_LEFT] = 0
        real = mask.bool()
        with torch.inference_mode():
            ours = model(ids, attention_mask=mask).logits.float()
            theirs = hf(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits.float()
            module_diff = max(module_diff, float((ours - theirs)[real].abs().max()))
            scale = max(scale, float(ours[real].abs().mean()))
            positions += int(real.sum())
            out = generate(model, ids, mask, max_new_tokens=new_tokens, return_logits=True, eos_token_id=[])
            assert out.scores is not None
            full_mask = torch.cat([mask, torch.ones(2, out.scores.shape[1], dtype=mask.dtype)], dim=1)
            replay = hf(input_ids=out.sequences, attention_mask=full_mask, position_ids=_positions(full_mask))
            # step t was chosen from the logits at the position before its token
            theirs_steps = replay.logits.float()[:, prompt_len - 1 : prompt_len - 1 + out.scores.shape[1]]
            decode_diff = max(decode_diff, float((out.scores - theirs_steps).abs().max()))
            steps += out.scores.shape[1]
    return {
        "module_max_abs_diff": module_diff,
        "decode_max_abs_diff": decode_diff,
        "logit_scale": scale,
        "positions_compared": positions,
        "decode_steps": steps,
        "fused_layers": fused,
        "decoder_layers": layers,
    }


@checker(
    observes=["tensors_expected", "tensors_missing", "tensors_extra", "tensors_mismatched", "max_abs_diff"],
    ids=["FALSIFY-EXPORT-006"],
)
def gguf_content(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Export llama and qwen2 variants to GGUF (f32), read every tensor back with the ``gguf``
    package's reader and compare it, by name and value, with the model's tensor mapped by hand."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    expected_n = missing = extra = mismatched = 0
    worst = 0.0
    for name in VARIANTS:
        model = tiny_model_factory(seed, std=WEIGHT_STD, config=variant_config(name))
        path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, f"gguf-{name}-") / "model.gguf")
        reader = gguf.GGUFReader(str(path))
        written = {
            t.name: torch.from_numpy(np.array(t.data).reshape([int(d) for d in reversed(t.shape)]).astype(np.float32))
            for t in reader.tensors
        }
        expected = expected_gguf_content(model)
        expected_n += len(expected)
        missing += len(set(expected) - set(written))
        extra += len(set(written) - set(expected))
        for key in set(expected) & set(written):
            if written[key].shape != expected[key].shape:
                mismatched += 1
                continue
            diff = float((written[key] - expected[key]).abs().max())
            worst = max(worst, diff)
            mismatched += diff != 0.0
    return {
        "tensors_expected": expected_n,
        "tensors_missing": missing,
        "tensors_extra": extra,
        "tensors_mismatched": mismatched,
        "max_abs_diff": worst,
    }


def expected_gguf_metadata(model: Any, tokenizer: EngineTokenizer, dtype: str) -> dict[str, Any]:
    """The GGUF keys llama.cpp reads to rebuild the model, from the config, written out here."""
    cfg = model.config
    arch = "qwen2" if cfg.attention_bias else "llama"
    return {
        "general.architecture": arch,
        # llama.cpp's LLAMA_FTYPE_ALL_F32 / MOSTLY_F16 / MOSTLY_Q4_0 / MOSTLY_Q8_0
        "general.file_type": {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7}[dtype],
        f"{arch}.context_length": cfg.max_position_embeddings,
        f"{arch}.embedding_length": cfg.hidden_size,
        f"{arch}.block_count": cfg.num_hidden_layers,
        f"{arch}.feed_forward_length": cfg.intermediate_size,
        f"{arch}.attention.head_count": cfg.num_attention_heads,
        f"{arch}.attention.head_count_kv": cfg.num_key_value_heads,
        f"{arch}.rope.dimension_count": cfg.hidden_size // cfg.num_attention_heads,
        f"{arch}.rope.freq_base": cfg.rope_theta,
        f"{arch}.attention.layer_norm_rms_epsilon": cfg.rms_norm_eps,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "gpt-2",  # the byte-level BPE split llama.cpp must apply
        "tokenizer.ggml.bos_token_id": tokenizer.bos_id,
        "tokenizer.ggml.eos_token_id": tokenizer.eos_id,
        "tokenizer.ggml.padding_token_id": tokenizer.pad_id,
        "tokenizer.ggml.merges": len(tokenizer.merges()),
    }


def _field_value(field: Any) -> Any:
    value = field.contents()
    return len(value) if isinstance(value, list) else value


@checker(
    observes=[
        "fields_checked",
        "field_mismatches",
        "f16_tensors",
        "f16_max_rel_err",
        "f32_tensors_exact",
        "engine_reimports_exact",
    ],
    ids=["FALSIFY-EXPORT-008"],
)
def gguf_metadata(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Export realistic llama and qwen2 models as f32 and as f16 GGUF files and read back every key
    llama.cpp needs (file type, shape, rope, eps, tokenizer) and every tensor: 2-D weights of an f16
    file are stored as F16 within half-precision rounding, an f32 file holds the exact values.  The
    f32 files are written from a saved checkpoint (the CLI's path), and the engine's own GGUF reader
    must give back the model's state dict exactly (names and q/k permutation undone)."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    checked = mismatches = f16_tensors = f32_exact = reimported = 0
    worst = 0.0
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, seed, name)
        expected_tensors = expected_gguf_content(model)
        for dtype in ("f32", "f16"):
            folder = fresh_dir(tmp_path, f"gguf-{name}-{dtype}-")
            if dtype == "f32":  # the CLI's path: from a saved checkpoint
                ckpt = save_checkpoint(folder / "model.safetensors", model, engine_tokenizer, make_manifest(step=0))
                path = export_checkpoint_gguf(ckpt, folder / "m.gguf", dtype)
                state = engine_state_from_gguf(read_gguf(path), model.config)
                own = {k: v for k, v in model.state_dict().items() if k in state}
                reimported += len(own) == len(state) and all(torch.equal(state[k], v.float()) for k, v in own.items())
            else:
                path = export_gguf(model, engine_tokenizer, folder / "m.gguf", dtype)
            reader = gguf.GGUFReader(str(path))
            for key, want in expected_gguf_metadata(model, engine_tokenizer, dtype).items():
                checked += 1
                field = reader.fields.get(key)
                got = None if field is None else _field_value(field)
                same = (
                    got == want
                    if not isinstance(want, float)
                    else got is not None and abs(got - want) <= 1e-6 * abs(want)
                )
                mismatches += not same
            for t in reader.tensors:
                data = torch.from_numpy(np.array(t.data).astype(np.float32)).reshape(
                    [int(d) for d in reversed(t.shape)]
                )
                want_t = expected_tensors.get(t.name)
                if want_t is None or want_t.shape != data.shape:
                    mismatches += 1
                    continue
                if dtype == "f32":
                    f32_exact += bool(torch.equal(data, want_t))
                elif data.dim() == 2:
                    f16_tensors += t.tensor_type == gguf.GGMLQuantizationType.F16
                    rel = float((data - want_t).abs().max() / want_t.abs().max().clamp(min=1e-12))
                    worst = max(worst, rel)
    return {
        "fields_checked": checked,
        "field_mismatches": mismatches,
        "f16_tensors": f16_tensors,
        "f16_max_rel_err": worst,
        "f32_tensors_exact": f32_exact,
        "engine_reimports_exact": reimported,
    }


ROUND_TRIP_FIELDS = (
    "architecture",
    "rope_theta",
    "rms_norm_eps",
    "num_key_value_heads",
    "tie_word_embeddings",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "vocab_size",
)


@checker(
    observes=["config_mismatches", "max_abs_logit_diff", "tied_heads_shared", "tied_variants", "variants"],
    ids=["FALSIFY-EXPORT-007"],
)
def hf_round_trip(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Export realistic llama and qwen2 (tied) models to Hugging Face folders and import them back
    with the engine: every config field a checkpoint sets survives, the logits are identical, and a
    tied head is the embedding again (one storage), not a copy."""

    gen = torch.Generator().manual_seed(seed)
    mismatches = tied = tied_variants = 0
    worst = 0.0
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, seed, name)
        folder = export_hf(model, engine_tokenizer, fresh_dir(tmp_path, f"hf-trip-{name}-"))
        loaded = import_hf(folder)
        # the special ids are the tokenizer's: what export writes into config.json
        special = {"bos_token_id": engine_tokenizer.bos_id, "eos_token_id": engine_tokenizer.eos_id}
        special["pad_token_id"] = engine_tokenizer.pad_id
        before = {f: special.get(f, getattr(model.config, f)) for f in ROUND_TRIP_FIELDS}
        after = {f: getattr(loaded.config, f) for f in ROUND_TRIP_FIELDS}
        mismatches += sum(1 for f in ROUND_TRIP_FIELDS if before[f] != after[f])
        ids = torch.randint(3, engine_tokenizer.vocab_size, (2, 20), generator=gen)
        with torch.inference_mode():
            worst = max(worst, float((model(ids).logits - loaded.model.eval()(ids).logits).abs().max()))
        if model.config.tie_word_embeddings:
            tied_variants += 1
            head = loaded.model.lm_head.weight
            embed = loaded.model.model.embed_tokens.weight
            tied += int(head.data_ptr() == embed.data_ptr())
    return {
        "config_mismatches": mismatches,
        "max_abs_logit_diff": worst,
        "tied_heads_shared": tied,
        "tied_variants": tied_variants,
        "variants": len(VARIANTS),
    }


def expected_gguf_tensors(config: ModelConfig) -> int:
    """token_embd + output_norm, 9 tensors per block (+3 q/k/v biases for qwen2), output unless tied."""
    per_block = 9 + (3 if config.attention_bias else 0)
    return 2 + per_block * config.num_hidden_layers + (0 if config.tie_word_embeddings else 1)


@checker(
    observes=[
        "vocab_size",
        "gguf_tokens",
        "qwen2_gguf_tokens",
        "arch_is_lowercase",
        "tensor_count",
        "expected_tensor_count",
        "qwen2_tensor_count",
        "qwen2_expected_tensor_count",
    ],
    ids=["FALSIFY-EXPORT-002"],
)
def gguf_layout(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, extra_vocab: int, seed: int = 0
) -> dict[str, Any]:
    """Export both variants with ``extra_vocab`` embedding rows beyond the tokenizer; read the files back.

    The read-back uses the ``gguf`` package's reader; observations without a prefix are the
    llama variant's.
    """
    vocab_size = engine_tokenizer.vocab_size + extra_vocab
    obs: dict[str, Any] = {"vocab_size": vocab_size}
    lowercase = True
    for name in VARIANTS:
        config = variant_config(name, vocab_size=vocab_size)
        model = tiny_model_factory(seed, config=config)
        path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, f"gguf-{name}-") / "model.gguf")
        contents = read_gguf(path)
        arch = str(contents.fields.get("general.architecture", ""))
        lowercase = lowercase and bool(arch) and arch == arch.lower()
        prefix = "" if name == "llama" else f"{name}_"
        obs[f"{prefix}gguf_tokens"] = len(contents.fields.get("tokenizer.ggml.tokens") or [])
        obs[f"{prefix}tensor_count"] = len(contents.tensors)
        obs[f"{prefix}expected_tensor_count"] = expected_gguf_tensors(config)
    obs["arch_is_lowercase"] = int(lowercase)
    return obs


@checker(observes=["mismatched_tokens", "tokens_compared"], ids=["FALSIFY-EXPORT-003"])
def llama_cpp_tokens(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, n_tokens: int, seed: int = 0
) -> dict[str, Any]:
    """Greedy tokens from llama.cpp (llama-cpp-python) on the GGUF export against the engine's."""
    # optional: llama-cpp-python is installed for the real-model contracts only
    from llama_cpp import Llama

    model = tiny_model_factory(seed, std=WEIGHT_STD)
    path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, "gguf-") / "model.gguf")
    prompt = engine_tokenizer.encode("def main():\n    return", add_bos=True)
    ours = generate(model, torch.tensor([prompt]), max_new_tokens=n_tokens, eos_token_id=[]).new_tokens[0]
    llm = Llama(model_path=str(path), n_ctx=model.config.max_position_embeddings, verbose=False, seed=seed)
    theirs: list[int] = []
    for token in llm.generate(prompt, temp=0.0, top_k=1, top_p=1.0, reset=True):
        theirs.append(int(token))
        if len(theirs) == n_tokens:
            break
    mismatched = sum(1 for a, b in zip(ours, theirs, strict=False) if a != b) + abs(len(ours) - len(theirs))
    return {"mismatched_tokens": mismatched, "tokens_compared": len(ours)}


@checker(
    observes=[
        "eos_ids_imported",
        "generated_before_stop",
        "stop_step",
        "eos_ids_after_checkpoint",
        "eos_ids_reexported",
    ],
    ids=["FALSIFY-EXPORT-009"],
)
def multi_eos_round_trip(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, stop_step: int = 3, seed: int = 0
) -> dict[str, Any]:
    """An instruct-style HF folder whose config.json and generation_config.json list two EOS ids
    (the tokenizer's, and the token greedy decoding emits at ``stop_step``): the import keeps both,
    greedy generation with the model's own EOS stops at ``stop_step``, and both ids survive a save to
    an engine checkpoint and a second export."""

    model = tiny_model_factory(seed, std=WEIGHT_STD)
    ids, mask = pad_prompts([engine_tokenizer.encode("def main(args):\n    return", add_bos=True)], 0)
    free = generate(model, ids, mask, max_new_tokens=12, eos_token_id=[])
    second = free.new_tokens[0][stop_step - 1]
    eos = [engine_tokenizer.eos_id, second]
    folder = export_hf(model, engine_tokenizer, fresh_dir(tmp_path, "hf-eos-"))
    for name in ("config.json", "generation_config.json"):  # as a Llama 3 instruct checkpoint lists them
        data = json.loads((folder / name).read_text())
        data["eos_token_id"] = eos
        (folder / name).write_text(json.dumps(data))
    imported = import_hf(folder)
    out = generate(imported.model, ids, mask, max_new_tokens=12)  # the model's own EOS ids
    row = out.new_tokens[0]
    ckpt = save_checkpoint(
        fresh_dir(tmp_path, "ckpt-eos-") / "m.safetensors", imported.model, imported.tokenizer, make_manifest(step=0)
    )
    reloaded = load_checkpoint(ckpt)
    again = export_hf(reloaded.model, reloaded.tokenizer, fresh_dir(tmp_path, "hf-eos-again-"))
    written = json.loads((again / "generation_config.json").read_text()).get("eos_token_id")
    return {
        "eos_ids_imported": len(set(imported.model.config.eos_ids) & set(eos)),
        "generated_before_stop": len(row),
        "stop_step": stop_step,
        "eos_ids_after_checkpoint": len(set(reloaded.config.eos_ids) & set(eos)),
        "eos_ids_reexported": len(set(written) & set(eos)) if isinstance(written, list) else int(written in eos),
    }


# One scale per 32 weights: Q8_0 rounds to absmax/127 (error at most half a step), Q4_0 to steps of
# absmax/8 over [-8, 7] (the clamped extreme loses up to one step).  The scale itself is stored as
# float16, which adds up to 2**-11 of the block's absmax.
QUANT_STEP = {"q8_0": (127.0, 0.5), "q4_0": (8.0, 1.0)}
QUANT_BLOCK = 32
F16_SCALE_SLACK = 2.0**-11


def _block_step_ratio(original: torch.Tensor, restored: torch.Tensor, dtype: str) -> float:
    """The largest error as a share of what the block's quantization step allows (<= 1 holds)."""
    levels, share = QUANT_STEP[dtype]
    rows = original.reshape(-1, QUANT_BLOCK)
    err = (restored.reshape(-1, QUANT_BLOCK) - rows).abs()
    absmax = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-12)
    allowed = absmax / levels * share + absmax * F16_SCALE_SLACK
    return float((err / allowed).max())


@checker(
    observes=[
        "files_checked",
        "file_type_mismatches",
        "quantized_tensors",
        "norms_not_f32",
        "q8_0_max_step_ratio",
        "q4_0_max_step_ratio",
        "q8_0_rel_logit_err",
        "q4_0_rel_logit_err",
    ],
    ids=["FALSIFY-EXPORT-010"],
)
def gguf_quantized(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Export realistic llama and qwen2 models as Q8_0 and Q4_0 GGUF files; read them back with the
    gguf package: the declared file type, which tensors are quantized (every matrix of whole
    32-blocks) and which stay F32 (norms and biases, as llama.cpp needs), every weight within its
    block's quantization step, and the logits of the model the file encodes against the original's."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    out: dict[str, Any] = {"files_checked": 0, "file_type_mismatches": 0, "quantized_tensors": 0, "norms_not_f32": 0}
    ratios = {"q8_0": 0.0, "q4_0": 0.0}
    logit_errs = {"q8_0": 0.0, "q4_0": 0.0}
    gen = torch.Generator().manual_seed(seed)
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, seed, name)
        expected = expected_gguf_content(model)
        ids = torch.randint(3, engine_tokenizer.vocab_size, (2, 16), generator=gen)
        with torch.inference_mode():
            reference = model(ids).logits.float()
        quantized: tuple[tuple[GgufDtype, Any], ...] = (
            ("q8_0", gguf.GGMLQuantizationType.Q8_0),
            ("q4_0", gguf.GGMLQuantizationType.Q4_0),
        )
        for dtype, qtype in quantized:
            path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, f"gguf-{name}-{dtype}-") / "m.gguf", dtype)
            out["files_checked"] += 1
            contents = read_gguf(path)
            want_type = expected_gguf_metadata(model, engine_tokenizer, dtype)["general.file_type"]
            out["file_type_mismatches"] += contents.field("general.file_type") != want_type
            for tensor_name, stored in contents.tensor_types.items():
                original = expected[tensor_name]
                if original.dim() == 1:
                    out["norms_not_f32"] += stored != "F32"
                    continue
                if stored == qtype.name:
                    out["quantized_tensors"] += 1
                    restored = torch.from_numpy(np.ascontiguousarray(contents.tensors[tensor_name], dtype=np.float32))
                    ratios[dtype] = max(ratios[dtype], _block_step_ratio(original, restored, dtype))
            state = engine_state_from_gguf(contents, model.config)
            rebuilt = model_from_state(model.config, state).eval()
            with torch.inference_mode():
                logits = rebuilt(ids).logits.float()
            rel = float((logits - reference).abs().max() / reference.abs().max())
            logit_errs[dtype] = max(logit_errs[dtype], rel)
    for key in ratios:
        out[f"{key}_max_step_ratio"] = ratios[key]
        out[f"{key}_rel_logit_err"] = logit_errs[key]
    return out


@checker(
    observes=["gguf_fields_checked", "gguf_field_mismatches", "gguf_add_bos_token"],
    ids=["FALSIFY-EXPORT-011"],
)
def gguf_tokenizer_fields(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """Every tokenizer field llama.cpp reads from an exported GGUF, read back with gguf-py, against
    the engine tokenizer's own values written out here: BOS rule, special ids, vocabulary size,
    merges and token types (control tokens marked as such)."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    model = realistic_model(tiny_model_factory, 0, "llama")
    path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, "gguf-tok-") / "model.gguf")
    reader = gguf.GGUFReader(str(path))
    fields = {name: _field_value(field) for name, field in reader.fields.items()}
    control = int(gguf.TokenType.CONTROL)
    specials = {engine_tokenizer.bos_id, engine_tokenizer.eos_id, engine_tokenizer.pad_id}
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    expected = {
        "tokenizer.ggml.add_bos_token": engine_tokenizer.add_bos_token,
        "tokenizer.ggml.bos_token_id": engine_tokenizer.bos_id,
        "tokenizer.ggml.eos_token_id": engine_tokenizer.eos_id,
        "tokenizer.ggml.padding_token_id": engine_tokenizer.pad_id,
        "tokenizer.ggml.tokens": model.config.vocab_size,
        "tokenizer.ggml.merges": len(engine_tokenizer.merges()),
    }
    mismatches = sum(1 for key, want in expected.items() if fields.get(key) != want)
    mismatches += sum(1 for i in specials if types[i] != control)
    return {
        "gguf_fields_checked": len(expected) + len(specials),
        "gguf_field_mismatches": mismatches,
        "gguf_add_bos_token": bool(fields.get("tokenizer.ggml.add_bos_token")),
    }


@checker(
    observes=["texts", "ids_mismatched", "decode_mismatched", "special_mismatches", "pair_mismatched"],
    ids=["FALSIFY-EXPORT-012"],
)
def hf_tokenizer_read_back(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """The tokenizer of an exported Hugging Face folder as transformers reads it
    (``AutoTokenizer.from_pretrained``): the ids it gives a prompt (BOS by the tokenizer's own rule,
    as the engine's ``encode_prompt``), its decode (as the engine's, and back to the text without the
    special tokens), and its special tokens and ids."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    model = realistic_model(tiny_model_factory, 0, "llama")
    folder = export_hf(model, engine_tokenizer, fresh_dir(tmp_path, "hf-tok-"))
    hf = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids_bad = decode_bad = 0
    for text in TOKENIZER_TEXTS:
        ours = engine_tokenizer.encode_prompt(text)
        theirs = list(hf(text)["input_ids"])
        ids_bad += ours != theirs
        decode_bad += hf.decode(theirs) != engine_tokenizer.decode(ours)  # special tokens shown alike
        decode_bad += hf.decode(theirs, skip_special_tokens=True) != text
    # a pair of texts, as transformers' Llama tokenizers template it: BOS A BOS B, types 0 then 1
    first, second = (engine_tokenizer.encode(t) for t in TOKENIZER_TEXTS[:2])
    pair = hf(TOKENIZER_TEXTS[0], TOKENIZER_TEXTS[1], return_token_type_ids=True)
    bos = engine_tokenizer.bos_id
    pair_mismatched = int(
        list(pair["input_ids"]) != [bos, *first, bos, *second]
        or list(pair["token_type_ids"]) != [0] * (1 + len(first)) + [1] * (1 + len(second))
    )
    want = {
        "bos": (engine_tokenizer.bos_token, engine_tokenizer.bos_id),
        "eos": (engine_tokenizer.eos_token, engine_tokenizer.eos_id),
        "pad": (engine_tokenizer.pad_token, engine_tokenizer.pad_id),
    }
    got = {
        "bos": (hf.bos_token, hf.bos_token_id),
        "eos": (hf.eos_token, hf.eos_token_id),
        "pad": (hf.pad_token, hf.pad_token_id),
    }
    return {
        "texts": len(TOKENIZER_TEXTS),
        "ids_mismatched": int(ids_bad),
        "decode_mismatched": int(decode_bad),
        "special_mismatches": sum(1 for k in want if want[k] != got[k]),
        "pair_mismatched": pair_mismatched,
    }
