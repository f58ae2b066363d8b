"""What ``python -m engine generate`` prints when it samples, and with an adapter: the tokens the
generation function draws for the same model, prompts and settings.

GEN-006/007 hold ``engine.generate.generate`` to the sampling distribution; this claim holds the
command to that function.  The reference batch is built here (each prompt encoded with the
tokenizer's BOS rule, left-padded with the pad id, masked) and decoded by ``generate`` on the
checkpoint loaded, or on the base with the adapter applied by ``engine.adapters.load_adapted``.
The printed text of each prompt is the prompt followed by its new tokens decoded without special
tokens; ``--json`` gives each prompt's ids, new ids, text and whether it stopped on EOS.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from engine.adapters import find_adapter, load_adapted
from engine.checkpoint import load_checkpoint
from engine.data import InstructionData
from engine.generate import generate
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import trained_adapter
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPTS = ("The quick brown", "def f(x):", "Once")
# (--temperature, --top-k, --top-p, --seed, with the adapter)
SETTINGS: tuple[tuple[float, int | None, float | None, int, bool], ...] = (
    (0.8, None, None, 3, False), (1.3, 20, None, 4, False), (0.9, None, 0.85, 5, False),
    (1.0, 40, 0.9, 6, False), (0.8, 20, 0.9, 7, True),
)  # fmt: skip
NEW_TOKENS = 12


def left_padded(tok: Any, prompts: Sequence[str]) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """Each prompt's ids by the tokenizer's BOS rule, and the batch the command builds of them:
    left-padded with the pad id, with a mask of ones on the tokens."""
    ids = [tok.encode(p, add_bos=tok.add_bos_token) for p in prompts]
    width = max(map(len, ids))
    batch = torch.tensor([[tok.pad_id] * (width - len(i)) + i for i in ids])
    mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids])
    return ids, batch, mask


def _reference(checkpoint: Path, adapter: Path | None, settings: tuple[Any, ...]) -> list[dict[str, Any]]:

    temperature, top_k, top_p, seed, _ = settings
    model: Any
    if adapter is not None:
        model, loaded = load_adapted(checkpoint, find_adapter(adapter))
    else:
        loaded = load_checkpoint(checkpoint)
        model = loaded.model
    tok = loaded.tokenizer
    ids, batch, mask = left_padded(tok, PROMPTS)
    out = generate(
        model.eval(), batch, mask, max_new_tokens=NEW_TOKENS, temperature=temperature, top_k=top_k, top_p=top_p,
        seed=seed, eos_token_id=loaded.config.eos_ids, pad_token_id=tok.pad_id,
    )  # fmt: skip
    rows = zip(PROMPTS, ids, out.new_tokens, out.finished, strict=True)
    return [
        {
            "prompt": p,
            "prompt_ids": i,
            "new_ids": new,
            "text": tok.decode(new, skip_special_tokens=True),
            "stopped_on_eos": f,
        }
        for p, i, new, f in rows
    ]


@checker(
    observes=["requests", "exit_codes_nonzero", "rows", "rows_differing", "text_differs", "repeats_differing"],
    ids=["FALSIFY-GEN-012"],
)
def generate_command_samples_as_the_function(
    pretrained_init: Path, instruction_data: InstructionData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """Five sampled requests of three prompts through ``python -m engine generate`` (temperature
    alone, with top-k, with top-p, with both, and with a LoRA adapter), each with ``--json`` and as
    plain text, against ``generate`` on the same model with the same settings."""
    cli = cli_runner()
    work = fresh_dir(tmp_path, "generate-cli-")
    adapter = trained_adapter(pretrained_init, instruction_data, work / "adapter-run", seed=seed)
    out = dict.fromkeys(("requests", "exit_codes_nonzero", "rows", "rows_differing", "text_differs"), 0)
    out["repeats_differing"] = 0
    for settings in SETTINGS:
        temperature, top_k, top_p, draw_seed, with_adapter = settings
        args: list[Any] = ["generate", pretrained_init, *[a for p in PROMPTS for a in ("-p", p)], "-n", NEW_TOKENS]
        args += ["--temperature", temperature, "--seed", draw_seed]
        args += [*(["--top-k", top_k] if top_k is not None else []), *(["--top-p", top_p] if top_p is not None else [])]
        args += ["--adapter", adapter] if with_adapter else []
        as_json, as_text, again = cli(*args, "--json"), cli(*args), cli(*args, "--json")
        out["requests"] += 1
        if as_json.exit_code or as_text.exit_code or again.exit_code:
            out["exit_codes_nonzero"] += 1
            continue
        want = _reference(pretrained_init, adapter if with_adapter else None, settings)
        got = json.loads(as_json.stdout)
        out["rows"] += len(got)
        out["rows_differing"] += abs(len(got) - len(want)) + sum(g != w for g, w in zip(got, want, strict=False))
        out["text_differs"] += as_text.stdout != "".join(w["prompt"] + w["text"] + "\n" for w in want)
        out["repeats_differing"] += json.loads(again.stdout) != got
    return out
