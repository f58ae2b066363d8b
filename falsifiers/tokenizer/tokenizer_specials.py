"""Where ``EngineTokenizer.encode`` puts BOS and EOS when its backend's post-processor adds them too.

A Llama-style ``tokenizer.json`` carries a post-processor that starts every sequence with BOS (and
some end it with EOS).  The engine decides BOS itself (``add_bos`` and the tokenizer's
``add_bos_token``), so a backend's own rule must not add a second one, or one where none was asked.
The reference is the same vocabulary without a post-processor, encoded by ``tokenizers`` with
``add_special_tokens=False``; the post-processed backend is checked to really add BOS and EOS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, processors

from engine.tokenizer import BOS_TOKEN, EOS_TOKEN, EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEXTS = ["def add(a, b):\n    return a + b\n", "x", ""]


@checker(observes=["template_adds", "differing"], ids=["FALSIFY-TOK-009"])
def specials_where_asked(tmp_path: Path, engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """The session's tokenizer over a backend whose post-processor wraps each sequence in BOS and
    EOS, built with with_backend and with from_hf_file (BOS on prompts), and with from_hf_file
    with no BOS on prompts; each encoding compared with the plain backend's."""

    plain = Tokenizer.from_str(engine_tokenizer.hf_json())
    found = plain.token_to_id(BOS_TOKEN), plain.token_to_id(EOS_TOKEN)
    if found[0] is None or found[1] is None:
        raise ValueError(f"the session's tokenizer has no {BOS_TOKEN} or {EOS_TOKEN} token")
    bos, eos = found[0], found[1]
    wrapped = Tokenizer.from_str(engine_tokenizer.hf_json())
    wrapped.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A {EOS_TOKEN}", special_tokens=[(BOS_TOKEN, bos), (EOS_TOKEN, eos)]
    )
    path = fresh_dir(tmp_path, "tokenizer-specials-") / "tokenizer.json"
    wrapped.save(str(path))
    template_adds = all(wrapped.encode(t).ids == [bos, *plain.encode(t).ids, eos] for t in TEXTS)
    tokenizers = {
        "with_backend": (engine_tokenizer.with_backend(Tokenizer.from_file(str(path))), True),
        "from_hf_file": (EngineTokenizer.from_hf_file(path), True),
        "from_hf_file, no BOS on prompts": (EngineTokenizer.from_hf_file(path, add_bos_token=False), False),
    }
    differing: list[list[Any]] = []
    for name, (tok, bos_on_prompts) in tokenizers.items():
        for text in TEXTS:
            ids = list(plain.encode(text, add_special_tokens=False).ids)
            cases: dict[str, tuple[list[int], list[int]]] = {
                "encode": (tok.encode(text), ids),
                "encode add_bos": (tok.encode(text, add_bos=True), [bos, *ids]),
                "encode add_eos": (tok.encode(text, add_eos=True), [*ids, eos]),
                "encode add_bos add_eos": (tok.encode(text, add_bos=True, add_eos=True), [bos, *ids, eos]),
                "encode_prompt": (tok.encode_prompt(text), [bos, *ids] if bos_on_prompts else ids),
            }
            for case, (got, want) in cases.items():
                if got != want:
                    differing.append([name, text, case, got])
        batch = tok.encode_batch(TEXTS, add_bos=True)
        if batch != [[bos, *plain.encode(t, add_special_tokens=False).ids] for t in TEXTS]:
            differing.append([name, "encode_batch add_bos", batch])
    return {"template_adds": template_adds, "differing": differing}
