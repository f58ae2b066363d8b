"""The chat templates checkers write into tokenizers and files, and their rendering as
transformers does it (Jinja2's immutable sandbox, trim and lstrip blocks)."""

from __future__ import annotations

from jinja2.sandbox import ImmutableSandboxedEnvironment


def render(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """The template as transformers renders it: Jinja2's immutable sandbox, trim and lstrip blocks."""

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, add_generation_prompt=add_generation_prompt)


# A ChatML template as instruct models ship it: a GGUF must carry it to the importer unchanged.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# a template that also writes the tokenizer's BOS and EOS, as Llama 2 and Zephyr templates do
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
