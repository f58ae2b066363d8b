"""What an HF import says when it refuses a folder, and how it reads the settings transformers
reads by default.

FALSIFY-HFI-002 requires each refusal to name the setting at fault.  Here the whole message is
compared with the text written out below (paths, the offending value, what the engine reads
instead), and readings that only show on folders transformers writes differently are held to
transformers itself: with no ``add_bos_token`` and no post-processor adding BOS, a prompt starts
with BOS exactly when transformers' tokenizer for the folder starts one, whatever class
``tokenizer_config.json`` names (Llama's, on a byte-level and on a whitespace-split
``tokenizer.json``, or the generic one); and a boolean where an id belongs (``bos_token_id:
true``, a generation ``eos_token_id: true``) is not read as id 1.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.errors import ExportError
from engine.hf_interop import export_hf, import_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.hf_import.hf_import import _edit_json, write_folder
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

EOS_RULE = "eos_token_id must be a token id or a non-empty list of them"


def _without_post_processor(folder: Path, byte_level: bool) -> None:
    """tokenizer.json with no post-processor; not byte_level: split on whitespace, no ByteLevel part."""
    path = folder / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["post_processor"] = None
    if not byte_level:
        doc["pre_tokenizer"], doc["decoder"] = {"type": "Whitespace"}, None
    path.write_text(json.dumps(doc), encoding="utf-8")


def _number_template(folder: Path) -> None:
    """chat_template 3 in tokenizer_config.json, with no chat_template.jinja beside it to be preferred."""
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    _edit_json(folder / "tokenizer_config.json", chat_template=3)


def _refusals(llama: Path, qwen2: Path) -> list[tuple[str, Path, Callable[[Path], None], Callable[[Path], str]]]:
    """(what, the folder a copy starts from, how to break the copy, the message for the copy)."""
    cfg = json.loads((llama / "config.json").read_text(encoding="utf-8"))
    per_head = cfg["hidden_size"] // cfg["num_attention_heads"]

    def index_without_map(f: Path) -> None:
        (f / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}), encoding="utf-8")

    def pickle_only(f: Path) -> None:
        for p in [*f.glob("*.safetensors"), f / "model.safetensors.index.json"]:
            p.unlink()
        (f / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")

    return [
        ("no config.json", llama, lambda f: (f / "config.json").unlink(),
         lambda f: f"{f}: no config.json; not a Hugging Face model folder"),
        ("a config that is a list", llama, lambda f: (f / "config.json").write_text("[1, 2]", encoding="utf-8"),
         lambda f: f"{f / 'config.json'}: not a JSON object"),
        ("Llama attention biases", llama, lambda f: _edit_json(f / "config.json", attention_bias=True),
         lambda f: "Llama attention_bias/mlp_bias (bias on o_proj or the MLP) is not supported by the engine"),
        ("Qwen2 sliding windows", qwen2, lambda f: _edit_json(f / "config.json", use_sliding_window=True),
         lambda f: "Qwen2 sliding-window attention is not supported by the engine"),
        ("another head_dim", llama, lambda f: _edit_json(f / "config.json", head_dim=per_head // 2),
         lambda f: f"head_dim {per_head // 2} != hidden_size / num_attention_heads = {per_head}"),
        ("a boolean in the EOS list", llama, lambda f: _edit_json(f / "config.json", eos_token_id=[2, True]),
         lambda f: f"config.json: {EOS_RULE}, got [2, True]"),
        ("a boolean in generation's EOS list", qwen2,
         lambda f: _edit_json(f / "generation_config.json", eos_token_id=[True]),
         lambda f: f"{f / 'generation_config.json'}: {EOS_RULE}, got [True]"),
        ("a chat template that is a number", qwen2, _number_template,
         lambda f: f"{f / 'tokenizer_config.json'}: chat_template must be a string"),
        ("a weight index without weight_map", llama, index_without_map,
         lambda f: f"{f / 'model.safetensors.index.json'}: no weight_map"),
        ("pickle weights only", qwen2, pickle_only,
         lambda f: f"{f}: only pickle (*.bin) weights found; the engine reads safetensors only"),
    ]  # fmt: skip


@checker(
    observes=[
        "refusals",
        "messages_differing",
        "differing",
        "bos_rules",
        "bos_rules_differing",
        "boolean_ids_read",
        "dtype_labels",
    ],
    ids=["FALSIFY-HFI-006"],
)
def hf_folders_read_and_refused(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, seed: int = 0
) -> dict[str, Any]:
    """Llama and Qwen2 folders written by transformers, copies broken one way each through
    import_hf, and copies with other tokenizer classes and boolean ids against transformers."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import AutoTokenizer

    work = fresh_dir(tmp_path, "hf-messages-")
    llama = write_folder(work / "llama", engine_tokenizer, "llama", seed)
    qwen2 = write_folder(work / "qwen2", engine_tokenizer, "qwen2", seed + 1)

    def copy(base: Path, name: str, change: Callable[[Path], None]) -> Path:
        folder = work / name
        shutil.copytree(base, folder)
        change(folder)
        return folder

    cases = _refusals(llama, qwen2)
    broken = [(copy(base, f"refused-{n}", breaks), message) for n, (_, base, breaks, message) in enumerate(cases)]
    differing = refusals_differing(
        (partial(import_hf, folder), ExportError, message(folder)) for folder, message in broken
    )

    # add_bos_token absent and no post-processor adding BOS: does the tokenizer class imply one?
    bos_rules = []
    for n, (klass, byte_level) in enumerate(
        (("LlamaTokenizerFast", True), ("LlamaTokenizer", False), ("PreTrainedTokenizerFast", True))
    ):

        def reclass(f: Path, klass: str = klass, byte_level: bool = byte_level) -> None:
            doc = json.loads((f / "tokenizer_config.json").read_text(encoding="utf-8"))
            doc.pop("add_bos_token", None)
            doc["tokenizer_class"] = klass
            (f / "tokenizer_config.json").write_text(json.dumps(doc), encoding="utf-8")
            _without_post_processor(f, byte_level)

        folder = copy(llama, f"class-{n}", reclass)
        reference = AutoTokenizer.from_pretrained(folder)
        theirs = reference("def f(x):")["input_ids"][0] == reference.bos_token_id
        ours = import_hf(folder).tokenizer.encode_prompt("def f(x):")[0] == reference.bos_token_id
        bos_rules.append([klass, byte_level, theirs, ours])
    # a boolean where an id belongs is not id 1
    plain = import_hf(llama).config
    flagged = import_hf(copy(llama, "bool-bos", lambda f: _edit_json(f / "config.json", bos_token_id=True))).config
    gen = import_hf(copy(qwen2, "bool-gen-eos", lambda f: _edit_json(f / "generation_config.json", eos_token_id=True)))
    boolean_ids_read = int(flagged.bos_token_id != plain.bos_token_id) + int(
        gen.config.eos_ids != import_hf(qwen2).config.eos_ids
    )
    # the dtype config.json names is the weights' own, as transformers reads it, for each export dtype
    from transformers import AutoConfig

    dtype_labels = []
    model = tiny_model_factory(seed, vocab_size=engine_tokenizer.vocab_size)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        out = export_hf(model, engine_tokenizer, work / f"export-{str(dtype)[6:]}", dtype)
        with safe_open(str(out / "model.safetensors"), framework="pt") as fh:
            stored = {fh.get_tensor(k).dtype for k in fh.keys()}  # noqa: SIM118 (safe_open has no __iter__)
        read = AutoConfig.from_pretrained(out).dtype
        dtype_labels.append(stored == {dtype} and read == dtype)
    return {
        "dtype_labels": dtype_labels,
        "refusals": len(cases),
        "messages_differing": len(differing),
        "differing": differing,
        "bos_rules": bos_rules,
        "bos_rules_differing": sum(rule[2] != rule[3] for rule in bos_rules),
        "boolean_ids_read": boolean_ids_read,
    }
