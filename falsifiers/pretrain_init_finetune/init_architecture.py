"""``pretrain --init`` with ``--preset`` checks that the two describe one architecture.

The init checkpoint's architecture is read here from its safetensors header (one metadata key per
config field) and the preset's from ``engine.config.preset``; every key on which they differ must
be named in the refusal with both values (``key: init's != preset's``), before anything is
written.  The init's own preset is accepted and trains, and its checkpoint's manifest names the
run a pretraining from that init (``kind`` pretrain, ``init`` the path given); a run from scratch
names no init.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safetensors import safe_open

from engine.config import preset
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def header_config(path: Path) -> dict[str, Any]:
    """The architecture a checkpoint's header records, each value as JSON reads it."""

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
    out: dict[str, Any] = {}
    for key, text in meta.items():
        if key in ("format", "format_version", "manifest", "tokenizer"):
            continue
        try:
            out[key] = json.loads(text)
        except ValueError:
            out[key] = text  # a bare string: the architecture's name
    return out


def _manifest(run: Path) -> dict[str, Any]:
    """The manifest in the header of the checkpoint latest.json names."""

    folder = json.loads((run / "latest.json").read_text(encoding="utf-8"))["folder"]
    with safe_open(str(run / folder / "model.safetensors"), framework="pt") as fh:
        manifest: dict[str, Any] = json.loads(fh.metadata()["manifest"])
    return manifest


@checker(
    observes=[
        "differences",
        "refused_cleanly",
        "differences_named",
        "differences_printed",
        "own_preset_trained",
        "manifests_differing",
    ],
    ids=["FALSIFY-PINIT-014"],
)
def init_architecture_checked(pretrained_init: Path, tmp_path: Path, other_preset: str = "small") -> dict[str, Any]:
    """--init on the tiny init with --preset other_preset (refused) and with --preset tiny (trains)."""

    cli = cli_runner()
    init = header_config(Path(pretrained_init))
    other = preset(other_preset).to_dict()
    expected = [f"{k}: {init[k]!r} != {other[k]!r}" for k in init if k in other and init[k] != other[k]]
    work = fresh_dir(tmp_path, "init-arch-")
    refused = work / "refused"
    result = cli("pretrain", refused, "--init", pretrained_init, "--preset", other_preset, "--steps", 1)
    text = " ".join(str(result.output).split())
    short = ("--steps", 1, "--batch-size", 2, "--seq-len", 16, "--eval-every", 0, "--save-every", 1)
    trained = cli("pretrain", work / "same", "--init", pretrained_init, "--preset", "tiny", *short)
    scratch = cli("pretrain", work / "scratch", "--preset", "tiny", *short)
    manifests = {
        name: _manifest(work / name) if r.exit_code == 0 else {}
        for name, r in (("same", trained), ("scratch", scratch))
    }
    return {
        "differences": len(expected),
        "refused_cleanly": refused_cleanly(result, [str(pretrained_init)], [refused]),
        "differences_named": sum(e in text for e in expected),
        "differences_printed": text.count(" != "),
        "own_preset_trained": trained.exit_code == 0 and (work / "same" / "latest.json").is_file(),
        "manifests_differing": (manifests["same"].get("kind"), manifests["same"].get("init"))
        != ("pretrain", str(pretrained_init))
        or (manifests["scratch"].get("kind"), manifests["scratch"].get("init", "absent")) != ("pretrain", None),
    }
