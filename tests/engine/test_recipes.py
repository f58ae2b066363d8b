"""Recipes: YAML files holding a training command's arguments; flags override; the manifest names them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import engine.cli_train  # noqa: F401  (registers the commands)
from engine.app import app
from engine.checkpoint import load_checkpoint
from engine.faults import FAULTS
from engine.recipes import RecipeError, defaults_for, load_recipe

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", sorted((ROOT / "recipes").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_committed_recipe_fits_its_command(path: Path) -> None:
    recipe = load_recipe(path)
    defaults = defaults_for(recipe, COMMANDS[recipe.command])
    assert defaults and "out" in defaults  # every example names its run folder


def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "recipe: pretrain\nbatch_sise: 4\n",
            "`batch_sise` is not a parameter of pretrain; did you mean `batch_size`?",
        ),
        ("recipe: finetune\nout: x\n", "is for `finetune`, not `pretrain`"),
        ("- a\n- b\n", "expected a mapping of parameters, got list"),
        ("steps: 3\n", "`recipe:` must name its command"),
        ("recipe: [pretrain\n", "not valid YAML"),
    ],
)
def test_a_bad_recipe_is_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = _recipe(tmp_path, text)
    with pytest.raises(RecipeError, match=re.escape(message)):
        defaults_for(load_recipe(path), COMMANDS["pretrain"])
    result = runner.invoke(app, ["pretrain", "--config", str(path)])
    assert result.exit_code == 2 and "--config" in result.output


def test_flags_override_the_recipe_and_the_manifest_names_it(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        f"recipe: pretrain\nout: {tmp_path / 'run'}\nsteps: 3\nsave-every: 2\neval_every: 0\n"
        "batch_size: 2\nseq_len: 32\n",
    )
    result = runner.invoke(app, ["pretrain", "--config", str(path), "--steps", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert summary["steps_run"] == 2  # the flag, not the recipe's 3
    assert summary["recipe"] == {"path": str(path), "sha256": digest}
    manifest = load_checkpoint(tmp_path / "run" / "step-000002" / "model.safetensors").manifest
    assert manifest["recipe"]["sha256"] == digest and manifest["kind"] == "pretrain"

    with FAULTS.enabled("recipe_digest_not_recorded"):
        faulty = runner.invoke(app, ["pretrain", "--config", str(path), "--steps", "2", str(tmp_path / "other")])
    assert faulty.exit_code == 0 and "recipe" not in json.loads(faulty.stdout)


def test_a_finetune_recipe_records_itself_beside_the_adapter(tmp_path: Path) -> None:
    pre = runner.invoke(
        app,
        [
            "pretrain",
            str(tmp_path / "pre"),
            "--steps",
            "1",
            "--save-every",
            "1",
            "--eval-every",
            "0",
            "--seq-len",
            "32",
        ],
    )
    assert pre.exit_code == 0, pre.output
    base = tmp_path / "pre" / "step-000001" / "model.safetensors"
    path = _recipe(
        tmp_path,
        f"recipe: finetune\nbase: {base}\nout: {tmp_path / 'lora'}\nmethod: lora\nrank: 2\nsteps: 1\n"
        "batch_size: 2\nseq_len: 32\neval_every: 0\nsave_every: 1\n",
    )
    result = runner.invoke(app, ["finetune", "--config", str(path)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "lora" / "step-000001" / "manifest.json").read_text())
    assert manifest["recipe"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert manifest["method"] == "lora"


def test_the_shipped_chat_set_finetunes_a_chat_checkpoint(tmp_path: Path) -> None:
    from engine.checkpoint import save_checkpoint
    from tests.engine.chat_helpers import chat_tokenizer
    from tests.engine.core_helpers import tiny_config, tiny_model, tiny_tokenizer

    tok = chat_tokenizer()
    base = save_checkpoint(tmp_path / "chat.safetensors", tiny_model(tiny_config(vocab_size=tok.vocab_size)), tok)
    data = ROOT / "recipes" / "data" / "pv-mascot-chat.jsonl"
    args = ["finetune", str(base), str(tmp_path / "run"), "--data", str(data), "--steps", "2", "--batch-size", "2"]
    args += ["--seq-len", "96", "--eval-every", "0", "--save-every", "2", "--rank", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "step-000002" / "manifest.json").read_text())
    assert manifest["template"] == "chat"  # auto: the checkpoint has a chat template
    plain = save_checkpoint(tmp_path / "plain.safetensors", tiny_model(), tiny_tokenizer())
    refused = runner.invoke(app, ["finetune", str(plain), str(tmp_path / "r2"), "--data", str(data), "--steps", "1"])
    assert refused.exit_code == 2 and "needs the chat template" in refused.output
    refused = runner.invoke(
        app, ["finetune", str(plain), str(tmp_path / "r3"), "--data", str(data), "--template", "chat"]
    )
    assert refused.exit_code == 2 and "no chat template" in refused.output
