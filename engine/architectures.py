"""The model families the engine builds, reads and writes: one small class each, chosen by name.

Every fact that differs between families lives on its class, so the modules that read and write
files (``engine.config``, ``engine.checkpoint``, ``engine.hf_interop``, ``engine.gguf_export``,
``engine.gguf_import``) ask the family instead of naming one: its names in a Hugging Face
``config.json`` and in a GGUF file, whether its q/k/v projections carry biases, transformers'
default context, whether llama.cpp stores its q/k rows interleaved, and the ``config.json`` keys
only it writes.

Adding a family is a class here and a line in :data:`ARCHITECTURES` (CONTRIBUTING.md: "An
architecture").  The decoder itself (``engine.model``) is the same for every family.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.faults import FAULTS


class Architecture:
    """A family of the engine's decoder, as other tools name and store it."""

    name: str  # the engine's own name (``ModelConfig.architecture``, a checkpoint's metadata)
    hf_model_type: str  # ``model_type`` in a Hugging Face config.json
    hf_class: str  # ``architectures[0]`` in a config.json
    gguf_name: str  # ``general.architecture`` in a GGUF file, and its keys' prefix
    attention_bias: bool  # q/k/v projections carry biases
    default_context: int  # transformers' default ``max_position_embeddings`` for the family
    gguf_permutes_qk: bool  # llama.cpp stores q/k rows interleaved for RoPE (its ``LlamaModel.permute``)

    def hf_config_extras(self, num_hidden_layers: int) -> dict[str, Any]:
        """The ``config.json`` keys only this family writes."""
        return {}

    def hf_config_refusal(self, hf: Mapping[str, Any]) -> str | None:
        """Why a ``config.json`` of this family asks for what the engine's decoder does not have, or None."""
        return None


class Llama(Architecture):
    name = hf_model_type = gguf_name = "llama"
    hf_class = "LlamaForCausalLM"
    attention_bias = False
    default_context = 2048
    gguf_permutes_qk = True

    def hf_config_extras(self, num_hidden_layers: int) -> dict[str, Any]:
        return {"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1}

    def hf_config_refusal(self, hf: Mapping[str, Any]) -> str | None:
        if hf.get("attention_bias") or hf.get("mlp_bias"):
            return "Llama attention_bias/mlp_bias (bias on o_proj or the MLP) is not supported by the engine"
        return None


class Qwen2(Architecture):
    name = hf_model_type = gguf_name = "qwen2"
    hf_class = "Qwen2ForCausalLM"
    attention_bias = True
    default_context = 32768
    gguf_permutes_qk = False

    def hf_config_extras(self, num_hidden_layers: int) -> dict[str, Any]:
        return {"use_sliding_window": False, "sliding_window": None, "max_window_layers": num_hidden_layers}

    def hf_config_refusal(self, hf: Mapping[str, Any]) -> str | None:
        sliding = bool(hf.get("use_sliding_window"))
        if FAULTS.active("hf_import_sliding_window_accepted"):  # the defect: imported as full attention
            sliding = False  # pragma: no mutate
        if sliding:
            return "Qwen2 sliding-window attention is not supported by the engine"
        return None


ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (Llama(), Qwen2())}


def names() -> tuple[str, ...]:
    """The engine's names of every family, in the table's order."""
    return tuple(ARCHITECTURES)


def _find(attribute: str, value: object) -> Architecture | None:
    return next((a for a in ARCHITECTURES.values() if getattr(a, attribute) == value), None)


def by_hf_model_type(model_type: object) -> Architecture | None:
    return _find("hf_model_type", model_type)


def by_gguf_name(name: object) -> Architecture | None:
    return _find("gguf_name", name)


def exported_as(config: Any) -> Architecture:
    """The family a :class:`engine.config.ModelConfig` is written out as: its own when its q/k/v
    biases are the family's, else the first family whose biases they are (a ``qwen2`` config
    without biases is written as Llama, since llama.cpp's and transformers' Qwen2 require them)."""
    own = ARCHITECTURES[config.architecture]
    if own.attention_bias == config.attention_bias:
        return own
    found = _find("attention_bias", config.attention_bias)
    if found is None:
        raise ValueError(f"no architecture writes q/k/v biases={config.attention_bias}")
    return found
