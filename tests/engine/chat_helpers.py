"""A chat model's tokenizer built from the tiny one: ChatML turn tokens and SmolLM2's template."""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer

from engine.tokenizer import EngineTokenizer
from tests.engine.core_helpers import tiny_tokenizer

# SmolLM2-135M-Instruct's template, as its GGUF carries it.
CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def chat_tokenizer(add_bos_token: bool = False) -> EngineTokenizer:
    base = tiny_tokenizer()
    backend = Tokenizer.from_str(base.backend.to_str())
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<|im_start|>", "<|im_end|>")])
    return EngineTokenizer(
        backend, base.bos_token, "<|im_end|>", base.pad_token, add_bos_token=add_bos_token, chat_template=CHATML
    )
