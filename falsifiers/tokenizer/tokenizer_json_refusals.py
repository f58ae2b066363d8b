"""What ``EngineTokenizer.from_json`` gives back for a tokenizer's JSON, and what it refuses.

A checkpoint's header carries its tokenizer as the JSON ``to_json`` writes: the format name and
version, the three special tokens' roles with their ids, the Hugging Face tokenizer document, and
``add_bos_token`` and ``chat_template`` where they differ from an engine-trained tokenizer's.
``from_json`` must read every one of those fields back as written (a missing ``add_bos_token``
as true, a missing or null ``chat_template`` as none), read a plain Hugging Face ``tokenizer.json``
with the engine's default special tokens, and refuse anything else with a ``TokenizerError`` that
says what is wrong.  Where a refusal quotes another reader (the standard library's JSON parser,
the tokenizers library's own refusal of a tokenizer document) the quoted text is read here from
that reader; every other word is written out below.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from tokenizers import Tokenizer

from engine.errors import TokenizerError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import Refusal, refusals_differing
from pv.checkers import checker

TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
NOT_JSON = "{not json"
BAD_MODEL = {"type": "NoSuchModel"}  # a tokenizer document the tokenizers library cannot read

Edit = Callable[[dict[str, Any]], Any]


def _set(*path: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return edit


def _drop(*path: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        del doc[path[-1]]

    return edit


def _lacks(role: str) -> str:
    return f"tokenizer JSON lacks the `{role}` special token"


LACKS_PARTS = "tokenizer JSON lacks `special_tokens` or `tokenizer`"
NOT_A_DOCUMENT = "not a tokenizer JSON document (no `format` or `model` key)"
# edits of the session tokenizer's own document and the refusal each must get, word for word
EDITS: list[tuple[str, Edit, str]] = [
    ("version 2", _set("version", value=2), "unsupported tokenizer JSON version 2"),
    ("version '1'", _set("version", value="1"), "unsupported tokenizer JSON version '1'"),
    ("no version", _drop("version"), "unsupported tokenizer JSON version None"),
    ("no special_tokens", _drop("special_tokens"), LACKS_PARTS),
    ("special_tokens a list", _set("special_tokens", value=[]), LACKS_PARTS),
    ("no tokenizer", _drop("tokenizer"), LACKS_PARTS),
    ("tokenizer a string", _set("tokenizer", value="bpe"), LACKS_PARTS),
    *[(f"no {role}", _drop("special_tokens", role), _lacks(role)) for role in ("bos", "eos", "pad")],
    ("bos a string", _set("special_tokens", "bos", value="<|bos|>"), _lacks("bos")),
    ("eos without its token", _drop("special_tokens", "eos", "token"), _lacks("eos")),
    ("pad token a number", _set("special_tokens", "pad", "token", value=2), _lacks("pad")),
    (
        "add_bos_token 'false'",
        _set("add_bos_token", value="false"),
        "tokenizer JSON `add_bos_token` must be true or false, got 'false'",
    ),
    ("add_bos_token 0", _set("add_bos_token", value=0), "tokenizer JSON `add_bos_token` must be true or false, got 0"),
    ("chat_template 5", _set("chat_template", value=5), "tokenizer JSON `chat_template` must be a string"),
    (
        "chat_template a list",
        _set("chat_template", value=[TEMPLATE]),
        "tokenizer JSON `chat_template` must be a string",
    ),
    (
        "bos id 7",
        _set("special_tokens", "bos", "id", value=7),
        "bos token '<|bos|>' has id 0 in the vocabulary but 7 in `special_tokens`",
    ),
    (
        "eos without its id",
        _drop("special_tokens", "eos", "id"),
        "eos token '<|eos|>' has id 1 in the vocabulary but None in `special_tokens`",
    ),
    (
        "pad id '2'",
        _set("special_tokens", "pad", "id", value="2"),
        "pad token '<|pad|>' has id 2 in the vocabulary but '2' in `special_tokens`",
    ),
    (
        "bos a token not in the vocabulary",
        _set("special_tokens", "bos", "token", value="<|nope|>"),
        "bos token '<|nope|>' is not in the tokenizer's vocabulary",
    ),
    ("format of another reader", _set("format", value="something else"), NOT_A_DOCUMENT),
    ("no format", _drop("format"), NOT_A_DOCUMENT),
]


def _tokenizers_refusal(doc: Any) -> str:
    """The tokenizers library's own refusal of a document (the text from_json must quote)."""

    try:
        Tokenizer.from_str(json.dumps(doc))
    except Exception as exc:
        return str(exc)
    return "(accepted)"


def _json_refusal(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return str(exc)
    return "(accepted)"


def _fields(tok: EngineTokenizer) -> dict[str, Any]:
    """Everything a tokenizer is, as its attributes give it (the exact type of add_bos_token included)."""
    return {
        "tokens": [tok.bos_token, tok.eos_token, tok.pad_token],
        "ids": [tok.bos_id, tok.eos_id, tok.pad_id],
        "add_bos_token": tok.add_bos_token,
        "add_bos_token_type": type(tok.add_bos_token).__name__,
        "chat_template": tok.chat_template,
        "backend": json.loads(tok.backend.to_str()),
    }


def _read(text: str) -> EngineTokenizer:
    return EngineTokenizer.from_json(text)


@checker(observes=["refusals", "refusals_differing", "reads", "reads_differing"], ids=["FALSIFY-TOK-011"])
def tokenizer_json_read_or_refused(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """from_json of the session tokenizer's JSON with each edit of ``EDITS``, of text that is not
    JSON, of a JSON list, of a document whose Hugging Face part (or a plain Hugging Face document)
    the tokenizers library refuses, and of a document with neither key (the refusals that differ);
    then of the documents it must read: the session tokenizer's, one with every optional field set,
    one with them written at their defaults, one with every special-token role on another token,
    and the plain Hugging Face ``tokenizer.json`` (the fields that differ from those written)."""
    good: dict[str, Any] = json.loads(engine_tokenizer.to_json())
    hf_doc: dict[str, Any] = json.loads(engine_tokenizer.hf_json())
    cases: list[Refusal] = []

    def refused(doc: Any, message: str) -> None:
        text = doc if isinstance(doc, str) else json.dumps(doc)
        cases.append((lambda: _read(text), TokenizerError, message))

    for _name, edit, message in EDITS:
        doc = copy.deepcopy(good)
        edit(doc)
        refused(doc, message)
    refused(NOT_JSON, f"tokenizer JSON is not valid JSON: {_json_refusal(NOT_JSON)}")
    refused([good], "tokenizer JSON is not an object")
    invalid = "tokenizer JSON does not describe a valid tokenizer: "
    refused(
        {**good, "tokenizer": {**good["tokenizer"], "model": BAD_MODEL}},
        invalid + _tokenizers_refusal({**good["tokenizer"], "model": BAD_MODEL}),
    )
    refused({**hf_doc, "model": BAD_MODEL}, invalid + _tokenizers_refusal({**hf_doc, "model": BAD_MODEL}))
    refused({"vocab": hf_doc["model"]["vocab"]}, NOT_A_DOCUMENT)

    backend = json.loads(engine_tokenizer.backend.to_str())
    defaults = {"tokens": ["<|bos|>", "<|eos|>", "<|pad|>"], "ids": [0, 1, 2]}
    plain = {"add_bos_token": True, "add_bos_token_type": "bool", "chat_template": None, "backend": backend}
    optional = {**good, "add_bos_token": False, "chat_template": TEMPLATE}
    written_defaults = {**good, "add_bos_token": True, "chat_template": None}
    rotated = {"bos": ("<|pad|>", 2), "eos": ("<|bos|>", 0), "pad": ("<|eos|>", 1)}  # every role moved
    moved = {**good, "special_tokens": {role: {"token": t, "id": i} for role, (t, i) in rotated.items()}}
    reads: list[tuple[str, str, dict[str, Any]]] = [
        ("the session tokenizer's", json.dumps(good), {**defaults, **plain}),
        (
            "every optional field set",
            json.dumps(optional),
            {**defaults, **plain, "add_bos_token": False, "chat_template": TEMPLATE},
        ),
        ("the optional fields at their defaults", json.dumps(written_defaults), {**defaults, **plain}),
        (
            "every role moved",
            json.dumps(moved),
            {**plain, "tokens": [t for t, _ in rotated.values()], "ids": [i for _, i in rotated.values()]},
        ),
        ("a plain Hugging Face tokenizer.json", engine_tokenizer.hf_json(), {**defaults, **plain}),
    ]
    reads_differing: list[str] = []
    for name, text, want in reads:
        try:
            got = _fields(_read(text))
        except TokenizerError as exc:
            reads_differing.append(f"{name}: refused: {exc}")
            continue
        reads_differing += [f"{name}: {key} {got[key]!r} != {want[key]!r}" for key in want if got[key] != want[key]]
    return {
        "refusals": len(cases),
        "refusals_differing": refusals_differing(cases),
        "reads": len(reads),
        "reads_differing": reads_differing,
    }
