"""Chat templates: a conversation rendered to the exact text the model was trained on.

The template is the checkpoint's own (kept from the GGUF ``tokenizer.chat_template`` key or the
Hugging Face ``tokenizer_config.json``), rendered as transformers renders it: Jinja2 in an immutable
sandbox with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``tojson``
filter, ``raise_exception`` and the ``bos_token`` / ``eos_token`` variables.  So the engine's chat
prompt is the string ``apply_chat_template`` gives, and its ids are that string's encoding with no
BOS added (the template writes any it wants).

Imports inside functions: jinja2 loads only when a chat template is compiled or rendered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NoReturn

from engine.errors import TokenizerError
from engine.faults import FAULTS

ROLES = ("system", "user", "assistant")


def _raise(message: str) -> NoReturn:
    raise TokenizerError(f"chat template refused the conversation: {message}")


@lru_cache(maxsize=8)
def _compiled(template: str) -> Any:
    from jinja2 import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = _raise
    try:
        return env.from_string(template)
    except TemplateError as exc:
        raise TokenizerError(f"the chat template is not valid Jinja: {exc}") from None


def check_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """``messages`` as plain dicts, or a :class:`TokenizerError` naming the first malformed one."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise TokenizerError("a conversation is a non-empty list of {role, content} messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise TokenizerError(f"message {i} is not a mapping with `role` and `content`")
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            raise TokenizerError(f"message {i}: role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise TokenizerError(f"message {i}: content must be text, got {type(content).__name__}")
        out.append({"role": str(role), "content": content})
    return out


_FIRST_COMPILED: dict[str, Any] = {}  # used by fault chat_template_compiled_once only


def render_chat(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """The text ``template`` makes of ``messages`` (with the assistant's opening when
    ``add_generation_prompt``)."""
    from jinja2 import TemplateError

    checked = check_messages(messages)
    if FAULTS.active("chat_missing_specials_rendered_none"):  # the defect: an absent special token reads "None"
        bos_token, eos_token = bos_token or "None", eos_token or "None"  # pragma: no mutate
    compiled = _compiled(template)
    if FAULTS.active("chat_template_compiled_once"):  # the defect: the first template compiled serves every one
        compiled = _FIRST_COMPILED.setdefault("template", compiled)  # pragma: no mutate
    try:
        return str(
            compiled.render(
                messages=checked,
                # the fault: the assistant's opening is never written, so the model goes on with the user's turn
                add_generation_prompt=add_generation_prompt and not FAULTS.active("chat_generation_prompt_dropped"),
                bos_token=bos_token,
                eos_token=eos_token,
            )
        )
    except TemplateError as exc:
        raise TokenizerError(f"the chat template failed to render: {exc}") from None


def conversation(prompt: str, system: str | None = None) -> list[dict[str, str]]:
    """One user turn, after an optional system message (an empty one is a system turn too)."""
    if FAULTS.active("chat_empty_system_dropped"):  # the defect: an empty system message is left out
        system = system or None  # pragma: no mutate
    head = [{"role": "system", "content": system}] if system is not None else []
    return [*head, {"role": "user", "content": prompt}]
