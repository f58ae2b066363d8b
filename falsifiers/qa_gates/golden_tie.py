"""The golden gate without a golden file, when cached and uncached greedy decoding part at a near tie.

Cached decoding feeds one token per forward, uncached the whole sequence, so their logits differ by
rounding; where the two best next tokens are that close, the decodes may pick different tokens and
read different inputs from then on.  The gate then compares the tokens before the parting step and
says where they parted and by what margin.  A forward hook on the head makes the tie: two tokens
placed just above the best logit, the second lifted by ``DELTA`` per position of the call, so the
prompt-length forwards pick it and one-token forwards do not.  The margin is read back from the
model's own forward on the prompt and the first token, without the engine's decoding or gate.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import load_checkpoint
from engine.qa import GOLDEN_PROMPT, golden_gate
from pv.checkers import checker

DELTA = 2e-5  # the lift per position: a prompt's forward lifts it ~10x more than a one-token forward


@checker(
    observes=["parted_at", "status", "value", "bound", "margin_printed", "margin_measured", "drift_within"],
    ids=["FALSIFY-QAG-007"],
)
def near_tie_compared_up_to_it(pretrained_init: Path) -> dict[str, Any]:
    """The session's tiny checkpoint with the tie hook, through ``golden_gate(loaded, None)``."""
    loaded = load_checkpoint(pretrained_init)
    loaded.model.eval()
    prompt = loaded.tokenizer.encode_prompt(GOLDEN_PROMPT)
    eos = set(loaded.config.eos_ids)
    first, second = [t for t in range(loaded.config.vocab_size - 1, -1, -1) if t not in eos][:2]
    gap = DELTA * len(prompt) / 2  # above a one-token lift, below a prompt-length one

    def tie(_module: Any, _inputs: Any, logits: torch.Tensor) -> torch.Tensor:
        out = logits.clone()
        top = out[:, -1].max(dim=-1).values
        out[:, -1, first] = top + 1.0
        out[:, -1, second] = top + 1.0 - gap + DELTA * logits.shape[1]
        return out

    handle = loaded.model.lm_head.register_forward_hook(tie)
    try:
        gate = golden_gate(loaded, None)
        with torch.no_grad():  # the uncached reference's logits at step 1, by a plain forward
            logits = loaded.model(torch.tensor([[*prompt, second]])).logits[0, -1]
    finally:
        handle.remove()
    top = torch.sort(logits, descending=True).values
    found = re.search(r"parted at a near tie at step (\d+) \(margin ([^)]+)\)", gate.detail)
    drift = re.search(r"logits within (\S+) <= (\S+) for", gate.detail)
    return {
        "parted_at": int(found.group(1)) if found else -1,
        "status": gate.status,
        "value": gate.value,
        "bound": gate.bound,
        "margin_printed": found.group(2) if found else "",
        "margin_measured": f"{float(top[0] - top[1]):.2g}",
        "drift_within": drift is not None and float(drift.group(1)) <= float(drift.group(2)),
    }
