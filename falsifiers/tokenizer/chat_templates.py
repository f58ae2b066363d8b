"""Chat templates render as transformers renders them, call after call.

``engine.chat.render_chat`` keeps the 8 most recently compiled templates; ten templates written
the way model families ship them (ChatML, Llama 2 and 3, Zephyr, Gemma, Mistral, Phi-3, and
templates leaning on ``loopcontrols``, ``tojson``, ``namespace`` and the whitespace rules) are
rendered one after another and then again in the other order, so that every template is rendered
both freshly compiled and after others have been.  The reference is transformers'
``apply_chat_template(tokenize=False)`` with the same template, conversation and special tokens.
A template that refuses a conversation (``raise_exception``) must be refused by both, and
malformed conversations are refused naming the message at fault.
"""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer

from engine.chat import render_chat
from engine.errors import TokenizerError
from engine.tokenizer import EngineTokenizer
from pv.checkers import checker

BOS, EOS = "<|bos|>", "<|eos|>"
TEMPLATES: dict[str, str] = {
    "chatml": (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
    "llama2": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
        "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
    ),
    "llama3": (
        "{{ bos_token }}{% for message in messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim"
        " + '<|eot_id|>' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    "zephyr": (
        "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
        "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
        "{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"
    ),
    "gemma": (
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
        "{% else %}{% set role = message['role'] %}{% endif %}"
        "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
    ),
    "phi3": (
        "{% for message in messages %}{% if message['role'] == 'system' %}"
        "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
        "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}"
        "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
    ),
    "loopcontrols": (
        "{% for m in messages %}{% if m['role'] == 'system' %}{% continue %}{% endif %}"
        "{{ m['role'][0] | upper }}: {{ m['content'] }}\n{% if loop.index > 3 %}{% break %}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}A:{% endif %}"
    ),
    "tojson": "{{ bos_token }}{{ messages | tojson }}{% if add_generation_prompt %}\n>>> {% endif %}",
    "namespace": (
        "{% set ns = namespace(turns=0, system='') %}{% for m in messages %}{% if m['role'] == 'system' %}"
        "{% set ns.system = m['content'] %}{% else %}{% set ns.turns = ns.turns + 1 %}{% endif %}{% endfor %}"
        "[{{ ns.turns }} turns{% if ns.system %}; {{ ns.system }}{% endif %}]\n"
        "{% for m in messages if m['role'] != 'system' %}{{ loop.index }}. {{ m['content'] }}\n{% endfor %}"
    ),
    "whitespace": (
        "{% for m in messages %}\n    {% if m['role'] == 'user' %}\n        ### User:\n{{ m['content'] }}\n"
        "    {% else %}\n        ### {{ m['role'] | capitalize }}:\n{{ m['content'] }}\n    {% endif %}\n{% endfor %}\n"
        "{% if add_generation_prompt %}\n### Assistant:\n{% endif %}"
    ),
}
CONVERSATIONS: tuple[list[dict[str, str]], ...] = (
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Two and two?"}],
    [
        {"role": "user", "content": "  Name a colour.  "},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": 'And a "second" one,\nplease?'},
        {"role": "assistant", "content": "Grün — or 緑."},
        {"role": "user", "content": "Thanks"},
    ],
    [{"role": "user", "content": "{{ not a template }} {% raw %}"}],
)
MALFORMED: tuple[tuple[Any, str], ...] = (
    ([], "non-empty list"),
    ("Hello", "non-empty list"),
    ([{"role": "user", "content": "hi"}, ("assistant", "hello")], "message 1"),
    ([{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}], "message 1"),
    ([{"role": "user", "content": 3}], "message 0"),
    ([{"content": "no role"}], "message 0"),
)


def _transformers_tokenizer(engine_tokenizer: EngineTokenizer) -> Any:
    # transformers is a reference: it loads only in the checkers that compare with it (seconds a run)
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(engine_tokenizer.hf_json())
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS)


@checker(
    observes=["renders", "differing", "refused_by_both", "refused_by_one", "malformed", "malformed_refused_by_name"],
    ids=["FALSIFY-TOK-003"],
)
def chat_templates_render_as_transformers(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """Ten templates, three conversations, with and without the generation prompt, rendered in one
    order and then the other by ``render_chat`` and by transformers; then six malformed conversations."""

    reference = _transformers_tokenizer(engine_tokenizer)
    out = dict.fromkeys(("renders", "differing", "refused_by_both", "refused_by_one"), 0)
    names = list(TEMPLATES)
    for name in [*names, *reversed(names)]:
        template = TEMPLATES[name]
        for conversation in CONVERSATIONS:
            for generation_prompt in (True, False):
                mine = theirs = ""
                refusals = []
                try:
                    mine = render_chat(
                        template, conversation, add_generation_prompt=generation_prompt, bos_token=BOS, eos_token=EOS
                    )
                except TokenizerError as exc:
                    refusals.append(str(exc))
                try:
                    theirs = reference.apply_chat_template(
                        conversation, chat_template=template, tokenize=False, add_generation_prompt=generation_prompt
                    )
                except Exception as exc:  # transformers' TemplateError (raise_exception in the template)
                    refusals.append(str(exc))
                out["renders"] += 1
                if refusals:
                    # both refuse, the engine with the template's own words
                    both = len(refusals) == 2 and refusals[1] in refusals[0]
                    out["refused_by_both"] += both
                    out["refused_by_one"] += not both
                    continue
                out["differing"] += mine != theirs
    out["malformed"] = len(MALFORMED)
    out["malformed_refused_by_name"] = 0
    for messages, named in MALFORMED:
        try:
            render_chat(TEMPLATES["chatml"], messages)
        except TokenizerError as exc:
            out["malformed_refused_by_name"] += named in str(exc)
    return out
