"""The step a checkpoint's manifest records: a non-negative int, checked before anything is written.

``save_checkpoint`` takes the manifest a caller gives it and fills in what it lacks (step 0 when
none is given).  A step that is not an int — ``True`` (a bool is an int to Python), ``2.5``,
``"3"``, ``None`` — or one below 0 would make every later reader of the manifest (a resume's
position, an adapter's record of its base) misread it, so it is refused word for word and no
file is left at the path.  An accepted manifest is read back from the file's header, as
safetensors stores it, not from the engine's own loader: its step, the keys of the caller's own,
and its text, JSON with sorted keys, so that the same manifest saved twice gives the same file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from safetensors import safe_open

from engine.checkpoint import save_checkpoint
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BAD_STEPS: list[Any] = [True, -1, 2.5, "3", None]
# none given, none of its keys given, the smallest step, a step with keys of the caller's own (a
# path among them, which JSON cannot hold: it is written as its text)
OWN = {"step": 7, "note": "x", "where": PurePosixPath("runs/a")}
ACCEPTED: list[dict[str, Any] | None] = [None, {}, {"step": 0}, OWN, dict(reversed(OWN.items()))]


@checker(
    observes=[
        "refusals_differing",
        "files_left",
        "steps_read_back",
        "own_keys_kept",
        "manifest_text_sorted",
        "same_file_either_order",
    ],
    ids=["FALSIFY-CKPT-009"],
)
def manifest_step_checked(
    engine_tokenizer: EngineTokenizer, tiny_model_factory: Callable[..., Any], tmp_path: Path
) -> dict[str, Any]:
    """save_checkpoint of the tiny preset with each bad step, then with each accepted manifest."""

    work = fresh_dir(tmp_path, "manifest-step-")
    model = tiny_model_factory(0)
    paths = [work / f"bad-{i}.safetensors" for i in range(len(BAD_STEPS))]
    refused = refusals_differing(
        (
            functools.partial(save_checkpoint, path, model, engine_tokenizer, {"step": step}),
            ValueError,
            f"manifest step must be a non-negative int, got {step!r}",
        )
        for path, step in zip(paths, BAD_STEPS, strict=True)
    )
    left = sorted(p.name for p in work.iterdir())  # nothing, not even a temporary file
    steps, texts, written = [], [], []
    for i, manifest in enumerate(ACCEPTED):
        path = save_checkpoint(work / f"good-{i}.safetensors", model, engine_tokenizer, manifest)
        with safe_open(str(path), framework="pt") as fh:
            texts.append(fh.metadata()["manifest"])
        steps.append(json.loads(texts[-1]).get("step"))
        written.append(path.read_bytes())
    own = json.loads(texts[3])
    return {
        "refusals_differing": refused,
        "files_left": left,
        "steps_read_back": steps,
        "own_keys_kept": [own.get("note"), own.get("where")],
        # the manifest's text is its JSON with sorted keys, so the same manifest in another key
        # order gives the same file, byte for byte
        "manifest_text_sorted": texts[3] == json.dumps(own, sort_keys=True),
        "same_file_either_order": written[3] == written[4],
    }
