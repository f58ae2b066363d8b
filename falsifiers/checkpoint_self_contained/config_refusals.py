"""What ``ModelConfig`` accepts as an architecture, and what it refuses, word for word.

Every model the engine builds, loads or imports starts from a ``ModelConfig``: a preset with
overrides, a checkpoint's header read with ``from_dict``, or an imported config.  A config no
decoder can be built from is refused with a ``ValueError`` that names the numbers at fault: a
width the heads do not divide, heads the key/value heads do not divide, an architecture other than
Llama's or Qwen2's, and an odd head width (rotary embeddings turn dimensions in pairs).
``from_dict`` refuses keys it does not know, all of them named in sorted order, and reads a JSON
list of EOS ids as a tuple.  ``to_dict`` gives every field by name, and ``from_dict`` of it gives
the config back.  Each refusal's text is written out below; each accepted config is read field by
field with ``dataclasses.fields``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from engine.architectures import ARCHITECTURES
from engine.config import PRESETS, ModelConfig, preset
from falsifiers.shared.refusals import Refusal, refusals_differing
from pv.checkers import checker

# overrides of the tiny preset (hidden 64, 4 heads, 2 key/value heads) and the refusal each must get
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"num_attention_heads": 3, "num_key_value_heads": 3}, "hidden_size 64 is not divisible by num_attention_heads 3"),
    ({"num_key_value_heads": 3}, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
    # the families are the engine's table's; the message around them is the claim
    ({"architecture": "gpt2"}, f"unknown architecture 'gpt2'; expected {' or '.join(map(repr, ARCHITECTURES))}"),
    ({"hidden_size": 12}, "head_dim 3 must be even for rotary embeddings"),
    (
        {"hidden_size": 36, "num_attention_heads": 4, "num_key_value_heads": 4},
        "head_dim 9 must be even for rotary embeddings",
    ),
]
UNKNOWN = {"rope_scaling": None, "model_type": "llama"}
# overrides of the tiny preset that make a config as valid as any
ACCEPTED: list[dict[str, Any]] = [
    {},
    {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True},
    {"hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 1},  # head_dim 2
    {"num_key_value_heads": 4, "bos_token_id": 0, "eos_token_id": (1, 5), "pad_token_id": 2},
]
# eos_token_id as JSON holds it, and as the config must hold it
EOS_READ: list[tuple[Any, Any]] = [(5, 5), ([5], (5,)), ([5, 7], (5, 7)), (None, None)]


def _fields(config: ModelConfig) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(ModelConfig)}


@checker(observes=["refusals", "refusals_differing", "reads", "reads_differing"], ids=["FALSIFY-CKPT-016"])
def config_read_or_refused() -> dict[str, Any]:
    """``preset("tiny", **overrides)``, ``ModelConfig(**fields)`` and ``from_dict`` of each edit of
    ``REFUSED`` (the refusals that differ), and ``from_dict`` of the tiny preset's fields with the
    keys of ``UNKNOWN``; then each of ``ACCEPTED`` through the same three doors, ``from_dict(to_dict())``
    of every preset, and ``from_dict`` with each EOS of ``EOS_READ`` (the fields that differ from
    what was given, with the exact type of the EOS, and a config that cannot be hashed)."""
    tiny = _fields(PRESETS["tiny"])
    cases: list[Refusal] = []
    for edit, message in REFUSED:
        fields = {**tiny, **edit}
        cases += [
            (functools.partial(preset, "tiny", **edit), ValueError, message),
            (functools.partial(ModelConfig, **fields), ValueError, message),
            (functools.partial(ModelConfig.from_dict, fields), ValueError, message),
        ]
    cases.append(
        (
            lambda: ModelConfig.from_dict({**tiny, **UNKNOWN}),
            ValueError,
            "unknown config keys: model_type, rope_scaling",
        )
    )

    reads_differing: list[str] = []

    def compare(name: str, build: Any, want: dict[str, Any]) -> None:
        try:
            config = build()
            hash(config)  # a frozen config goes into sets and caches
        except (TypeError, ValueError) as exc:
            reads_differing.append(f"{name}: {type(exc).__name__}: {exc}")
            return
        got = _fields(config)
        for key, value in want.items():
            if got[key] != value or type(got[key]) is not type(value):
                reads_differing.append(f"{name}: {key} {got[key]!r} != {value!r}")

    reads = 0
    for edit in ACCEPTED:
        want = {**tiny, **edit}
        compare(f"preset('tiny', **{edit})", lambda edit=edit: preset("tiny", **edit), want)
        compare(f"ModelConfig(**{edit})", lambda want=want: ModelConfig(**want), want)
        as_json = {k: list(v) if isinstance(v, tuple) else v for k, v in want.items()}
        compare(f"from_dict of {edit}", lambda as_json=as_json: ModelConfig.from_dict(as_json), want)
        reads += 3
    for name, config in PRESETS.items():
        want = _fields(config)
        compare(f"to_dict of {name}", lambda config=config: ModelConfig.from_dict(config.to_dict()), want)
        if config.to_dict() != want:
            reads_differing.append(f"to_dict of {name}: {config.to_dict()!r} != {want!r}")
        reads += 1
    for given, held in EOS_READ:
        compare(
            f"eos_token_id {given!r}",
            lambda given=given: ModelConfig.from_dict({**tiny, "eos_token_id": given}),
            {**tiny, "eos_token_id": held},
        )
        reads += 1
    return {
        "refusals": len(cases),
        "refusals_differing": refusals_differing(cases),
        "reads": reads,
        "reads_differing": reads_differing,
    }
