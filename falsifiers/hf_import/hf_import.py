"""``python -m engine import`` on folders transformers itself wrote, against transformers' own readers.

The folders are made by transformers (``save_pretrained`` of a randomly initialised Llama and a
tied Qwen2, weights in shards, tokenizers saved by ``PreTrainedTokenizerFast``) as a user downloads
them; the reference for every field is what ``AutoConfig``, ``GenerationConfig``, ``AutoTokenizer``
and the transformers model read from the same folder.  The refusals start from those folders with
one setting changed that the engine cannot represent.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from tokenizers import Regex, Tokenizer, pre_tokenizers
from tokenizers.processors import TemplateProcessing

from engine.checkpoint import load_checkpoint
from engine.errors import ExportError
from engine.hf_interop import import_hf
from engine.tokenizer import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEXTS = ("The quick brown fox", "def f(x):\n    return x  # 42", "naïve café, 1234 ünïcode")
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Two and two?"},
    {"role": "assistant", "content": "Four."},
    {"role": "user", "content": "And three?"},
]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
BOS_TEMPLATE = "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
SHARD = "40KB"  # small enough that every folder is sharded, with an index, as big checkpoints are


def _hf_tokenizer(engine_tokenizer: EngineTokenizer, family: str) -> Any:
    """A fast tokenizer as a Llama (BOS by the post-processor) or a Qwen2 (no BOS, ChatML) ships it."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    if family == "llama":
        bos_id = backend.token_to_id(BOS_TOKEN)
        backend.post_processor = TemplateProcessing(
            single=f"{BOS_TOKEN} $A", pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B", special_tokens=[(BOS_TOKEN, bos_id)]
        )
        tok = PreTrainedTokenizerFast(
            tokenizer_object=backend, bos_token=BOS_TOKEN, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN
        )
        tok.chat_template = BOS_TEMPLATE
        return tok

    # Qwen2's own split (its tokenizer.json; transformers' Qwen2Tokenizer applies it whatever the file says)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.add_special_tokens(list(QWEN_SPECIALS))
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHATML
    return tok


def _rope(theta: float) -> dict[str, Any]:
    return {"rope_type": "default", "rope_theta": theta}


def write_folder(folder: Path, engine_tokenizer: EngineTokenizer, family: str, seed: int) -> Path:
    """A Hugging Face folder of ``family`` written by transformers, every weight random (biases and
    norms too, so that none can be mistaken for its default)."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    tok = _hf_tokenizer(engine_tokenizer, family)
    vocab = len(tok) + 5  # a few unused rows, as real checkpoints pad their vocabulary
    shape: dict[str, Any] = {
        "vocab_size": vocab, "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2,
    }  # fmt: skip
    eos = tok.eos_token_id
    if family == "llama":
        cfg: Any = transformers.LlamaConfig(
            **shape, max_position_embeddings=512, rope_parameters=_rope(500000.0), rms_norm_eps=1e-5,
            bos_token_id=tok.bos_token_id, eos_token_id=eos, pad_token_id=tok.pad_token_id,
        )  # fmt: skip
        model: Any = transformers.LlamaForCausalLM(cfg)
        generation = transformers.GenerationConfig(
            bos_token_id=tok.bos_token_id, eos_token_id=[eos, tok.convert_tokens_to_ids("e")]
        )
    else:
        cfg = transformers.Qwen2Config(
            **shape, max_position_embeddings=1024, rope_parameters=_rope(1000000.0), rms_norm_eps=1e-6,
            tie_word_embeddings=True, eos_token_id=eos, pad_token_id=tok.pad_token_id, bos_token_id=None,
        )  # fmt: skip
        model = transformers.Qwen2ForCausalLM(cfg)
        generation = transformers.GenerationConfig(eos_token_id=eos)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=gen) + (1.0 if p.ndim == 1 and p.shape[0] == 64 else 0.0))
    model.generation_config = generation
    model.save_pretrained(folder, max_shard_size=SHARD)
    tok.save_pretrained(folder)
    return folder


def _reference_theta(cfg: Any) -> float:
    params = getattr(cfg, "rope_parameters", None)
    return float(params["rope_theta"] if isinstance(params, dict) else cfg.rope_theta)


def _folder_sha256(folder: Path) -> str:
    """The digest the import records of its source, as documented: sha256 over every file's
    path relative to the folder, a NUL byte and its bytes, in path order."""

    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _reference_ids(folder: Path, ref_cfg: Any, ref_tok: Any) -> dict[str, tuple[int, ...] | int | None]:
    """The special ids the engine documents for an imported folder, written out: EOS from
    generation_config.json (what transformers' generate stops on), else config.json; any id neither
    file sets comes from the tokenizer's special tokens (a missing BOS stands in as the EOS), not from
    transformers' config defaults (Llama's 1 and 2 are other tokens here)."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    raw = json.loads((folder / "config.json").read_text())
    eos: Any = raw.get("eos_token_id")
    if (folder / "generation_config.json").is_file():
        eos = transformers.GenerationConfig.from_pretrained(folder).eos_token_id
    eos_ids = tuple(eos) if isinstance(eos, list) else (eos if isinstance(eos, int) else ref_tok.eos_token_id,)

    def single(key: str, from_tokenizer: int | None) -> int | None:
        return getattr(ref_cfg, key) if isinstance(raw.get(key), int) else from_tokenizer

    bos_stand_in = ref_tok.bos_token_id if ref_tok.bos_token_id is not None else ref_tok.eos_token_id
    return {
        "eos_token_id": eos_ids,
        "bos_token_id": single("bos_token_id", bos_stand_in),
        "pad_token_id": single("pad_token_id", ref_tok.pad_token_id),
    }


def _config_mismatches(folder: Path, cfg: Any, ref_tok: Any) -> tuple[int, int]:
    """(fields compared, fields differing) between an imported config and transformers' reading."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    ref_cfg = transformers.AutoConfig.from_pretrained(folder)
    ids = _reference_ids(folder, ref_cfg, ref_tok)
    fields: dict[str, tuple[Any, Any]] = {
        "architecture": (cfg.architecture, ref_cfg.model_type),
        "rope_theta": (cfg.rope_theta, _reference_theta(ref_cfg)),
        "attention_bias": (cfg.attention_bias, ref_cfg.model_type == "qwen2"),
        "eos_token_id": (cfg.eos_ids, ids["eos_token_id"]),
        "pad_token_id": (cfg.pad_token_id, ids["pad_token_id"]),
        "bos_token_id": (cfg.bos_token_id, ids["bos_token_id"]),
    }
    for key in (
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "intermediate_size", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings",
    ):  # fmt: skip
        fields[key] = (getattr(cfg, key), getattr(ref_cfg, key))
    return len(fields), sum(a != b for a, b in fields.values())


def _token_mismatches(tok: EngineTokenizer, ref_tok: Any) -> int:
    """Ids and decodings of TEXTS, the chat rendering's ids and the special tokens that differ."""
    mismatches = 0
    for text in TEXTS:
        ref_ids = ref_tok(text)["input_ids"]
        mismatches += tok.encode_prompt(text) != ref_ids
        mismatches += tok.decode(ref_ids, skip_special_tokens=True) != ref_tok.decode(ref_ids, skip_special_tokens=True)
    rendered = ref_tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    mismatches += tok.apply_chat_template(MESSAGES) != ref_tok(rendered, add_special_tokens=False)["input_ids"]
    specials = [(tok.eos_token, ref_tok.eos_token), (tok.eos_id, ref_tok.eos_token_id)]
    specials += [(tok.pad_token, ref_tok.pad_token), (tok.pad_id, ref_tok.pad_token_id)]
    if ref_tok.bos_token is not None:
        specials += [(tok.bos_token, ref_tok.bos_token), (tok.bos_id, ref_tok.bos_token_id)]
    return mismatches + sum(a != b for a, b in specials)


def _compare(folder: Path, imported: Any) -> dict[str, int]:
    """Every field, tensor, token and id of ``imported`` against transformers' reading of ``folder``."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    ref_tok = transformers.AutoTokenizer.from_pretrained(folder)
    ref_model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    cfg, tok, model = imported.config, imported.tokenizer, imported.model
    out = dict(zip(("config_fields", "config_mismatches"), _config_mismatches(folder, cfg, ref_tok), strict=True))
    ref_state = ref_model.state_dict()
    mine = model.state_dict()
    out["tensors"] = len(ref_state)
    out["tensor_mismatches"] = sum(
        name not in mine or mine[name].shape != t.shape or not torch.equal(mine[name], t)
        for name, t in ref_state.items()
    ) + len(set(mine) - set(ref_state))
    tied = cfg.tie_word_embeddings
    out["tied_heads_shared"] = int(
        tied and model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    )
    ids = torch.tensor([tok.encode_prompt(TEXTS[0])])
    with torch.no_grad():
        diff = (model(ids).logits - ref_model(ids).logits).abs().max().item()
    out["logits_within_1e-4"] = int(diff <= 1e-4)
    out["token_mismatches"] = _token_mismatches(tok, ref_tok)
    return out


COUNTS = ("folders", "refused", "config_fields", "config_mismatches", "token_mismatches")


def import_and_compare(folder: Path, what: str, out: dict[str, Any], log: list[str]) -> Any | None:
    """``import_hf(folder)`` counted into ``out`` (the ``COUNTS``) against transformers' reading of
    the folder, a line of ``log`` saying what differs; the import, or None when it was refused."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    out["folders"] += 1
    try:
        imported = import_hf(folder)
    except ExportError as exc:
        log.append(f"--- {what}: refused: {exc}")
        out["refused"] += 1
        return None
    ref_tok = transformers.AutoTokenizer.from_pretrained(folder)
    fields, differing = _config_mismatches(folder, imported.config, ref_tok)
    tokens = _token_mismatches(imported.tokenizer, ref_tok)
    log.append(f"--- {what}: {differing} of {fields} config fields and {tokens} token checks differ")
    out["config_fields"] += fields
    out["config_mismatches"] += differing
    out["token_mismatches"] += tokens
    return imported


@checker(
    observes=[
        "folders", "sharded", "exit_codes_nonzero", "config_fields", "config_mismatches", "tensors",
        "tensor_mismatches", "tied_heads_shared", "logits_matching", "token_mismatches", "source_digest_mismatches",
        "reexport_mismatches", "manifest_mismatches",
    ],
    ids=["FALSIFY-HFI-001"],
)  # fmt: skip
def transformers_folders_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """A Llama folder (BOS by the tokenizer's post-processor, two EOS ids in generation_config.json,
    rope_theta 5e5) and a tied Qwen2 folder (q/k/v biases, no BOS, ChatML), both sharded, imported
    with ``python -m engine import`` and compared with what transformers reads from them."""

    work = fresh_dir(tmp_path, "hf-import-")
    cli = cli_runner()
    out: dict[str, Any] = {"folders": 0, "sharded": 0, "exit_codes_nonzero": 0, "logits_matching": 0}
    for key in ("config_fields", "config_mismatches", "tensors", "tensor_mismatches", "tied_heads_shared"):
        out[key] = 0
    out["token_mismatches"] = out["source_digest_mismatches"] = out["reexport_mismatches"] = 0
    out["manifest_mismatches"] = 0
    for i, family in enumerate(("llama", "qwen2")):
        folder = write_folder(work / family, engine_tokenizer, family, seed + i)
        out["folders"] += 1
        out["sharded"] += (folder / "model.safetensors.index.json").is_file() and not (
            folder / "model.safetensors"
        ).exists()
        result = cli("import", folder, work / f"{family}.safetensors")
        (work / f"{family}.import.log").write_text(result.output)
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        imported = load_checkpoint(work / f"{family}.safetensors")
        digest = _folder_sha256(folder)
        summary = json.loads(result.stdout)
        out["source_digest_mismatches"] += (summary.get("source_sha256"), imported.manifest.get("source_sha256")) != (
            digest,
            digest,
        )
        # what the checkpoint says it is: an import of this folder, step 0, no training seed or data
        manifest = {k: imported.manifest.get(k, "<missing>") for k in ("kind", "imported_from", "step", "seed")}
        manifest["data_digest"] = imported.manifest.get("data_digest", "<missing>")
        want = {"kind": "import", "imported_from": str(folder), "step": 0, "seed": None, "data_digest": None}
        out["manifest_mismatches"] += sum(manifest[k] != v for k, v in want.items())
        compared = _compare(folder, imported)
        out["logits_matching"] += compared.pop("logits_within_1e-4")
        for key, value in compared.items():
            out[key] += value
        again = work / f"{family}-exported"
        exported = cli("export", work / f"{family}.safetensors", "-f", "hf", "-o", again)
        out["reexport_mismatches"] += 1 if exported.exit_code != 0 else _reexport_mismatches(folder, again)
    return out


def _reexport_mismatches(source: Path, again: Path) -> int:
    """What transformers reads differently from the folder the import's checkpoint exports again
    than from the folder it was imported from: config fields, generation ids, special tokens, ids
    of TEXTS and the chat rendering, the weights file's metadata, and the special token ids gguf-py
    finds in each folder."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    import transformers

    configs = [transformers.AutoConfig.from_pretrained(f) for f in (source, again)]
    # config.json's eos_token_id is left out: the engine keeps one list of EOS ids, the one
    # generation stops on (generation_config.json's), and writes it to both files
    keys = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "intermediate_size", "max_position_embeddings", "rms_norm_eps",
            "tie_word_embeddings", "bos_token_id", "pad_token_id")  # fmt: skip
    bad = sum(getattr(configs[0], k) != getattr(configs[1], k) for k in keys)
    bad += _reference_theta(configs[0]) != _reference_theta(configs[1])
    gens = [transformers.GenerationConfig.from_pretrained(f) for f in (source, again)]
    bad += sum(getattr(gens[0], k) != getattr(gens[1], k) for k in ("bos_token_id", "eos_token_id"))
    toks = [transformers.AutoTokenizer.from_pretrained(f) for f in (source, again)]
    for attr in ("bos_token", "eos_token", "pad_token", "bos_token_id", "eos_token_id", "pad_token_id"):
        bad += getattr(toks[0], attr) != getattr(toks[1], attr)
    bad += sum(toks[0](t)["input_ids"] != toks[1](t)["input_ids"] for t in TEXTS)
    chats = [t.apply_chat_template(MESSAGES, tokenize=False) for t in toks]
    bad += chats[0] != chats[1]
    with safe_open(str(again / "model.safetensors"), framework="pt") as fh:
        bad += fh.metadata() != {"format": "pt"}  # what transformers' save_pretrained writes
    # the special tokens llama.cpp's converter takes from the folder (gguf-py's SpecialVocab reads
    # tokenizer_config.json and config.json): a BOS only where the source named one
    import gguf

    vocabs = [gguf.SpecialVocab(f, load_merges=False).special_token_ids for f in (source, again)]
    bad += vocabs[0] != vocabs[1]
    return int(bad)


def _edit_json(path: Path, **changes: Any) -> None:
    doc = json.loads(path.read_text())
    for key, value in changes.items():
        if value is _DELETE:
            doc.pop(key, None)
        else:
            doc[key] = value
    path.write_text(json.dumps(doc))


_DELETE = object()
Q_PROJ = "model.layers.0.self_attn.q_proj.weight"
EXTRA = "model.layers.0.self_attn.extra.weight"
LINEAR_ROPE = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}


def _refusals(llama: Path, qwen2: Path) -> list[tuple[str, Path, Any, str]]:
    """(what is wrong, the folder it starts from, how to break a copy of it, what the error must name)."""

    def config(**changes: Any) -> Any:
        return lambda f: _edit_json(f / "config.json", **changes)

    def generation(**changes: Any) -> Any:  # what generation stops on: it decides the EOS ids
        return lambda f: _edit_json(f / "generation_config.json", **changes)

    def tokenizer_config(**changes: Any) -> Any:
        return lambda f: _edit_json(f / "tokenizer_config.json", **changes)

    def drop_shard(f: Path) -> None:
        index = json.loads((f / "model.safetensors.index.json").read_text())
        (f / sorted(set(index["weight_map"].values()))[-1]).unlink()

    def edit_weights(f: Path, edit: Any) -> None:
        """Rewrite the shard holding the first layer's q_proj with ``edit(tensors)`` applied."""

        index_path = f / "model.safetensors.index.json"
        index = json.loads(index_path.read_text())
        shard = index["weight_map"][Q_PROJ]
        tensors = load_file(str(f / shard))
        edit(tensors)
        save_file(tensors, str(f / shard), metadata={"format": "pt"})
        index["weight_map"] = {k: v for k, v in index["weight_map"].items() if v != shard} | dict.fromkeys(
            tensors, shard
        )
        index_path.write_text(json.dumps(index))

    def pickle_only(f: Path) -> None:
        for p in [*f.glob("*.safetensors"), f / "model.safetensors.index.json"]:
            p.unlink()
        (f / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")

    return [
        ("an architecture the engine lacks", llama, config(model_type="mistral"), "mistral"),
        ("another activation", llama, config(hidden_act="gelu"), "hidden_act 'gelu'"),
        ("a Llama with attention biases", llama, config(attention_bias=True), "attention_bias"),
        ("a Llama with MLP biases", llama, config(mlp_bias=True), "mlp_bias"),
        ("Qwen2 sliding-window attention", qwen2, config(use_sliding_window=True), "sliding"),
        ("a head_dim other than hidden / heads", llama, config(head_dim=32), "head_dim"),
        ("scaled RoPE", llama, config(rope_parameters=LINEAR_ROPE), "rope"),
        ("legacy rope_scaling", qwen2, config(rope_scaling={"type": "dynamic", "factor": 2.0}), "rope"),
        ("a missing size", llama, config(hidden_size=_DELETE), "hidden_size"),
        ("a malformed size", llama, config(vocab_size="many"), "malformed"),
        ("an empty EOS list", llama, config(eos_token_id=[]), "eos_token_id"),
        ("an EOS outside the vocabulary", qwen2, generation(eos_token_id=[5, 10_000_000]), "outside the vocabulary"),
        ("a vocabulary smaller than the tokenizer", qwen2, config(vocab_size=300), "tokens but vocab_size"),
        ("a non-boolean add_bos_token", llama, tokenizer_config(add_bos_token="yes"), "add_bos_token"),
        ("a config that is not JSON", qwen2, lambda f: (f / "config.json").write_text("{x"), "not valid JSON"),
        ("a missing weight shard", llama, drop_shard, "shard missing"),
        ("pickle weights only", qwen2, pickle_only, "safetensors"),
        ("no tokenizer.json", qwen2, lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json"),
        ("an EOS id equal to vocab_size", llama, generation(eos_token_id=[1, 517]), "outside the vocabulary"),
        ("a tied config whose head differs", llama, config(tie_word_embeddings=True), "lm_head.weight differs"),
        ("a missing tensor", llama, lambda f: edit_weights(f, lambda t: t.pop(Q_PROJ)), f"missing tensor `{Q_PROJ}`"),
        ("an unexpected tensor", llama, lambda f: edit_weights(f, lambda t: t.update({EXTRA: t[Q_PROJ] + 0})),
         f"unexpected tensor `{EXTRA}`"),
        ("a tensor of another shape", llama, lambda f: edit_weights(f, lambda t: t.update({Q_PROJ: t[Q_PROJ][:8] + 0})),
         f"tensor `{Q_PROJ}` has shape [8, 64], expected [64, 64]"),
    ]  # fmt: skip


@checker(observes=["requests", "refused_cleanly", "not_refused", "unnamed"], ids=["FALSIFY-HFI-002"])
def unsupported_folders_refused(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """Each of the Llama and Qwen2 folders with one thing the engine cannot represent (or a broken
    file) imported with ``python -m engine import``: exit 2, the error names it, no traceback, no
    checkpoint written."""
    work = fresh_dir(tmp_path, "hf-refuse-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)
    cli = cli_runner()
    out = {"requests": 0, "refused_cleanly": 0, "not_refused": 0, "unnamed": 0}
    log = []
    for n, (what, base, breaks, named) in enumerate(_refusals(llama, qwen2)):
        folder = work / f"case-{n}"
        shutil.copytree(base, folder)
        breaks(folder)
        target = work / f"case-{n}.safetensors"
        result = cli("import", folder, target)
        text = result.output
        log.append(f"--- {what}: exit {result.exit_code}\n{text}")
        out["requests"] += 1
        if result.exit_code != 2:
            out["not_refused"] += 1
            continue
        clean = "error:" in text and "Traceback" not in text and not target.exists()
        named_ok = named.lower() in " ".join(text.split()).lower()  # a wrapped line is one line
        out["unnamed"] += not named_ok
        out["refused_cleanly"] += clean and named_ok
    (work / "refusals.log").write_text("\n".join(log))
    return out


def _older_layouts(llama: Path, qwen2: Path) -> list[tuple[str, Path, Any]]:
    """(what the folder has, the folder it starts from, how to rewrite a copy of it): config.json and
    tokenizer files as older transformers versions and hand-written checkpoints have them."""

    def v4(f: Path, **changes: Any) -> None:  # transformers 4.x: rope_theta at the top level, no head_dim
        doc = json.loads((f / "config.json").read_text())
        theta = doc.pop("rope_parameters")["rope_theta"]
        doc.pop("head_dim", None), doc.pop("layer_types", None)
        doc.update(rope_theta=theta, torch_dtype=doc.pop("dtype"), rope_scaling=None)
        (f / "config.json").write_text(json.dumps(doc))
        _edit_json(f / "config.json", **changes)

    def config(**changes: Any) -> Any:
        return lambda f: _edit_json(f / "config.json", **changes)

    def ids_in_config_only(f: Path, **changes: Any) -> None:
        (f / "generation_config.json").unlink()
        _edit_json(f / "config.json", **changes)

    def added_token(content: str) -> dict[str, Any]:  # how transformers < 4.40 wrote special tokens
        return {"__type": "AddedToken", "content": content, "lstrip": False, "normalized": False,
                "rstrip": False, "single_word": False}  # fmt: skip

    def tokens_as_added_tokens(f: Path) -> None:
        doc = json.loads((f / "tokenizer_config.json").read_text())
        changes = {f"{r}_token": added_token(doc[f"{r}_token"]) for r in ("bos", "eos", "pad") if f"{r}_token" in doc}
        _edit_json(f / "tokenizer_config.json", **changes)

    def tokens_in_special_tokens_map(f: Path) -> None:
        doc = json.loads((f / "tokenizer_config.json").read_text())
        roles = {f"{r}_token": doc[f"{r}_token"] for r in ("bos", "eos", "pad") if f"{r}_token" in doc}
        _edit_json(f / "tokenizer_config.json", **dict.fromkeys(roles, _DELETE))
        roles["eos_token"] = added_token(roles["eos_token"])
        (f / "special_tokens_map.json").write_text(json.dumps(roles))

    def template_in_config(f: Path, named: bool) -> None:  # transformers < 4.43 kept it in tokenizer_config
        template = (f / "chat_template.jinja").read_text()
        (f / "chat_template.jinja").unlink()
        value: Any = template
        if named:
            other = {"name": "tool_use", "template": "{{ messages[0]['content'] }}"}
            value = [other, {"name": "default", "template": template}]
        _edit_json(f / "tokenizer_config.json", chat_template=value)

    return [
        ("a transformers 4.x Llama config", llama, v4),
        ("a transformers 4.x Qwen2 config", qwen2, v4),
        ("no rope_theta at all", llama, lambda f: v4(f, rope_theta=_DELETE)),
        ("legacy rope_scaling of type default", qwen2, lambda f: v4(f, rope_scaling={"type": "default"})),
        ("a Llama without max_position_embeddings", llama, config(max_position_embeddings=_DELETE)),
        ("a Qwen2 without max_position_embeddings", qwen2, config(max_position_embeddings=_DELETE)),
        ("no rms_norm_eps", qwen2, config(rms_norm_eps=_DELETE)),
        ("no tie_word_embeddings (untied)", llama, config(tie_word_embeddings=_DELETE)),
        ("no hidden_act, biases or head_dim", llama,
         config(hidden_act=_DELETE, attention_bias=_DELETE, mlp_bias=_DELETE, head_dim=None)),
        ("EOS ids as a list in config.json only", llama, lambda f: ids_in_config_only(f, eos_token_id=[1, 7])),
        ("no special ids in config.json", llama,
         lambda f: ids_in_config_only(f, bos_token_id=_DELETE, eos_token_id=_DELETE, pad_token_id=_DELETE)),
        ("special tokens as AddedToken objects", llama, tokens_as_added_tokens),
        ("special tokens in special_tokens_map.json", llama, tokens_in_special_tokens_map),
        ("Qwen2 special tokens in special_tokens_map.json", qwen2, tokens_in_special_tokens_map),
        ("the chat template in tokenizer_config.json", qwen2, lambda f: template_in_config(f, named=False)),
        ("named chat templates", llama, lambda f: template_in_config(f, named=True)),
        ("chat_template.jinja beside another template in tokenizer_config.json", qwen2,
         lambda f: _edit_json(f / "tokenizer_config.json", chat_template="{{ messages[0]['content'] }}")),
    ]  # fmt: skip


@checker(
    observes=["folders", "refused", "config_fields", "config_mismatches", "token_mismatches"],
    ids=["FALSIFY-HFI-003"],
)
def older_layouts_import(tmp_path: Path, engine_tokenizer: EngineTokenizer, seed: int = 0) -> dict[str, Any]:
    """The Llama and Qwen2 folders rewritten as older transformers versions and hand-written
    checkpoints have them (keys left out, older places for rope_theta, special tokens and the chat
    template), imported, and compared with what transformers reads from each rewritten folder."""
    work = fresh_dir(tmp_path, "hf-layouts-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)
    out: dict[str, Any] = dict.fromkeys(COUNTS, 0)
    log: list[str] = []
    for n, (what, base, rewrite) in enumerate(_older_layouts(llama, qwen2)):
        folder = work / f"case-{n}"
        shutil.copytree(base, folder)
        rewrite(folder)
        import_and_compare(folder, what, out, log)
    (work / "layouts.log").write_text("\n".join(log))
    return out
