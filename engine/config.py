"""Architecture configuration for the engine's decoder, in Hugging Face Llama/Qwen2 key names."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from engine.architectures import ARCHITECTURES, names
from engine.faults import FAULTS

# The linear layers a LoRA adapter may wrap (here, not in engine.lora, so the CLI's help names them
# without importing torch).
ATTENTION_PROJECTIONS: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_PROJECTIONS: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
ALL_PROJECTIONS: tuple[str, ...] = ATTENTION_PROJECTIONS + MLP_PROJECTIONS
DEFAULT_TARGETS: tuple[str, ...] = ("q_proj", "v_proj")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    max_position_embeddings: int = 2048
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    attention_bias: bool = False  # Qwen2 puts a bias on q/k/v
    tie_word_embeddings: bool = False
    architecture: str = "llama"  # a name of engine.architectures.ARCHITECTURES
    bos_token_id: int | None = None
    # one id, or several (Llama 3 / Qwen2 instruct checkpoints end a turn on any of a few tokens)
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.architecture not in ARCHITECTURES:
            expected = " or ".join(repr(n) for n in names())
            raise ValueError(f"unknown architecture {self.architecture!r}; expected {expected}")
        if FAULTS.active("config_odd_head_dim_accepted"):  # pragma: no mutate
            return  # pragma: no mutate -- the defect: rotary embeddings would pair a dimension with none
        if self.head_dim % 2:
            raise ValueError(f"head_dim {self.head_dim} must be even for rotary embeddings")

    @property
    def eos_ids(self) -> tuple[int, ...]:
        """Every end-of-sequence id, as a tuple (empty when none is set)."""
        if self.eos_token_id is None:
            return ()
        return (self.eos_token_id,) if isinstance(self.eos_token_id, int) else tuple(self.eos_token_id)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        eos = data.get("eos_token_id")
        if isinstance(eos, list):  # JSON has no tuples
            data = {**data, "eos_token_id": tuple(eos)}
        return cls(**data)

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)


def _keys_of(kind: type) -> tuple[str, ...]:
    hints = typing.get_type_hints(ModelConfig)
    return tuple(f.name for f in dataclasses.fields(ModelConfig) if hints[f.name] is kind)


# Derived from ModelConfig, so a new field is carried by every checkpoint without a second list.
SPECIAL_ID_KEYS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(ModelConfig) if f.name.endswith("_token_id")
)
# The keys every checkpoint must carry; a checkpoint missing one does not load.
ARCHITECTURE_KEYS: tuple[str, ...] = (
    "architecture",
    *(f.name for f in dataclasses.fields(ModelConfig) if f.name not in (*SPECIAL_ID_KEYS, "architecture")),
)
INT_KEYS, FLOAT_KEYS, BOOL_KEYS = _keys_of(int), _keys_of(float), _keys_of(bool)


PRESETS: dict[str, ModelConfig] = {
    # CPU unit tests: a few hundred thousand parameters.
    "tiny": ModelConfig(
        vocab_size=512,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=176,
        max_position_embeddings=256,
    ),
    # Benchmarks: a few million parameters, still CPU-friendly.
    "small": ModelConfig(
        vocab_size=2048,
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        intermediate_size=688,
        max_position_embeddings=512,
    ),
    # Real shapes, built on the meta device only (parameter counts and memory, no allocation).
    "qwen2.5-0.5b": ModelConfig(
        vocab_size=151936,
        hidden_size=896,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        intermediate_size=4864,
        max_position_embeddings=32768,
        rope_theta=1000000.0,
        attention_bias=True,
        tie_word_embeddings=True,
        architecture="qwen2",
    ),
    "qwen2.5-7b": ModelConfig(
        vocab_size=152064,
        hidden_size=3584,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        intermediate_size=18944,
        max_position_embeddings=32768,
        rope_theta=1000000.0,
        attention_bias=True,
        tie_word_embeddings=False,
        architecture="qwen2",
    ),
}


def preset(name: str, **overrides: Any) -> ModelConfig:
    try:
        base = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
    return base.replace(**overrides) if overrides else base
