"""engine/architectures.py: the one table of model families, and the readers and writers that ask it."""

from __future__ import annotations

import pytest

from engine import architectures
from engine.architectures import ARCHITECTURES, by_gguf_name, by_hf_model_type, exported_as
from engine.config import preset
from engine.errors import ExportError
from engine.hf_interop import from_hf_config, hf_architecture, to_hf_config


def test_each_family_is_found_by_each_of_its_names() -> None:
    for family in ARCHITECTURES.values():
        assert by_hf_model_type(family.hf_model_type) is family
        assert by_gguf_name(family.gguf_name) is family
    assert by_hf_model_type("mistral") is None and by_gguf_name("falcon") is None
    assert architectures.names() == ("llama", "qwen2")


@pytest.mark.parametrize(
    ("name", "bias", "written_as"),
    [("llama", False, "llama"), ("qwen2", True, "qwen2"), ("qwen2", False, "llama"), ("llama", True, "qwen2")],
)
def test_a_config_is_written_as_the_family_whose_biases_it_has(name: str, bias: bool, written_as: str) -> None:
    config = preset("tiny", architecture=name, attention_bias=bias)
    assert exported_as(config).name == written_as
    assert hf_architecture(config)[1] == written_as


def test_an_unknown_family_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown architecture 'mistral'; expected 'llama' or 'qwen2'"):
        preset("tiny", architecture="mistral")
    with pytest.raises(ExportError, match="supported model_type: llama, qwen2"):
        from_hf_config({**to_hf_config(preset("tiny")), "model_type": "mistral"})


def test_each_family_writes_its_own_config_keys_and_reads_them_back() -> None:
    for name, bias in (("llama", False), ("qwen2", True)):
        config = preset("tiny", architecture=name, attention_bias=bias)
        hf = to_hf_config(config)
        assert hf["model_type"] == name and hf["architectures"] == [ARCHITECTURES[name].hf_class]
        assert set(ARCHITECTURES[name].hf_config_extras(config.num_hidden_layers)) <= set(hf)
        back = from_hf_config(hf)
        assert back.architecture == name and back.attention_bias == bias


@pytest.mark.parametrize(
    ("name", "extra", "refusal"),
    [
        ("llama", {"mlp_bias": True}, "Llama attention_bias/mlp_bias"),
        ("qwen2", {"use_sliding_window": True}, "Qwen2 sliding-window attention"),
    ],
)
def test_what_a_family_may_ask_and_the_decoder_lacks_is_refused(name: str, extra: dict, refusal: str) -> None:
    hf = to_hf_config(preset("tiny", architecture=name, attention_bias=name == "qwen2"))
    with pytest.raises(ExportError, match=refusal):
        from_hf_config({**hf, **extra})


def test_a_config_json_without_a_context_gets_the_family_default() -> None:
    for name in ("llama", "qwen2"):
        hf = to_hf_config(preset("tiny", architecture=name, attention_bias=name == "qwen2"))
        del hf["max_position_embeddings"]
        assert from_hf_config(hf).max_position_embeddings == ARCHITECTURES[name].default_context
