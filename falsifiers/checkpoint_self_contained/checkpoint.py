"""Checkpoints are self-contained: architecture, tokenizer and exact weights travel in one file.

Each checker saves a fresh checkpoint itself (faults act while saving), then reads it back the
way a user would: through the header, or through :func:`engine.checkpoint.load_checkpoint` from
a directory that holds nothing else.
"""

from __future__ import annotations

import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from engine.checkpoint import load_checkpoint, make_manifest, read_header, save_checkpoint
from engine.config import ARCHITECTURE_KEYS, preset
from engine.errors import CheckpointError
from engine.generate import generate, pad_prompts
from engine.model import DecoderLM
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPTS = ("def main(args):\n    return", "import os\n")


def _save(base: Path, model: DecoderLM, tokenizer: EngineTokenizer, seed: int) -> Path:
    path = fresh_dir(base) / "model.safetensors"
    return save_checkpoint(path, model, tokenizer, make_manifest(step=0, seed=seed))


@checker(observes=["arch_keys_expected", "missing_arch_keys"], ids=["FALSIFY-CKPT-001"])
def arch_keys(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Count the architecture keys missing from a freshly written checkpoint's metadata."""
    path = _save(tmp_path, tiny_model_factory(seed), engine_tokenizer, seed)
    _, meta = read_header(path)
    return {
        "arch_keys_expected": len(ARCHITECTURE_KEYS),
        "missing_arch_keys": sum(1 for key in ARCHITECTURE_KEYS if key not in meta),
    }


@checker(
    observes=["has_tokenizer", "has_merges", "special_ids_match", "vocab_matches"],
    ids=["FALSIFY-CKPT-002"],
)
def tokenizer_embedded(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Read the tokenizer back from the checkpoint's metadata alone and compare it with the trained one."""
    path = _save(tmp_path, tiny_model_factory(seed), engine_tokenizer, seed)
    _, meta = read_header(path)
    text = meta.get("tokenizer")
    if text is None:
        return {"has_tokenizer": 0, "has_merges": 0, "special_ids_match": 0, "vocab_matches": 0}
    embedded = EngineTokenizer.from_json(text)
    inner = json.loads(text)["tokenizer"]
    ids = ("bos_id", "eos_id", "pad_id")
    return {
        "has_tokenizer": 1,
        "has_merges": int(len(inner["model"].get("merges", [])) > 0 and embedded.merges() == engine_tokenizer.merges()),
        "special_ids_match": int(all(getattr(embedded, k) == getattr(engine_tokenizer, k) for k in ids)),
        "vocab_matches": int(embedded.tokens() == engine_tokenizer.tokens()),
    }


@checker(observes=["loaded", "generated_tokens"], ids=["FALSIFY-CKPT-003"])
def standalone_generate(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, max_new_tokens: int, seed: int = 0
) -> dict[str, Any]:
    """Copy the checkpoint alone into an empty directory, load it and generate with its own tokenizer.

    A load that fails with a :class:`CheckpointError` is the measured outcome (``loaded == 0``), not
    a harness error: that is exactly what a checkpoint missing a part must do.
    """
    written = _save(tmp_path, tiny_model_factory(seed), engine_tokenizer, seed)
    alone = fresh_dir(tmp_path, "alone-")
    copied = Path(shutil.copy2(written, alone / written.name))
    try:
        loaded = load_checkpoint(copied)
    except CheckpointError:
        return {"loaded": 0, "generated_tokens": 0}
    prompts = [loaded.tokenizer.encode(p, add_bos=True) for p in PROMPTS]
    input_ids, mask = pad_prompts(prompts, loaded.tokenizer.pad_id)
    # No EOS id: the run must produce exactly max_new_tokens per row.
    out = generate(loaded.model, input_ids, mask, max_new_tokens=max_new_tokens, eos_token_id=[])
    counts = [len(t) for t in out.new_tokens]
    return {"loaded": 1, "generated_tokens": min(counts)}


@checker(observes=["max_abs_logit_diff", "saved_dtype_matches"], ids=["FALSIFY-CKPT-004"])
def roundtrip_logits(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Logits of the model before saving and after loading, on the same left-padded batch."""
    model = tiny_model_factory(seed, std=0.2)
    path = _save(tmp_path, model, engine_tokenizer, seed)
    loaded = load_checkpoint(path)
    prompts = [engine_tokenizer.encode(p, add_bos=True) for p in PROMPTS]
    input_ids, mask = pad_prompts(prompts, engine_tokenizer.pad_id)
    with torch.inference_mode():
        before = model(input_ids, attention_mask=mask).logits.float()
        after = loaded.model(input_ids, attention_mask=mask).logits.float()
    dtypes_before = {t.dtype for t in model.state_dict().values()}
    dtypes_after = {t.dtype for t in loaded.model.state_dict().values()}
    return {
        "max_abs_logit_diff": float((before - after).abs().max()),
        "saved_dtype_matches": int(dtypes_before == dtypes_after),
    }


# Configs real checkpoints have and the tiny preset does not: one KV head (multi-query attention),
# a single layer, Qwen2/Llama-3 rope and eps, q/k/v biases with a tied head, and plain multi-head
# attention (as many KV heads as query heads: the attention path without grouped KV).
CONFIG_VARIANTS: dict[str, dict[str, Any]] = {
    "mha": {"num_key_value_heads": 4},
    "mqa-one-layer": {
        "num_key_value_heads": 1,
        "num_hidden_layers": 1,
        "rope_theta": 1_000_000.0,
        "rms_norm_eps": 1e-5,
    },
    "qwen2-tied": {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True, "rope_theta": 1e6},
}


@checker(
    observes=[
        "fields_compared",
        "field_mismatches",
        "special_ids_from_tokenizer",
        "tied_heads_shared",
        "dtype_loads",
        "max_abs_logit_diff",
        "manifests_loaded",
    ],
    ids=["FALSIFY-CKPT-005"],
)
def config_round_trip(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Save models of each variant with no special ids in their config, load them back: every
    config field is what was saved, the special ids are the embedded tokenizer's, a tied head is
    the embedding again (one storage), ``dtype=bfloat16`` loads every float tensor as bf16, and the
    loaded model computes the saved one's logits exactly."""

    compared = mismatches = from_tokenizer = tied = dtype_ok = manifests = 0
    worst = 0.0
    prompts = [engine_tokenizer.encode(p, add_bos=True) for p in PROMPTS]
    input_ids, mask = pad_prompts(prompts, engine_tokenizer.pad_id)
    expected_ids = (engine_tokenizer.bos_id, engine_tokenizer.eos_id, engine_tokenizer.pad_id)
    for name, overrides in CONFIG_VARIANTS.items():
        config = preset("tiny", **overrides).replace(bos_token_id=None, eos_token_id=None, pad_token_id=None)
        model = tiny_model_factory(seed, std=0.2, config=config)
        path = _save(tmp_path / name, model, engine_tokenizer, seed)
        loaded = load_checkpoint(path)
        for field, want in config.to_dict().items():
            if field.endswith("_token_id"):
                continue
            compared += 1
            mismatches += getattr(loaded.config, field) != want
        manifests += isinstance(loaded.manifest, dict) and loaded.manifest.get("seed") == seed
        got_ids = (loaded.config.bos_token_id, loaded.config.eos_token_id, loaded.config.pad_token_id)
        from_tokenizer += sum(g == w for g, w in zip(got_ids, expected_ids, strict=True))
        if config.tie_word_embeddings:
            tied += loaded.model.lm_head.weight.data_ptr() == loaded.model.model.embed_tokens.weight.data_ptr()
        with torch.inference_mode():
            before = model(input_ids, attention_mask=mask).logits.float()
            after = loaded.model(input_ids, attention_mask=mask).logits.float()
        worst = max(worst, float((before - after).abs().max()))
        as_bf16 = load_checkpoint(path, dtype=torch.bfloat16)
        dtype_ok += all(t.dtype == torch.bfloat16 for t in as_bf16.model.state_dict().values() if t.is_floating_point())
    return {
        "fields_compared": compared,
        "field_mismatches": mismatches,
        "special_ids_from_tokenizer": from_tokenizer,
        "tied_heads_shared": tied,
        "dtype_loads": dtype_ok,
        "max_abs_logit_diff": worst,
        "manifests_loaded": manifests,
    }


def _rewrite(src: Path, dest: Path, edit: Any) -> Path:
    """A copy of checkpoint ``src`` whose safetensors metadata ``edit(meta)`` changed in place."""

    with safe_open(str(src), framework="pt") as fh:
        meta = dict(fh.metadata())
    edit(meta)
    save_file(load_file(str(src)), str(dest), metadata=meta)
    return dest


@checker(observes=["cases", "refused", "refusals_naming_the_defect", "valid_loads"], ids=["FALSIFY-CKPT-006"])
def malformed_refused(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Hand ``load_checkpoint`` files that are not a checkpoint, or one with a defect, and require a
    CheckpointError whose message names what is wrong (a word written here for each case)."""

    model = tiny_model_factory(seed)
    vocab = model.config.vocab_size  # the first id outside the vocabulary: the bound itself
    good = _save(tmp_path, model, engine_tokenizer, seed)
    work = fresh_dir(tmp_path, "malformed-")
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"w": 1}))
    raw_cases: dict[str, tuple[bytes, str]] = {
        "pickle protocol 2": (pickle.dumps({"w": 1}, protocol=2), "pickle"),
        "pickle protocol 4": (pickle.dumps({"w": 1}, protocol=4), "pickle"),
        "torch.save zip": (zipped.getvalue(), "zip archive"),
        "GGUF": (b"GGUF" + bytes(60), "GGUF file"),
        "five bytes": (b"12345", "truncated"),
        "JSON text": (json.dumps({"weights": [1, 2]}).encode(), "not a safetensors file"),
    }
    paths: list[tuple[Path, str]] = []
    for i, (data, word) in enumerate(raw_cases.values()):
        (work / f"raw{i}.safetensors").write_bytes(data)
        paths.append((work / f"raw{i}.safetensors", word))

    def manifest_without_step(m: dict[str, str]) -> None:
        m["manifest"] = json.dumps({k: v for k, v in json.loads(m["manifest"]).items() if k != "step"})

    edits: list[tuple[Any, str]] = [
        (lambda m: m.update(architecture='"gpt2"'), "unknown architecture `gpt2`"),
        (lambda m: m.pop("format_version"), "format_version"),
        (lambda m: m.update(format="other"), "not a pv engine checkpoint"),
        (manifest_without_step, "manifest lacks `step`"),
        (lambda m: m.update(pad_token_id=str(vocab)), "`pad_token_id` must be a token id below vocab_size, got"),
        (lambda m: m.update(eos_token_id=f"[2, {vocab}]"), "or a list of them"),
    ]
    for i, (edit, word) in enumerate(edits):
        paths.append((_rewrite(good, work / f"meta{i}.safetensors", edit), word))
    refused = named = 0
    for path, word in paths:
        try:
            load_checkpoint(path)
        except CheckpointError as exc:
            refused += 1
            text = str(exc)
            # the pad id case must not claim that lists are allowed: only eos takes several
            named += word in text and not ("pad_token_id" in word and "list" in text)
        except Exception:  # refused, but not as the CheckpointError a caller catches: not counted
            pass
    try:
        load_checkpoint(good)
        valid = 1
    except CheckpointError:
        valid = 0
    return {"cases": len(paths), "refused": refused, "refusals_naming_the_defect": named, "valid_loads": valid}
