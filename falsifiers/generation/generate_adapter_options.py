"""``generate --adapter`` honours ``--nf4/--no-nf4`` and ``--allow-other-base``.

FALSIFY-GEN-012 holds ``generate --adapter`` to ``generate`` on ``load_adapted``'s model with its
defaults.  The two options change which base the adapter runs on: an NF4 or a full-precision
copy of the checkpoint, and a checkpoint other than the one the adapter was trained on.  Each
command's ``--json`` rows are compared with ``engine.generate.generate`` on the model
``load_adapted`` gives for the same choice.  The base is a tiny model with weights drawn from
N(0, 0.3), whose logits are spread wide enough that the NF4 base's rounding changes the tokens
drawn (on the pretrained init the two bases draw the same ones); the NF4 and full-precision
references must differ in most tokens, or the comparison could not tell the options apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.adapters import find_adapter, load_adapted
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.data import InstructionData
from engine.generate import generate
from falsifiers.generation.generate_cli import left_padded
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPTS = ("The quick brown", "def f(x):", "Once", "import os")
NEW_TOKENS = 16
TEMPERATURE, SEED = 1.0, 11
BASE_STD = 0.3


def _reference(base: Path, adapter: Path, quantize: bool | None, allow_other_base: bool = False) -> list[list[int]]:
    """The new ids generate draws on load_adapted's model, the batch built as the command builds it."""

    model: Any
    model, loaded = load_adapted(base, find_adapter(adapter), "cpu", quantize, allow_other_base)
    tok = loaded.tokenizer
    _, batch, mask = left_padded(tok, PROMPTS)
    out = generate(
        model, batch, mask, max_new_tokens=NEW_TOKENS, temperature=TEMPERATURE, seed=SEED,
        eos_token_id=loaded.config.eos_ids, pad_token_id=tok.pad_id,
    )  # fmt: skip
    return [list(map(int, new)) for new in out.new_tokens]


def _differing(a: list[list[int]], b: list[list[int]]) -> int:
    """Positions at which two batches of new ids differ, a row's missing tokens included."""
    return sum(
        sum(x != y for x, y in zip(r, q, strict=False)) + abs(len(r) - len(q)) for r, q in zip(a, b, strict=True)
    )


def _wide_base(factory: Any, tokenizer: Any, out: Path) -> Path:

    model = factory(5, std=BASE_STD, vocab_size=tokenizer.vocab_size)
    return Path(save_checkpoint(out, model, tokenizer, {}))


def _other_base(base: Path, out: Path) -> Path:
    """The base with one weight nudged: another checkpoint, another digest."""

    loaded = load_checkpoint(base)
    with torch.no_grad():
        loaded.model.model.norm.weight.add_(0.25)
    return Path(save_checkpoint(out, loaded.model, loaded.tokenizer, loaded.manifest))


@checker(
    observes=[
        "requests",
        "exit_codes",
        "rows_differing",
        "nf4_tokens_differing",
        "least_nf4_tokens_differing",
        "tokens",
        "refused_naming",
    ],
    ids=["FALSIFY-GEN-015"],
)
def generate_adapter_options(
    tiny_model_factory: Any, engine_tokenizer: Any, instruction_data: InstructionData, tmp_path: Path
) -> dict[str, Any]:
    """A LoRA and a QLoRA adapter (2 steps each on the wide base) through ``generate --json``:
    LoRA with --nf4, QLoRA with --no-nf4 and by default, and LoRA on another base with and
    without --allow-other-base."""
    work = fresh_dir(tmp_path, "generate-adapter-")
    base = _wide_base(tiny_model_factory, engine_tokenizer, work / "base.safetensors")
    lora = trained_adapter(base, instruction_data, work / "lora-run")
    qlora = trained_adapter(base, instruction_data, work / "qlora-run", method="qlora")
    other = _other_base(base, work / "other.safetensors")
    cli = cli_runner()
    prompts = [a for p in PROMPTS for a in ("-p", p)]
    common = ["-n", NEW_TOKENS, "--temperature", TEMPERATURE, "--seed", SEED, "--json"]
    requests: list[tuple[Path, list[Any], list[list[int]]]] = [
        (base, ["--adapter", lora, "--nf4"], _reference(base, lora, True)),
        (base, ["--adapter", qlora, "--no-nf4"], _reference(base, qlora, False)),
        (base, ["--adapter", qlora], _reference(base, qlora, None)),
        (other, ["--adapter", lora, "--allow-other-base"], _reference(other, lora, None, allow_other_base=True)),
    ]
    out: dict[str, Any] = {"requests": len(requests), "exit_codes": [], "rows_differing": 0}
    for checkpoint, options, want in requests:
        result = cli("generate", checkpoint, *prompts, *common, *options)
        out["exit_codes"].append(result.exit_code)
        if result.exit_code == 0:
            got = [row["new_ids"] for row in json.loads(result.stdout)]
            out["rows_differing"] += abs(len(got) - len(want)) + sum(g != w for g, w in zip(got, want, strict=False))
    # the options must matter on these models: NF4 and full-precision bases draw other tokens
    out["nf4_tokens_differing"] = [
        _differing(_reference(base, adapter, True), _reference(base, adapter, False)) for adapter in (lora, qlora)
    ]
    out["least_nf4_tokens_differing"] = min(out["nf4_tokens_differing"])
    out["tokens"] = len(PROMPTS) * NEW_TOKENS
    refused = cli("generate", other, *prompts, *common, "--adapter", lora)
    out["refused_naming"] = refused_cleanly(refused, names=[str(other), "--allow-other-base"])
    return out
