"""What a refused recipe says, word for word.

FALSIFY-TCLI-004 requires each refusal to name what is wrong.  The hint a user acts on is the rest
of the sentence: the key a misspelling most resembles, or else every key the command takes (each
option's long flag and each parameter's name, without dashes, dashes as underscores, sorted),
and for a recipe file that cannot be read, the operating system's reason.  Each is compared with
the message written out here, the key listing built from the click command itself.
"""

from __future__ import annotations

import errno
import os
from functools import partial
from pathlib import Path
from typing import Any

import typer
import yaml

import engine.cli_train  # noqa: F401  (registers the training commands)
from engine.app import app
from engine.recipes import RecipeError, defaults_for, load_recipe
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker


def _keys(command: Any) -> list[str]:
    """Every key a recipe for ``command`` may use: parameter names and long flags, as recipe keys."""
    keys = set()
    for param in command.params:
        if "--config" in param.opts:
            continue
        keys.add(param.name.replace("-", "_"))
        keys |= {o.split("/")[0].lstrip("-").replace("-", "_") for o in param.opts if o.startswith("--")}
    return sorted(keys)


@checker(observes=["messages", "messages_differing", "differing"], ids=["FALSIFY-TCLI-008"])
def recipe_refusals_word_for_word(tmp_path: Path) -> dict[str, Any]:
    """load_recipe and defaults_for on pretrain and finetune recipes: a key nothing resembles, a
    misspelt key, a file that is not there and a folder."""

    work = fresh_dir(tmp_path, "recipe-messages-")
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]

    def recipe(name: str, doc: dict[str, Any]) -> Path:
        path = work / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    requests: list[tuple[str, Path, str]] = []
    for command in ("pretrain", "finetune"):
        path = recipe(f"{command}-colour.yaml", {"recipe": command, "steps": 3, "colour": "red"})
        takes = ", ".join(_keys(commands[command]))
        requests.append(
            (command, path, f"recipe {path}: `colour` is not a parameter of {command}; {command} takes {takes}")
        )
        path = recipe(f"{command}-stepz.yaml", {"recipe": command, "stepz": 3})
        requests.append(
            (command, path, f"recipe {path}: `stepz` is not a parameter of {command}; did you mean `steps`?")
        )
    missing = work / "missing.yaml"
    requests.append(("pretrain", missing, f"recipe {missing}: {os.strerror(errno.ENOENT)}"))
    folder = fresh_dir(work, "a-folder-")
    requests.append(("pretrain", folder, f"recipe {folder}: {os.strerror(errno.EISDIR)}"))

    def parse(command: str, path: Path) -> object:
        return defaults_for(load_recipe(path), commands[command])

    differing = refusals_differing(
        (partial(parse, command, path), RecipeError, message) for command, path, message in requests
    )
    return {"messages": len(requests), "messages_differing": len(differing), "differing": differing}
