"""Where a GGUF import cannot start, word for word: a package that ships no single model, a
pre-tokenizer the engine has no rules for.

FALSIFY-IO-007 and FALSIFY-IO-009 require these refusals to name what is at fault.  The rest of the
sentence is what a user acts on: which .gguf files the package ships ("none" when it ships none),
and which pre-tokenizers the engine does read.  Each message is written out here, the listing from
the distribution's own files and ``engine.pretokenizers.PRE_TOKENIZERS``.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

from engine.errors import ExportError
from engine.gguf_import import gguf_in_distribution, import_gguf
from engine.pretokenizers import PRE_TOKENIZERS
from engine.tokenizer import EngineTokenizer
from falsifiers.engine_files.files import _fake_distribution
from falsifiers.engine_files.gguf_reading import _exported, rewrite_gguf
from falsifiers.shared.refusals import Refusal, refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(observes=["refusals", "refusals_differing", "differing"], ids=["FALSIFY-IO-018"])
def gguf_sources_refused_word_for_word(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """gguf_in_distribution on installed distributions made here that ship two GGUF files and
    none; import_gguf on the engine's llama export rewritten to name the pre-tokenizer `mystery`."""

    _, good = _exported(tmp_path, engine_tokenizer, tiny_model_factory, "llama")
    work = fresh_dir(tmp_path, "gguf-sources-")
    data = good.read_bytes()
    site = work / "site"
    _fake_distribution(site, "pv-fake-pair", {"a.gguf": data, "b/c.gguf": data})
    _fake_distribution(site, "pv-fake-empty", {})
    mystery = rewrite_gguf(good, work / "mystery.gguf", values={"tokenizer.ggml.pre": "mystery"})
    known = ", ".join(sorted(PRE_TOKENIZERS))
    requests: list[Refusal] = [
        (
            partial(gguf_in_distribution, "pv-fake-pair"),
            ExportError,
            "package pv-fake-pair must ship exactly one .gguf file; it ships a.gguf, c.gguf",
        ),
        (
            partial(gguf_in_distribution, "pv-fake-empty"),
            ExportError,
            "package pv-fake-empty must ship exactly one .gguf file; it ships none",
        ),
        (
            partial(import_gguf, mystery),
            ExportError,
            f"GGUF pre-tokenizer `mystery` is not supported; supported: {known}",
        ),
    ]
    sys.path.insert(0, str(site))
    try:
        differing = refusals_differing(requests)
    finally:
        sys.path.remove(str(site))
    return {"refusals": len(requests), "refusals_differing": len(differing), "differing": differing}
