"""What ``measure_training`` does to the model it measures, and what it reports of the run.

``measure_training(build, batch)`` is public: a user hands it a builder and a batch source, keeps
the model (a builder that closes over it) and reads the result.  The memory figures are judged by
FALSIFY-QMEM-006/008; here the run itself: the model is trained in train mode for ``steps``
AdamW updates at ``lr`` (defaults: 2 updates at 1e-4, on the CPU), one batch per update, and the
result names the device and the steps.  The reference is the same model, from the same initial
weights, trained here by hand on the same batches: AdamW of torch's other defaults, backward,
step, and the gradients zeroed in place, as the docstring and the footprint it measures say.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from engine.config import preset
from engine.memory import measure_training
from engine.model import build_model
from pv.checkers import checker

BATCH, SEQ = 2, 8
# (steps, lr) of each run and the arguments it is called with: the defaults, then neither default
RUNS: list[tuple[int, float, dict[str, Any]]] = [(2, 1e-4, {}), (3, 1e-3, {"steps": 3, "lr": 1e-3})]


def _batches(vocab: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(11)
    out = []
    for _ in range(count):
        ids = torch.randint(0, vocab, (BATCH, SEQ), generator=gen)
        out.append((ids, ids.clone()))
    return out


def _by_hand(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], lr: float) -> nn.Module:
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    for ids, labels in batches:
        model(ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    return model


@checker(observes=["runs", "results", "batches_drawn", "weights_differing", "left_training"], ids=["FALSIFY-QMEM-011"])
def measured_model_is_trained() -> dict[str, Any]:
    """measure_training with its defaults, and with 3 steps at lr 1e-3, on a tiny model built in
    eval mode that the falsifier keeps; each against the same model trained here by hand."""

    config = preset("tiny")
    torch.manual_seed(0)
    initial = build_model(config, device="cpu", dtype=torch.float32).eval()
    out: dict[str, Any] = {"runs": 0, "results": [], "batches_drawn": [], "weights_differing": [], "left_training": []}
    for steps, lr, kwargs in RUNS:
        kept: list[nn.Module] = []
        queue = _batches(config.vocab_size, steps + 2)  # more than the run needs: it must take `steps`
        drawn = [0]

        def build(kept: list[nn.Module] = kept) -> nn.Module:
            kept.append(copy.deepcopy(initial))
            return kept[-1]

        def batch(queue: list[tuple[torch.Tensor, torch.Tensor]] = queue, drawn: list[int] = drawn) -> Any:
            drawn[0] += 1
            return queue[drawn[0] - 1]

        result = measure_training(build, batch, **kwargs)
        out["runs"] += 1
        out["results"].append([result.device, result.steps])
        out["batches_drawn"].append(drawn[0])
        reference = _by_hand(copy.deepcopy(initial), _batches(config.vocab_size, steps), lr).state_dict()
        got = kept[0].state_dict() if len(kept) == 1 else {}
        # bitwise: the same operations on the same numbers in the same order
        out["weights_differing"].append(sum(k not in got or not torch.equal(got[k], v) for k, v in reference.items()))
        out["left_training"].append(bool(kept) and kept[0].training)
    return out
