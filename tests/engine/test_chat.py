from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.__main__ import COMMAND_MODULES
from engine.chat import conversation, render_chat
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.errors import TokenizerError
from engine.tokenizer import EngineTokenizer
from tests.engine.chat_helpers import CHATML, chat_tokenizer
from tests.engine.core_helpers import tiny_config, tiny_model, tiny_tokenizer

MESSAGES = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Capital of Italy?"}],
    [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello! 🙂"},
        {"role": "user", "content": "  spaces\tand\nlines  "},
    ],
]


@pytest.mark.parametrize("messages", MESSAGES)
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_render_equals_transformers(messages: list[dict[str, str]], generation_prompt: bool) -> None:
    transformers = pytest.importorskip("transformers")
    tok = chat_tokenizer()
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok.backend)
    hf.chat_template = CHATML
    want = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    assert render_chat(CHATML, messages, add_generation_prompt=generation_prompt) == want
    ids = tok.apply_chat_template(messages, add_generation_prompt=generation_prompt)
    assert ids == hf(want, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == want


def test_turn_tokens_stay_whole_and_no_bos_is_invented() -> None:
    tok = chat_tokenizer()
    ids = tok.apply_chat_template(conversation("hi"))
    start = tok.backend.token_to_id("<|im_start|>")
    assert ids[0] == start and tok.bos_id not in ids
    assert ids.count(start) == 3  # system, user, the assistant's opening


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "non-empty list"),
        ("hello", "non-empty list"),
        ([{"role": "robot", "content": "x"}], "role must be one of"),
        ([{"role": "user", "content": 3}], "content must be text"),
        (["user: hi"], "is not a mapping"),
    ],
)
def test_malformed_conversations_are_refused(messages: object, fragment: str) -> None:
    with pytest.raises(TokenizerError, match=fragment):
        render_chat(CHATML, messages)  # type: ignore[arg-type]


def test_template_errors_are_tokenizer_errors() -> None:
    with pytest.raises(TokenizerError, match="not valid Jinja"):
        render_chat("{% for %}", conversation("x"))
    with pytest.raises(TokenizerError, match="refused the conversation: no system"):
        render_chat("{{ raise_exception('no system') }}", conversation("x"))


def test_sandbox_blocks_attribute_escape() -> None:
    with pytest.raises(TokenizerError):
        render_chat("{{ messages.__class__.__mro__[1].__subclasses__() }}", conversation("x"))


def test_no_template_is_a_clear_error() -> None:
    with pytest.raises(TokenizerError, match="no chat template"):
        tiny_tokenizer().apply_chat_template(conversation("x"))


def test_settings_survive_the_tokenizer_json_and_default_json_is_unchanged() -> None:
    tok = chat_tokenizer()
    again = EngineTokenizer.from_json(tok.to_json())
    assert again.chat_template == CHATML and again.add_bos_token is False
    plain = tiny_tokenizer()
    doc = json.loads(plain.to_json())
    assert "chat_template" not in doc and "add_bos_token" not in doc  # old checkpoints keep their digests
    assert EngineTokenizer.from_json(plain.to_json()).add_bos_token is True


@pytest.mark.parametrize("bad", [{"add_bos_token": "yes"}, {"chat_template": 7}])
def test_malformed_settings_in_tokenizer_json(bad: dict[str, object]) -> None:
    doc = json.loads(chat_tokenizer().to_json())
    doc.update(bad)
    with pytest.raises(TokenizerError, match=next(iter(bad))):
        EngineTokenizer.from_json(json.dumps(doc))


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = chat_tokenizer()
    model = tiny_model(tiny_config(vocab_size=tok.vocab_size))
    path = tmp_path_factory.mktemp("chat") / "chat.safetensors"
    save_checkpoint(path, model, tok)
    return path


def _engine_cli(args: list[str]):  # type: ignore[no-untyped-def]
    import importlib

    from engine.app import app

    for name in COMMAND_MODULES:
        importlib.import_module(name)
    return CliRunner().invoke(app, args)


def test_generate_chat_sends_the_template(chat_checkpoint: Path) -> None:
    result = _engine_cli(
        ["generate", str(chat_checkpoint), "-p", "hi", "--chat", "--system", "Be brief.", "-n", "3", "--json"]
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    tok = load_checkpoint(chat_checkpoint).tokenizer
    want = tok.apply_chat_template(conversation("hi", "Be brief."))
    assert row["prompt_ids"] == want


def test_generate_bos_follows_the_tokenizer(chat_checkpoint: Path, tmp_path: Path) -> None:
    plain = _engine_cli(["generate", str(chat_checkpoint), "-p", "hi", "-n", "1", "--json"])
    tok = load_checkpoint(chat_checkpoint).tokenizer
    assert json.loads(plain.stdout)[0]["prompt_ids"] == tok.encode("hi")  # add_bos_token false: none
    forced = _engine_cli(["generate", str(chat_checkpoint), "-p", "hi", "-n", "1", "--json", "--bos"])
    assert json.loads(forced.stdout)[0]["prompt_ids"] == [tok.bos_id, *tok.encode("hi")]
    engine_tok = tiny_tokenizer()
    own = tmp_path / "own.safetensors"
    save_checkpoint(own, tiny_model(), engine_tok)
    default = _engine_cli(["generate", str(own), "-p", "hi", "-n", "1", "--json"])
    assert json.loads(default.stdout)[0]["prompt_ids"][0] == engine_tok.bos_id


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [(["--system", "x"], "add --chat"), (["--chat", "--no-bos"], "do not apply to --chat")],
)
def test_generate_chat_flag_errors(chat_checkpoint: Path, extra: list[str], fragment: str) -> None:
    result = _engine_cli(["generate", str(chat_checkpoint), "-p", "hi", "-n", "1", *extra])
    assert result.exit_code == 2 and fragment in result.output


def test_generate_chat_without_template_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.safetensors"
    save_checkpoint(path, tiny_model(), tiny_tokenizer())
    result = _engine_cli(["generate", str(path), "-p", "hi", "--chat"])
    assert result.exit_code == 2 and "no chat template" in result.output


def test_an_empty_system_message_is_a_system_turn() -> None:
    from engine.chat import conversation
    from engine.faults import FAULTS

    assert conversation("hi") == [{"role": "user", "content": "hi"}]
    assert conversation("hi", "") == [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}]
    with FAULTS.enabled("chat_empty_system_dropped"):
        assert conversation("hi", "") == [{"role": "user", "content": "hi"}]
