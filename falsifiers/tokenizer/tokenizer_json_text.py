"""The text of a tokenizer's JSON, as a checkpoint's header stores it: one canonical spelling.

``EngineTokenizer.to_json`` is what ``save_checkpoint`` writes under the header's ``tokenizer``
key, and what every digest over a checkpoint's metadata reads, so the same tokenizer must give the
same bytes whatever order its fields were built in: keys sorted, no spaces, and non-ASCII text
(byte-level BPE's ``Ġ``, a chat template's quotes) written as itself, not escaped.  The reference
is the standard library's ``json.dumps`` of the parsed document with exactly those settings; the
header is read with safetensors' own ``safe_open``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safetensors import safe_open

from engine.checkpoint import save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEMPLATE = "{% for m in messages %}«{{ m['role'] }}» {{ m['content'] }}\n{% endfor %}"


def _canonical(text: str) -> str:
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@checker(
    observes=["texts_not_canonical", "non_ascii_written", "optional_keys", "header_differing"],
    ids=["FALSIFY-TOK-010"],
)
def tokenizer_json_canonical(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """to_json of the session's tokenizer and of the same tokenizer with a chat template and no BOS
    on prompts, against their canonical spelling; each saved in a checkpoint and read back."""

    doc = json.loads(engine_tokenizer.to_json())
    doc.update(chat_template=TEMPLATE, add_bos_token=False)
    templated = EngineTokenizer.from_json(json.dumps(doc))  # built from insertion-ordered, escaped text
    work = fresh_dir(tmp_path, "tokenizer-json-")
    model = tiny_model_factory(0)
    out: dict[str, Any] = {
        "texts_not_canonical": [],
        "non_ascii_written": [],
        "optional_keys": [],
        "header_differing": [],
    }
    for name, tok in (("session", engine_tokenizer), ("templated", templated)):
        text = tok.to_json()
        if text != _canonical(text):
            out["texts_not_canonical"].append(name)
        out["non_ascii_written"].append(any(ord(c) > 127 for c in text))
        out["optional_keys"].append(sorted({"add_bos_token", "chat_template"} & set(json.loads(text))))
        path = save_checkpoint(work / f"{name}.safetensors", model, tok)
        with safe_open(str(path), framework="pt") as f:
            if (f.metadata() or {}).get("tokenizer") != text:
                out["header_differing"].append(name)
    return out
