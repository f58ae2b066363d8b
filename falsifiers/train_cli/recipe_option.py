"""A refused recipe as the command line raises it: the option it came from and the command's context.

FALSIFY-TCLI-008 reads the messages ``defaults_for`` and ``load_recipe`` write.  A user meets them
through ``--config``, whose callback turns each into click's ``BadParameter``: what click prints
from it (the option named in the error line, the command's usage and help hint above it, exit
status 2) comes from the exception's ``param`` and ``ctx``.  The checker runs each training command
as the ``pv-engine`` entry point does, without click's own error printing, and reads the exception.  It
also holds the hint's threshold on both sides: a key exactly as close to a parameter as the cutoff
(3/4 of difflib's ratio) is offered that parameter, one just below it the command's whole listing.
"""

from __future__ import annotations

import difflib
import errno
import os
from pathlib import Path
from typing import Any

import typer
import yaml

import engine.cli_train  # noqa: F401  (registers the training commands)
from engine.app import app
from falsifiers.shared.workdir import fresh_dir
from falsifiers.train_cli.recipe_messages import _keys
from pv.checkers import checker


@checker(
    observes=["refusals", "refusals_differing", "differing", "ratio_at_cutoff", "ratio_below_cutoff"],
    ids=["FALSIFY-TCLI-009"],
)
def recipe_refusal_names_option(tmp_path: Path) -> dict[str, Any]:
    """``pretrain``, ``finetune`` and ``distill`` with ``--config`` naming a recipe with the key `stp`
    (difflib ratio 0.75 to `steps`), one with `seeds_x` (0.727 to `seed`), and a missing file."""

    work = fresh_dir(tmp_path, "recipe-option-")
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]

    def recipe(name: str, doc: dict[str, Any]) -> Path:
        path = work / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    differing: list[str] = []
    refusals = 0
    for command in ("pretrain", "finetune", "distill"):
        takes = ", ".join(_keys(commands[command]))
        at_cutoff = recipe(f"{command}-stp.yaml", {"recipe": command, "stp": 3})
        below = recipe(f"{command}-seeds.yaml", {"recipe": command, "seeds_x": 3})
        missing = work / f"{command}-missing.yaml"
        cases = [
            (at_cutoff, f"recipe {at_cutoff}: `stp` is not a parameter of {command}; did you mean `steps`?"),
            (below, f"recipe {below}: `seeds_x` is not a parameter of {command}; {command} takes {takes}"),
            (missing, f"recipe {missing}: {os.strerror(errno.ENOENT)}"),
        ]
        for path, message in cases:
            refusals += 1
            try:
                group.main([command, "--config", str(path)], prog_name="pv-engine", standalone_mode=False)
            except typer.BadParameter as exc:
                option = list(exc.param.opts) if exc.param is not None else None
                ctx_command = exc.ctx.command.name if exc.ctx is not None else None
                seen = (exc.message, option, ctx_command)
                if seen != (message, ["--config"], command):
                    differing.append(f"{command} {path.name}: {seen!r} != {(message, ['--config'], command)!r}")
                continue
            except Exception as exc:  # anything else reaches the user as a traceback
                differing.append(f"{command} {path.name}: {type(exc).__name__}: {exc}")
                continue
            differing.append(f"{command} {path.name}: not refused")
    return {
        "refusals": refusals,
        "refusals_differing": len(differing),
        "differing": differing,
        "ratio_at_cutoff": difflib.SequenceMatcher(None, "stp", "steps").ratio(),
        "ratio_below_cutoff": difflib.SequenceMatcher(None, "seeds_x", "seed").ratio(),
    }
