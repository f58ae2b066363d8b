"""FALSIFY-TOK-011 names each tokenizer JSON refusal gone or reworded, and each field read otherwise."""

from __future__ import annotations

import pytest

from engine.errors import TokenizerError
from engine.faults import FAULTS
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from falsifiers.tokenizer.tokenizer_json_refusals import tokenizer_json_read_or_refused


def test_the_engine_reads_every_field_and_refuses_every_other_document() -> None:
    out = tokenizer_json_read_or_refused(cached_tokenizer(512))
    assert (out["refusals"], out["refusals_differing"], out["reads"], out["reads_differing"]) == (28, [], 5, [])


def test_ids_taken_on_trust_are_named_as_not_refused() -> None:
    with FAULTS.enabled("tokenizer_json_ids_unchecked"):
        out = tokenizer_json_read_or_refused(cached_tokenizer(512))
    assert out["refusals_differing"] == [
        "not refused: \"bos token '<|bos|>' has id 0 in the vocabulary but 7 in `special_tokens`\"",
        "not refused: \"eos token '<|eos|>' has id 1 in the vocabulary but None in `special_tokens`\"",
        "not refused: \"pad token '<|pad|>' has id 2 in the vocabulary but '2' in `special_tokens`\"",
    ]
    assert out["reads_differing"] == []


def test_a_template_dropped_and_a_refusal_reworded_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    read = EngineTokenizer.from_json.__func__  # type: ignore[attr-defined]

    def careless(cls: type[EngineTokenizer], text: str) -> EngineTokenizer:
        try:
            tok = read(cls, text)
        except TokenizerError as exc:
            raise TokenizerError(str(exc).replace("tokenizer JSON is not an object", "bad tokenizer")) from None
        tok.chat_template = None
        return tok

    monkeypatch.setattr(EngineTokenizer, "from_json", classmethod(careless))
    out = tokenizer_json_read_or_refused(cached_tokenizer(512))
    assert out["refusals_differing"] == ["'bad tokenizer' != 'tokenizer JSON is not an object'"]
    assert out["reads_differing"] == [
        "every optional field set: chat_template None != \"{% for m in messages %}{{ m['content'] }}{% endfor %}\""
    ]
