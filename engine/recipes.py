"""Training recipes: a YAML file that holds a training command's arguments (``--config FILE``).

A recipe names the command it is for and sets any of that command's parameters by their option
names (``batch_size`` or ``batch-size`` for ``--batch-size``; ``out``, ``base``, ``teacher`` for the
positional arguments)::

    recipe: pretrain
    out: runs/pretrain-tiny
    preset: tiny
    steps: 2000

The recipe fills in defaults through click's ``default_map``, so any flag given on the command line
overrides it.  Paths are relative to the working directory, as on the command line.  The recipe's
path and sha256 go into every checkpoint's manifest, so a run can always name the exact recipe.
Unknown keys are errors (with the closest parameter suggested): a misspelled key must never be
silently ignored.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
import yaml

from engine.errors import EngineError
from engine.faults import FAULTS

RECIPE_KEY = "recipe"
_META = "engine_recipe"
# libyaml's loader where PyYAML was built with it, else the pure-Python one: same values, faster
_SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RecipeError(EngineError, ValueError):
    """A recipe file that cannot be read or does not fit its command."""


@dataclass(frozen=True)
class Recipe:
    path: Path
    command: str
    values: dict[str, Any]  # by recipe key, as written
    sha256: str

    def manifest(self) -> dict[str, Any]:
        return {"recipe": {"path": str(self.path), "sha256": self.sha256}}


def load_recipe(path: str | Path) -> Recipe:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise RecipeError(f"recipe {p}: {exc.strerror or exc}") from None
    try:
        doc = yaml.load(data, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise RecipeError(f"recipe {p}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise RecipeError(f"recipe {p}: expected a mapping of parameters, got {type(doc).__name__}")
    command = doc.get(RECIPE_KEY)
    if not isinstance(command, str):
        raise RecipeError(f"recipe {p}: `{RECIPE_KEY}:` must name its command (pretrain, finetune or distill)")
    values = {str(k): v for k, v in doc.items() if k != RECIPE_KEY}
    return Recipe(p, command, values, hashlib.sha256(data).hexdigest())


def _key(text: str) -> str:
    return text.lstrip("-").replace("-", "_")


def parameter_names(command: Any) -> dict[str, str]:
    """Recipe key -> click parameter name, for every option and argument but ``--config`` itself."""
    out: dict[str, str] = {}
    for param in command.params:
        if param.name is None or "--config" in param.opts:
            continue
        out[_key(param.name)] = param.name
        for opt in param.opts:
            if opt.startswith("--"):
                out[_key(opt.split("/")[0])] = param.name
    return out


def defaults_for(recipe: Recipe, command: Any) -> dict[str, Any]:
    """The recipe as a click ``default_map`` for ``command``; refuses keys the command lacks."""
    if recipe.command != command.name:
        raise RecipeError(f"recipe {recipe.path} is for `{recipe.command}`, not `{command.name}`")
    names = parameter_names(command)
    out: dict[str, Any] = {}
    for key, value in recipe.values.items():
        name = names.get(_key(key))
        if FAULTS.active("recipe_dashed_keys_unknown"):  # the defect: the key looked up as written
            name = names.get(key)  # pragma: no mutate
        if name is None:
            close = difflib.get_close_matches(_key(key), list(names), n=1, cutoff=0.75)
            takes = sorted(names)
            if FAULTS.active("recipe_listing_params_only"):  # the defect: the flags' own spellings left out
                takes = sorted(set(names.values()))  # pragma: no mutate
            hint = f"; did you mean `{close[0]}`?" if close else f"; {command.name} takes {', '.join(takes)}"
            raise RecipeError(f"recipe {recipe.path}: `{key}` is not a parameter of {command.name}{hint}")
        out[name] = [str(v) for v in value] if isinstance(value, list) else value
    return out


def apply_recipe(ctx: typer.Context, _param: typer.CallbackParam, value: Path | None) -> Path | None:
    """The ``--config`` option's eager callback: the recipe becomes the command's defaults."""
    if value is None:
        return None
    try:
        recipe = load_recipe(value)
        assert ctx.command is not None
        defaults = defaults_for(recipe, ctx.command)
    except RecipeError as exc:
        # the defect: the refusal escapes as a traceback, not as a usage error of --config
        if FAULTS.active("recipe_refusal_unattributed"):  # pragma: no mutate
            raise  # pragma: no mutate
        # click attaches the option and the command's context, and prints both with the message
        raise typer.BadParameter(str(exc)) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[_META] = recipe
    return value


def recipe_manifest(ctx: typer.Context) -> dict[str, Any]:
    """What the run's manifest records of its recipe: path and sha256 (empty without one)."""
    recipe = ctx.meta.get(_META)
    if recipe is None or FAULTS.active("recipe_digest_not_recorded"):
        return {}
    result: dict[str, Any] = recipe.manifest()
    return result
