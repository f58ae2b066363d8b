"""``EngineTokenizer``'s constructors keep every setting they are given.

A tokenizer is its backend plus settings the backend does not hold: which tokens are BOS, EOS and
PAD, whether a prompt starts with BOS, and the chat template.  ``with_backend`` (another backend,
the same settings) and ``from_hf_file`` (a ``tokenizer.json`` and the settings) must carry each of
them, so a tokenizer built with none of the defaults is compared with itself rebuilt both ways,
setting by setting, by equality and by hash; ``from_hf_file`` on a file that is not a tokenizer
refuses with a ``TokenizerError`` naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from engine.errors import TokenizerError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"


def _settings(tok: EngineTokenizer) -> tuple[Any, ...]:
    return (tok.bos_token, tok.eos_token, tok.pad_token, tok.add_bos_token, tok.chat_template, tok.hf_json())


@checker(
    observes=["rebuilt", "settings_differing", "unequal", "hashes_differing", "refused_by_name"],
    ids=["FALSIFY-TOK-005"],
)
def constructors_keep_settings(tmp_path: Path, engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """The session's tokenizer with BOS, EOS and PAD roles moved to other tokens, no BOS on prompts
    and a chat template, rebuilt with with_backend and from_hf_file."""

    work = fresh_dir(tmp_path, "tokenizer-api-")
    vocab = engine_tokenizer.hf_json()
    specials = sorted(engine_tokenizer.special_ids())
    names = [engine_tokenizer.decode([i]) for i in specials]
    # every role on another special token than its default (BOS on the EOS token, and so on)
    bos, eos, pad = names[1 % len(names)], names[2 % len(names)], names[0]
    original = EngineTokenizer(
        Tokenizer.from_str(vocab), bos, eos, pad, add_bos_token=False, chat_template=TEMPLATE
    )  # fmt: skip
    path = work / "tokenizer.json"
    path.write_text(vocab, encoding="utf-8")
    rebuilt = [
        original.with_backend(Tokenizer.from_str(vocab)),
        EngineTokenizer.from_hf_file(path, bos, eos, pad, add_bos_token=False, chat_template=TEMPLATE),
    ]
    out: dict[str, Any] = {"rebuilt": len(rebuilt)}
    out["settings_differing"] = sum(a != b for t in rebuilt for a, b in zip(_settings(t), _settings(original),
                                                                            strict=True))  # fmt: skip
    out["unequal"] = sum(t != original for t in rebuilt)
    out["hashes_differing"] = sum(hash(t) != hash(original) for t in rebuilt)
    broken = work / "not-a-tokenizer.json"
    broken.write_text("{not json", encoding="utf-8")
    try:
        EngineTokenizer.from_hf_file(broken)
        out["refused_by_name"] = False
    except TokenizerError as exc:
        out["refused_by_name"] = str(broken) in str(exc)
    return out
