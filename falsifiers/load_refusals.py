"""What ``load_checkpoint`` says of a checkpoint whose tokenizer or manifest it cannot use.

A checkpoint carries its tokenizer as the JSON text under its header's ``tokenizer`` key.  A file
without that key is refused with a ``CheckpointError`` that names the key and says that the
checkpoint embeds no tokenizer; one whose text the tokenizer cannot be rebuilt from is refused
naming the key as unusable, followed by the tokenizer's own refusal of that text (read here from
``EngineTokenizer.from_json``, the reader the message quotes); one whose tokenizer has more tokens
than the header's ``vocab_size`` names both numbers; one whose ``manifest`` is JSON but not an
object names the key; one missing tensors names the first of them in the model's own order and how
many more are missing.  The files are written with safetensors' own ``save_file``: a checkpoint of
the tiny preset with its header edited.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import CheckpointError, TokenizerError
from engine.tokenizer import EngineTokenizer
from falsifiers._workdir import fresh_dir
from falsifiers.refusals import refusals_differing
from pv.checkers import checker

UNUSABLE = ["{not json", '{"format": "something else"}']


def _tokenizer_refusal(text: str) -> str:
    try:
        EngineTokenizer.from_json(text)
    except TokenizerError as exc:
        return str(exc)
    return "(accepted)"


@checker(observes=["refusals", "refusals_differing"], ids=["FALSIFY-CKPT-011"])
def tokenizer_refusals_named(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """load_checkpoint of the tiny preset's checkpoint with its header's tokenizer removed, with it
    replaced by each text of ``UNUSABLE``, with a vocab_size one below the tokenizer's, with a
    manifest that is a JSON list, without its final norm and without every tensor of layer 1."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from engine.checkpoint import load_checkpoint, save_checkpoint

    work = fresh_dir(tmp_path, "load-refusals-")
    model = tiny_model_factory(0)
    good = save_checkpoint(work / "good.safetensors", model, engine_tokenizer)
    tensors = load_file(str(good))
    with safe_open(str(good), framework="pt") as f:
        meta = dict(f.metadata() or {})
    cases: list[tuple[Path, str]] = []
    without = {k: v for k, v in meta.items() if k != "tokenizer"}
    save_file(tensors, str(work / "no-tokenizer.safetensors"), metadata=without)
    cases.append(
        (
            work / "no-tokenizer.safetensors",
            "missing metadata key `tokenizer`: the checkpoint has no embedded tokenizer",
        )
    )
    for i, text in enumerate(UNUSABLE):
        path = work / f"unusable-{i}.safetensors"
        save_file(tensors, str(path), metadata={**meta, "tokenizer": text})
        cases.append((path, f"metadata key `tokenizer` is unusable: {_tokenizer_refusal(text)}"))
    vocab = engine_tokenizer.vocab_size
    save_file(tensors, str(work / "small-vocab.safetensors"), metadata={**meta, "vocab_size": json.dumps(vocab - 1)})
    cases.append((work / "small-vocab.safetensors", f"tokenizer has {vocab} tokens but vocab_size is {vocab - 1}"))
    save_file(tensors, str(work / "list-manifest.safetensors"), metadata={**meta, "manifest": "[1, 2]"})
    cases.append((work / "list-manifest.safetensors", "metadata key `manifest` is not a JSON object"))
    order = list(model.state_dict())  # the model's own order of its tensors
    for label, gone in (("no-norm", {"model.norm.weight"}), ("no-layer-1", {n for n in tensors if ".layers.1." in n})):
        path = work / f"{label}.safetensors"
        save_file({n: t for n, t in tensors.items() if n not in gone}, str(path), metadata=meta)
        first = next(n for n in order if n in gone)
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        cases.append((path, f"missing tensor `{first}`{more}"))
    differing = refusals_differing(
        (functools.partial(load_checkpoint, path), CheckpointError, message) for path, message in cases
    )
    return {"refusals": len(cases), "refusals_differing": differing}
