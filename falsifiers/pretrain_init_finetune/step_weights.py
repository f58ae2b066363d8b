"""``engine.checkpoint.load_step_weights``: a run's step file into a model, the tied head included.

A checkpoint holds a tied head once, as the embedding; a resumed run reads it back into a model
built afresh.  Here a tied qwen2 tiny model and an untied llama one, their weights drawn from one
seed and saved with ``save_checkpoint``, are loaded into models drawn from another seed: every
parameter must then equal the saved model's (read back with safetensors, the head from the
embedding where tied), and the tied model's head must still be its embedding (one storage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from engine.checkpoint import load_step_weights, save_checkpoint
from engine.config import preset
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


@checker(observes=["models", "values_differing", "heads_untied"], ids=["FALSIFY-PINIT-015"])
def step_weights_load_whole(engine_tokenizer: Any, tiny_model_factory: Any, tmp_path: Path) -> dict[str, Any]:
    """A tied and an untied model saved, then loaded into fresh models of another seed."""

    work = fresh_dir(tmp_path, "step-weights-")
    configs = {
        "tied": preset("tiny", architecture="qwen2", attention_bias=True, tie_word_embeddings=True),
        "untied": preset("tiny"),
    }
    out: dict[str, Any] = {"models": 0, "values_differing": 0, "heads_untied": 0}
    for name, config in configs.items():
        saved = tiny_model_factory(1, std=0.1, config=config)
        path = save_checkpoint(work / f"{name}.safetensors", saved, engine_tokenizer, {})
        stored = load_file(str(path))
        if config.tie_word_embeddings:
            stored["lm_head.weight"] = stored["model.embed_tokens.weight"]
        fresh = tiny_model_factory(2, std=0.1, config=config)
        load_step_weights(fresh, path)
        out["models"] += 1
        params = dict(fresh.named_parameters(remove_duplicate=False))
        out["values_differing"] += sum(not torch.equal(p.detach(), stored[n]) for n, p in params.items())
        out["values_differing"] += len(set(stored) - set(params))
        if config.tie_word_embeddings:
            out["heads_untied"] += fresh.lm_head.weight is not fresh.model.embed_tokens.weight
    return out
