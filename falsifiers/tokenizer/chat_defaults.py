"""``render_chat`` with its defaults, and what it says when it refuses, word for word.

FALSIFY-TOK-003 renders ten templates against transformers with every argument given.  Called
with only a template and a conversation, ``render_chat`` must open the assistant's turn and give
the template empty BOS and EOS text, as transformers' ``apply_chat_template`` does with
``add_generation_prompt=True`` and ``bos_token`` and ``eos_token`` given as "".  A template that refuses a conversation
(``raise_exception``), one that fails in Jinja itself, and a message whose content is not text are
refused with the messages written out here (Jinja's own words taken from Jinja).
"""

from __future__ import annotations

from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

from engine.chat import render_chat
from engine.errors import TokenizerError
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.tokenizer.chat_templates import CONVERSATIONS, TEMPLATES
from pv.checkers import checker

WITH_SPECIALS = ("llama2", "llama3", "zephyr", "gemma", "chatml")
BROKEN = "{{ messages[3]['content'] }}"  # one message given: indexing past it is Jinja's error, not the template's


def _jinja_error(template: str) -> str:
    """What Jinja2's sandbox (transformers' renderer) says when ``template`` fails on one message."""

    try:
        ImmutableSandboxedEnvironment().from_string(template).render(messages=[{"role": "user", "content": "a"}])
    except Exception as exc:
        return str(exc)
    return "(rendered)"


@checker(
    observes=["renders", "renders_differing", "refusals", "refusals_differing", "differing"], ids=["FALSIFY-TOK-007"]
)
def chat_defaults_and_refusals(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """Five templates (four of them writing bos_token or eos_token) over three conversations with
    render_chat's defaults against transformers on a tokenizer with no BOS or EOS; then two
    templates that refuse a conversation, one that fails in Jinja, and contents that are not text."""
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import PreTrainedTokenizerFast

    reference = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(engine_tokenizer.hf_json()))
    differing = []
    renders = 0
    for name in WITH_SPECIALS:
        for conversation in CONVERSATIONS:
            if name in ("llama2", "gemma") and conversation[0]["role"] == "system":
                continue  # these templates fold or refuse a system turn; the refusal is below
            mine = render_chat(TEMPLATES[name], conversation)
            theirs = reference.apply_chat_template(
                conversation,
                chat_template=TEMPLATES[name],
                tokenize=False,
                add_generation_prompt=True,
                bos_token="",
                eos_token="",
            )
            renders += 1
            if mine != theirs:
                differing.append(f"{name}: {mine!r} != {theirs!r}")
    renders_differing = len(differing)
    plain = EngineTokenizer.from_json(engine_tokenizer.to_json())
    plain.chat_template = None
    alternate = "Conversation roles must alternate user/assistant/user/assistant/..."
    requests: list[tuple[Any, str]] = [
        (
            lambda: render_chat(
                TEMPLATES["llama2"], [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
            ),
            f"chat template refused the conversation: {alternate}",
        ),
        (
            lambda: render_chat(TEMPLATES["gemma"], list(CONVERSATIONS[0])),
            "chat template refused the conversation: System role not supported",
        ),
        (
            lambda: render_chat(BROKEN, [{"role": "user", "content": "a"}]),
            f"the chat template failed to render: {_jinja_error(BROKEN)}",
        ),
        (
            lambda: render_chat(TEMPLATES["chatml"], [{"role": "user", "content": 3}]),
            "message 0: content must be text, got int",
        ),
        (
            lambda: render_chat(
                TEMPLATES["chatml"], [{"role": "user", "content": "a"}, {"role": "assistant", "content": ["b"]}]
            ),
            "message 1: content must be text, got list",
        ),
        (
            lambda: render_chat(TEMPLATES["chatml"], []),
            "a conversation is a non-empty list of {role, content} messages",
        ),
        (
            lambda: render_chat(TEMPLATES["chatml"], "hello"),  # type: ignore[arg-type]
            "a conversation is a non-empty list of {role, content} messages",
        ),
        (
            lambda: render_chat(TEMPLATES["chatml"], [{"role": "user", "content": "a"}, "b"]),  # type: ignore[list-item]
            "message 1 is not a mapping with `role` and `content`",
        ),
        (
            lambda: render_chat(TEMPLATES["chatml"], [{"role": "tool", "content": "a"}]),
            "message 0: role must be one of system, user, assistant, got 'tool'",
        ),
        (
            lambda: plain.apply_chat_template([{"role": "user", "content": "a"}]),
            "this tokenizer has no chat template; give a plain prompt instead",
        ),
    ]
    refusals = refusals_differing((call, TokenizerError, message) for call, message in requests)
    differing += refusals
    return {
        "renders": renders,
        "renders_differing": renders_differing,
        "refusals": len(requests),
        "refusals_differing": len(refusals),
        "differing": differing,
    }
