"""The special token ids of a checkpoint's header, read as they are written or refused naming why.

A header holds each special id as JSON: an id below ``vocab_size``, or for ``eos_token_id`` alone
also a list of them (an instruct model ends a turn on any of a few tokens).  ``load_checkpoint``
must give an id back as the int, a list as the tuple of its ids (one id included: a list of one is
still a list), and a ``null`` as the embedded tokenizer's id; an empty eos list, a ``true`` where
an id is due (JSON's true is no token id, though Python counts it as 1) and a list for any other
special id are refused with a ``CheckpointError`` naming the key and what it holds.  The files are
a checkpoint of the tiny preset rewritten with safetensors' own ``save_file``, its header edited.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safetensors.torch import save_file

from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.errors import CheckpointError
from engine.tokenizer import EngineTokenizer
from falsifiers.checkpoint_self_contained.load_refusals import _saved
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BELOW = "must be a token id below vocab_size"
# header edits and the refusal each must get, word for word
REFUSED: list[tuple[dict[str, str], str]] = [
    ({"eos_token_id": "[]"}, f"metadata key `eos_token_id` {BELOW} or a list of them, got []"),
    ({"eos_token_id": "[5, true]"}, f"metadata key `eos_token_id` {BELOW} or a list of them, got [5, true]"),
    ({"bos_token_id": "true"}, f"metadata key `bos_token_id` {BELOW}, got true"),
    ({"bos_token_id": "[5]"}, f"metadata key `bos_token_id` {BELOW}, got [5]"),
]
# header text of eos_token_id and the value the loaded config must hold (None: the tokenizer's own)
ACCEPTED: list[tuple[str, int | tuple[int, ...] | None]] = [
    ("5", 5),
    ("[5]", (5,)),
    ("[5, 7]", (5, 7)),
    ("null", None),
]


@checker(observes=["refusals", "refusals_differing", "loads", "loads_differing"], ids=["FALSIFY-CKPT-012"])
def header_token_ids_read_as_written(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """load_checkpoint of the tiny preset's checkpoint with each header edit of ``REFUSED`` (the
    refusals that differ from the text written there) and with each eos text of ``ACCEPTED``: the
    loaded config's and model's ``eos_token_id`` must be the value listed, of its very type (an int
    is not a tuple of one), and ``eos_ids`` the tuple of them (the tokenizer's id for null)."""

    work = fresh_dir(tmp_path, "header-ids-")
    good = save_checkpoint(work / "good.safetensors", tiny_model_factory(0), engine_tokenizer)
    tensors, meta = _saved(good)
    cases = []
    for i, (edit, message) in enumerate(REFUSED):
        path = work / f"refused-{i}.safetensors"
        save_file(tensors, str(path), metadata={**meta, **edit})
        cases.append((functools.partial(load_checkpoint, path), CheckpointError, message))
    differing: list[str] = []
    for i, (text, value) in enumerate(ACCEPTED):
        path = work / f"eos-{i}.safetensors"
        save_file(tensors, str(path), metadata={**meta, "eos_token_id": text})
        want = engine_tokenizer.eos_id if value is None else value
        ids = (want,) if isinstance(want, int) else want
        try:
            loaded = load_checkpoint(path)
        except CheckpointError as exc:
            differing.append(f"eos_token_id {text}: refused: {exc}")
            continue
        for owner, config in (("config", loaded.config), ("model", loaded.model.config)):
            got = config.eos_token_id
            if type(got) is not type(want) or got != want or config.eos_ids != ids:
                differing.append(f"eos_token_id {text}: {owner} holds {got!r} (ids {config.eos_ids}), not {want!r}")
    return {
        "refusals": len(cases),
        "refusals_differing": refusals_differing(cases),
        "loads": len(ACCEPTED),
        "loads_differing": differing,
    }
