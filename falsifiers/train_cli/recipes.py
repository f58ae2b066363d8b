"""How a training recipe (``--config FILE``) is read: as the same flags on the command line.

The reference is click's own parse of the flags: each training command is parsed once from a
recipe that sets every one of its parameters and once from the equivalent flags, and the two sets
of parameter values must be equal.  Flags given beside the recipe must win, every one of them.  A
recipe the command cannot honour is refused before anything runs, with an error naming what is
wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
import yaml

import engine.cli_train  # noqa: F401  (registers the training commands)
from engine.app import app
from falsifiers.shared.cli import EXIT_BAD_INPUT, cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# A value other than the default for every parameter of the three training commands.  A parameter
# missing here (one added to a command later) is counted as unset, so the claim stays "every one".
RECIPE_VALUES: dict[str, dict[str, Any]] = {
    "pretrain": {
        "out": "runs/from-recipe", "preset_name": "small", "init": "runs/init.safetensors", "steps": 203,
        "batch_size": 5, "seq_len": 48, "lr": 0.0015, "warmup": 7, "eval_every": 9, "save_every": 11, "seed": 4,
        "grad_clip": 0.5, "resume": True, "device": "cpu",
    },
    "finetune": {
        "base": "runs/base.safetensors", "out": "runs/ft", "method": "qlora", "adapters": ["a.jsonl:a", "b.jsonl:b"],
        "schedule": "sequential", "rank": 4, "alpha": 8.0, "dropout": 0.1, "targets": "q_proj,k_proj,v_proj",
        "double_quant": False, "data": "chat.jsonl", "template": "chatml", "steps": 33, "batch_size": 3,
        "seq_len": 96, "lr": 0.0003, "warmup": 2, "eval_every": 5, "save_every": 6, "seed": 9, "grad_clip": 2.0,
        "resume": True, "device": "cpu",
    },
    "distill": {
        "teacher": "runs/teacher.safetensors", "out": "runs/student", "student_preset": "tiny",
        "student_init": "runs/init.safetensors", "temperature": 3.0, "alpha": 0.25, "nf4_teacher": True,
        "allow_same": True, "steps": 12, "batch_size": 2, "seq_len": 32, "lr": 0.002, "warmup": 1, "eval_every": 3,
        "save_every": 4, "seed": 5, "grad_clip": 0.25, "resume": True, "device": "cpu",
    },
}  # fmt: skip
# Values the command line sets beside the recipe: each must win over the recipe's.
FLAG_VALUES: dict[str, Any] = {
    "out": "runs/from-flags", "base": "runs/other-base.safetensors", "teacher": "runs/other-teacher.safetensors",
    "preset_name": "tiny", "student_preset": "small", "init": "runs/other-init.safetensors", "method": "full",
    "student_init": "runs/other-init.safetensors", "adapters": ["c.jsonl:c"], "schedule": "round_robin",
    "rank": 16, "alpha": 0.75, "dropout": 0.0, "targets": "q_proj", "double_quant": True, "data": "other.jsonl",
    "template": "auto", "temperature": 1.5, "nf4_teacher": False, "allow_same": False, "steps": 2, "batch_size": 1,
    "seq_len": 16, "lr": 0.01, "warmup": 0, "eval_every": 0, "save_every": 1, "seed": 1, "grad_clip": 0.1,
    "resume": False, "device": "auto",
}  # fmt: skip


def _command(name: str) -> Any:

    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def _params(command: Any) -> list[Any]:
    return [p for p in command.params if "--config" not in p.opts]


def _argv(command: Any, values: Mapping[str, Any]) -> list[str]:
    """``values`` as the command line a user types: arguments in order, then each option's flag."""
    args = [str(values[p.name]) for p in _params(command) if p.param_type_name == "argument" and p.name in values]
    for p in _params(command):
        if p.param_type_name == "argument" or p.name not in values:
            continue
        value = values[p.name]
        if p.is_flag:
            args.append(p.opts[0] if value else p.secondary_opts[0])
        elif p.multiple:
            args += [a for v in value for a in (p.opts[0], str(v))]
        else:
            args += [p.opts[0], str(value)]
    return args


def _recipe(command: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as recipe keys, spelled every way the recipe format allows, in turn: the option's
    name with dashes, with underscores, and the parameter's own name (``preset`` / ``preset_name``)."""
    doc: dict[str, Any] = {"recipe": command.name}
    for n, p in enumerate(p for p in _params(command) if p.name in values):
        option = next((o for o in p.opts if o.startswith("--")), p.name)
        spellings = (option.lstrip("-"), option.lstrip("-").replace("-", "_"), p.name)
        doc[spellings[n % 3]] = values[p.name]
    return doc


def _parsed(command: Any, argv: list[str]) -> dict[str, Any]:
    """The parameter values ``argv`` gives the command (enums as their values); {} when it is refused."""
    try:
        ctx = command.make_context(command.name, list(argv))
    except Exception:  # a refused parse sets nothing: every parameter then counts as differing
        return {}
    return {k: (v.value if hasattr(v, "value") else v) for k, v in ctx.params.items() if k != "config_file"}


def _write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _refusals(work: Path) -> list[tuple[str, str, Any, list[str]]]:
    """(what is wrong, the command, the recipe, what the error must name)."""
    base = {"recipe": "pretrain", "out": str(work / "refused-run"), "steps": 3}
    return [
        ("a misspelt key", "pretrain", {**base, "batch_sise": 4}, ["batch_sise", "did you mean `batch_size`"]),
        ("a key no option resembles", "pretrain", {**base, "colour": "red"}, ["colour", "batch_size", "warmup"]),
        ("the secondary flag's name", "finetune", {"recipe": "finetune", "no_double_quant": True}, ["no_double_quant"]),
        ("the --config option itself", "pretrain", {**base, "config": "other.yaml"}, ["config"]),
        ("a recipe for another command", "distill", base, ["pretrain", "distill"]),
        ("no recipe: key", "pretrain", {"out": "x", "steps": 3}, ["recipe:"]),
        ("a recipe: that is not a name", "pretrain", {"recipe": 3, "steps": 3}, ["recipe:"]),
        ("a list, not a mapping", "pretrain", "- recipe: pretrain\n- steps: 3\n", ["mapping", "list"]),
        ("invalid YAML", "pretrain", "recipe: pretrain\nsteps: [3\n", ["not valid YAML"]),
        ("a recipe file that is not there", "pretrain", None, ["missing.yaml"]),
    ]  # fmt: skip


def _error_of(command: Any, argv: list[str]) -> str | None:
    """The usage error ``argv`` raises while the command line is parsed (None: it parses)."""
    try:
        command.make_context(command.name, list(argv))
    except Exception as exc:  # Typer's own copy of click's UsageError; its message, not the box around it
        return str(getattr(exc, "format_message", exc.__str__)())
    return None


@checker(
    observes=[
        "commands", "parameters", "parameters_unset", "recipe_mismatches", "override_mismatches", "requests",
        "refused_cleanly", "not_refused", "unnamed",
    ],
    ids=["FALSIFY-TCLI-004"],
)  # fmt: skip
def recipes_parse_as_flags(tmp_path: Path) -> dict[str, Any]:
    """pretrain, finetune and distill parsed from a recipe that sets every parameter, from the same
    flags, and from the recipe with every flag set otherwise beside it; then ten recipes the
    command cannot honour, run through ``python -m engine``."""
    work = fresh_dir(tmp_path, "recipes-")
    out = dict.fromkeys(("commands", "parameters", "parameters_unset", "recipe_mismatches", "override_mismatches"), 0)
    for name, values in RECIPE_VALUES.items():
        command = _command(name)
        out["commands"] += 1
        names = [p.name for p in _params(command)]
        out["parameters"] += len(names)
        out["parameters_unset"] += sum(n not in values for n in names)
        recipe = _write(work / f"{name}.yaml", _recipe(command, values))
        from_flags = _parsed(command, _argv(command, values))
        from_recipe = _parsed(command, ["--config", str(recipe)])
        out["recipe_mismatches"] += sum(n not in from_recipe or from_recipe[n] != from_flags.get(n) for n in names)
        flags = {n: FLAG_VALUES[n] for n in names}
        overridden = _parsed(command, ["--config", str(recipe), *_argv(command, flags)])
        reference = _parsed(command, _argv(command, flags))
        out["override_mismatches"] += sum(n not in overridden or overridden[n] != reference.get(n) for n in names)
    cli = cli_runner()
    out.update(requests=0, refused_cleanly=0, not_refused=0, unnamed=0)
    log = []
    for n, (what, name, doc, named) in enumerate(_refusals(work)):
        path = work / (f"bad-{n}.yaml" if doc is not None else "missing.yaml")
        if doc is not None:
            _write(path, doc)
        argv = ["--config", str(path)]
        if name != "finetune":
            argv = [str(work / "refused-run"), *argv] if name == "pretrain" else ["t.safetensors", "s", *argv]
        result = cli(name, *argv)
        message = _error_of(_command(name), argv) or ""
        log.append(f"--- {what}: exit {result.exit_code}\n{message}")
        out["requests"] += 1
        if result.exit_code != EXIT_BAD_INPUT or not isinstance(result.exception, SystemExit):
            out["not_refused"] += 1
            continue
        named_ok = all(s.lower() in message.lower() for s in named)
        out["unnamed"] += not named_ok
        written = (work / "refused-run").exists() or (work / "s").exists()
        out["refused_cleanly"] += named_ok and "Traceback" not in result.output and not written
    (work / "refusals.log").write_text("\n".join(log), encoding="utf-8")
    return out
