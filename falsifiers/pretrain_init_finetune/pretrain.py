"""Pretraining from an init checkpoint: a clean CLI exit, a step-0 loss that proves the init's
weights flowed through, a valid checkpoint, validation loss that beats scratch, and wall time.

The init is the session's ``pretrained_init``; each checker runs the engine's pretraining (its
CLI or ``engine.train.pretrain``) from it inside its own call.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from typer.testing import CliRunner

import engine.cli_train
from engine.app import app
from engine.checkpoint import CheckpointError, load_checkpoint, read_header
from engine.config import ARCHITECTURE_KEYS, ModelConfig, preset
from engine.data import TokenData
from engine.tokenizer import EngineTokenizer
from engine.train import (
    LATEST_NAME,
    LOG_NAME,
    NonFiniteLossError,
    ResumeError,
    TrainConfig,
    TrainResult,
    finetune,
    lr_factor,
    pretrain,
    read_log,
    state_from_files,
    state_to_files,
)
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.training import Run, plot_losses
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

BATCH, SEQ_LEN, EVAL_BATCHES = 8, 64, 4
CLI_TIMEOUT_S = 300


def _cfg(steps: int, seed: int) -> TrainConfig:
    return TrainConfig(
        steps=steps,
        batch_size=BATCH,
        seq_len=SEQ_LEN,
        lr=1e-3,
        warmup_steps=min(2, steps),
        eval_batches=EVAL_BATCHES,
        seed=seed,
    )


def _from_init(pretrained_init: Path, data: TokenData, out: Path, cfg: TrainConfig) -> tuple[TrainResult, Run]:
    records: list[dict[str, Any]] = []
    result = pretrain(out, cfg, init=pretrained_init, data=data, device="cpu", on_record=records.append)
    return result, Run(result, records)


def _from_scratch(
    config: ModelConfig, tokenizer: EngineTokenizer, data: TokenData, out: Path, cfg: TrainConfig
) -> tuple[TrainResult, Run]:
    records: list[dict[str, Any]] = []
    result = pretrain(out, cfg, config=config, tokenizer=tokenizer, data=data, device="cpu", on_record=records.append)
    return result, Run(result, records)


@checker(observes=["exit_code"], ids=["FALSIFY-PINIT-001"])
def cli_exit(pretrained_init: Path, tmp_path: Path, pv_artifacts: Path, steps: int, seed: int = 0) -> dict[str, Any]:
    """Run ``python -m engine pretrain OUT --init CKPT`` for ``steps`` steps in a child process
    (a mutant's fault reaches it through ``PV_FAULTS``); its output is kept as evidence."""
    out = fresh_dir(tmp_path, "cli-")
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "pretrain",
        str(out / "run"),
        "--init",
        str(pretrained_init),
        "--steps",
        str(steps),
        "--batch-size",
        str(BATCH),
        "--seq-len",
        str(SEQ_LEN),
        "--warmup",
        "1",
        "--eval-every",
        "0",
        "--save-every",
        "0",
        "--seed",
        str(seed),
        "--device",
        "cpu",
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False, env={**os.environ, "NO_COLOR": "1"}
    )
    (pv_artifacts / "cli.log").write_text(
        f"$ {' '.join(cmd[1:])}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}",
        encoding="utf-8",
    )
    return {"exit_code": proc.returncode}


@checker(
    observes=[
        "exit_code", "steps_run", "recipe_sha256", "manifest_recipe_sha256", "summary_recipe_sha256", "recipe_path",
        "manifest_recipe_keys", "manifest_recipe_path", "summary_recipe_same",
    ],
    ids=["FALSIFY-PINIT-012"],
)  # fmt: skip
def recipe_run(tmp_path: Path, pv_artifacts: Path, recipe: str, steps: int) -> dict[str, Any]:
    """Run ``python -m engine pretrain --config RECIPE`` in this process with the run folder and the
    step count overridden by flags, and read the recipe's path and digest back from the summary and
    the checkpoint."""

    path = Path(recipe)
    if not path.is_absolute() and not path.exists():  # a pytest started elsewhere: this repository's recipe
        path = Path(engine.__file__).resolve().parents[1] / recipe
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    out = fresh_dir(tmp_path, "recipe-") / "run"
    args = ["pretrain", "--config", str(path), str(out), "--steps", str(steps), "--save-every", str(steps)]
    args += ["--eval-every", "0", "--device", "cpu"]
    result = CliRunner().invoke(app, args)
    (pv_artifacts / "recipe-run.log").write_text(
        f"$ python -m engine {' '.join(args)}\nexit {result.exit_code}\n--- output\n{result.output}", encoding="utf-8"
    )
    obs: dict[str, Any] = {
        "exit_code": result.exit_code,
        "steps_run": 0,
        "recipe_sha256": digest,
        "manifest_recipe_sha256": "",
        "summary_recipe_sha256": "",
        "recipe_path": str(path),
        "summary_recipe_same": False,
        "manifest_recipe_keys": [],
        "manifest_recipe_path": None,
    }
    if result.exit_code != 0:
        return obs
    summary = json.loads(result.stdout)
    obs["steps_run"] = summary["steps_run"]
    obs["summary_recipe_sha256"] = (summary.get("recipe") or {}).get("sha256", "")
    manifest = load_checkpoint(Path(summary["checkpoint"]) / "model.safetensors").manifest
    obs["manifest_recipe_sha256"] = (manifest.get("recipe") or {}).get("sha256", "")
    # the whole record, as a user reads it: the recipe's path as given and its digest, nothing else
    obs["summary_recipe_same"] = summary.get("recipe") == manifest.get("recipe")
    obs["manifest_recipe_keys"] = sorted(manifest.get("recipe") or {})
    obs["manifest_recipe_path"] = (manifest.get("recipe") or {}).get("path")
    return obs


@checker(observes=["step0_loss_init", "step0_loss_scratch", "vocab_size"], ids=["FALSIFY-PINIT-002"])
def step0_losses(
    pretrained_init: Path, engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path, seed: int = 0
) -> dict[str, Any]:
    """Step-0 training loss of a one-step run from the init and of one from scratch (same batch)."""
    cfg = _cfg(1, seed)
    init_result, _ = _from_init(pretrained_init, pretrain_data, fresh_dir(tmp_path, "init-"), cfg)
    config: ModelConfig = init_result.extra["model"].config
    scratch_result, _ = _from_scratch(config, engine_tokenizer, pretrain_data, fresh_dir(tmp_path, "scratch-"), cfg)
    return {
        "step0_loss_init": init_result.step0_loss,
        "step0_loss_scratch": scratch_result.step0_loss,
        "vocab_size": config.vocab_size,
    }


@checker(observes=["checkpoint_loads", "missing_arch_keys"], ids=["FALSIFY-PINIT-003"])
def checkpoint_valid(
    pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Pretrain from the init for ``steps`` steps; read the final checkpoint's header and load it."""
    result, _ = _from_init(pretrained_init, pretrain_data, fresh_dir(tmp_path), _cfg(steps, seed))
    if result.checkpoint is None:
        return {"checkpoint_loads": 0, "missing_arch_keys": len(ARCHITECTURE_KEYS)}
    path = result.checkpoint / "model.safetensors"
    try:
        _, meta = read_header(path)
        missing = sum(1 for key in ARCHITECTURE_KEYS if key not in meta)
    except CheckpointError:
        missing = len(ARCHITECTURE_KEYS)
    try:
        load_checkpoint(path, device="cpu")
        loads = 1
    except CheckpointError:
        loads = 0
    return {"checkpoint_loads": loads, "missing_arch_keys": missing}


@checker(observes=["val_loss_init", "val_loss_scratch"], ids=["FALSIFY-PINIT-004"])
def val_vs_scratch(
    pretrained_init: Path,
    engine_tokenizer: EngineTokenizer,
    pretrain_data: TokenData,
    tmp_path: Path,
    pv_artifacts: Path,
    steps: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Validation loss (the first 4 validation batches) after ``steps`` steps from the init and
    from scratch, same data, seed and schedule."""
    cfg = _cfg(steps, seed)
    init_result, init_run = _from_init(pretrained_init, pretrain_data, fresh_dir(tmp_path, "init-"), cfg)
    config: ModelConfig = init_result.extra["model"].config
    scratch_result, scratch_run = _from_scratch(
        config, engine_tokenizer, pretrain_data, fresh_dir(tmp_path, "scratch-"), cfg
    )
    plot_losses(
        pv_artifacts / "loss.png",
        {"from init": init_run.losses, "from scratch": scratch_run.losses},
        f"pretraining, {steps} steps",
    )
    return {
        "val_loss_init": init_result.val_losses.get(steps, math.nan),
        "val_loss_scratch": scratch_result.val_losses.get(steps, math.nan),
    }


@checker(observes=["wall_s"], ids=["FALSIFY-PINIT-005"])
def wall_time(
    pretrained_init: Path, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Wall-clock seconds of ``engine.train.pretrain`` from the init, loading and saving included."""
    start = time.perf_counter()
    _from_init(pretrained_init, pretrain_data, fresh_dir(tmp_path), _cfg(steps, seed))
    return {"wall_s": time.perf_counter() - start}


@checker(
    observes=["step0_loss_diff", "tensors_differing", "tensors_compared", "seeds_differ"], ids=["FALSIFY-PINIT-006"]
)
def same_seed_same_run(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Pretrain the tiny preset from scratch twice with one seed (the global RNG moved in between,
    as any other code in the process may move it) and once with ``seed + 1``: the same seed must
    give the same step-0 loss and bit-identical weights, another seed other weights."""

    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)

    def run(run_seed: int, tag: str) -> tuple[float, dict[str, torch.Tensor]]:
        result, _ = _from_scratch(
            config, engine_tokenizer, pretrain_data, fresh_dir(tmp_path, tag), _cfg(steps, run_seed)
        )
        return result.step0_loss, {k: v.detach().clone() for k, v in result.extra["model"].state_dict().items()}

    loss_a, weights_a = run(seed, "a-")
    torch.manual_seed(seed + 999)  # someone else draws from the global generator between the runs
    torch.rand(7)
    loss_b, weights_b = run(seed, "b-")
    _, weights_c = run(seed + 1, "c-")
    differing = sum(1 for k in weights_a if not torch.equal(weights_a[k], weights_b[k]))
    return {
        "step0_loss_diff": abs(loss_a - loss_b),
        "tensors_differing": differing,
        "tensors_compared": len(weights_a),
        "seeds_differ": int(any(not torch.equal(weights_a[k], weights_c[k]) for k in weights_a)),
    }


@checker(
    observes=[
        "tensors_total",
        "tensors_trained",
        "checkpoint_loads",
        "resume_refused_naming_field",
        "manifest_keys",
        "manifest_says",
        "unknown_method_refused",
    ],
    ids=["FALSIFY-PINIT-007"],
)
def full_finetune(
    pretrained_init: Path, instruction_data: Any, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """A full fine-tune from the init moves every tensor, writes a checkpoint that loads on its own,
    and refuses to resume that run under a changed config, naming the field that changed."""

    cfg = TrainConfig(steps=steps, batch_size=4, seq_len=64, lr=1e-3, warmup_steps=1, seed=seed)
    out = fresh_dir(tmp_path, "full-")
    result = finetune(pretrained_init, out, cfg, method="full", data=instruction_data, device="cpu")
    before = load_checkpoint(pretrained_init).model.state_dict()
    loads = 0
    trained = 0
    manifest: dict[str, Any] = {}
    if result.checkpoint is not None:
        try:
            reloaded = load_checkpoint(result.checkpoint / "model.safetensors")
            after = reloaded.model.state_dict()
            manifest = dict(reloaded.manifest)
            loads = 1
            trained = sum(not torch.equal(before[k], after[k]) for k in before)
        except CheckpointError:
            pass
    named = 0
    try:
        finetune(
            pretrained_init,
            out,
            TrainConfig(**{**cfg.to_dict(), "lr": 5e-4}),
            method="full",
            data=instruction_data,
            device="cpu",
            resume=True,
        )
    except ResumeError as exc:
        named = int("training config (lr)" in str(exc))  # exactly the field that changed, no other
    try:
        finetune(pretrained_init, fresh_dir(tmp_path, "dora-"), cfg, method="dora", data=instruction_data)
        refusal = None
    except ValueError as exc:
        refusal = str(exc) == "unknown fine-tuning method 'dora'; expected full, lora or qlora"
    return {
        # a full fine-tune is a model of its own: it records its base by path, not an adapter's
        # identity of the base weights
        "manifest_keys": sorted(manifest),
        "manifest_says": [manifest.get("kind"), manifest.get("method"), manifest.get("base") == str(pretrained_init)],
        "unknown_method_refused": refusal,
        "tensors_total": len(before),
        "tensors_trained": trained,
        "checkpoint_loads": loads,
        "resume_refused_naming_field": named,
    }


@checker(
    observes=[
        "stopped",
        "stop_step",
        "last_checkpoint_step",
        "last_checkpoint_loads",
        "checkpoints_after_stop",
        "log_records_the_stop",
        "stop_without_checkpoint_says_so",
        "stop_names_its_checkpoint",
    ],
    ids=["FALSIFY-PINIT-008"],
)
def divergence_stops_cleanly(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path, lr: float, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Pretrain the tiny preset with a learning rate that must diverge, saving every step: the run
    stops at the first non-finite loss with an error that names the last checkpoint written before
    it, that checkpoint loads, nothing is written after the stop, and the run's log records the
    stop (its step, value and last checkpoint) and the checkpoint it names."""

    cfg = TrainConfig(
        steps=steps, batch_size=4, seq_len=32, lr=lr, warmup_steps=0, grad_clip=0.0, save_every=1, seed=seed
    )
    out = fresh_dir(tmp_path, "diverge-")
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)
    says_so = 0
    try:  # the same run saving nothing before the end: the error must say no checkpoint exists
        pretrain(
            fresh_dir(tmp_path, "diverge-unsaved-"),
            TrainConfig(**{**cfg.to_dict(), "save_every": 0}),
            config=config,
            tokenizer=engine_tokenizer,
            data=pretrain_data,
            device="cpu",
        )
    except NonFiniteLossError as exc:
        says_so = int(exc.last_checkpoint is None and "no checkpoint was written yet" in str(exc))
    try:
        pretrain(out, cfg, config=config, tokenizer=engine_tokenizer, data=pretrain_data, device="cpu")
    except NonFiniteLossError as exc:
        last = exc.last_checkpoint
        loads = 0
        if last is not None:
            try:
                load_checkpoint(Path(last) / "model.safetensors")
                loads = 1
            except CheckpointError:
                pass
        written = sorted(int(p.name.removeprefix("step-")) for p in out.glob("step-*") if p.is_dir())
        records = read_log(out / LOG_NAME)
        stop = [r for r in records if r.get("kind") == "nonfinite"]
        logged = int(
            len(stop) == 1
            and stop[0].get("step") == exc.step
            and stop[0].get("last_checkpoint") == (str(last) if last is not None else None)
            and stop[0].get("value") == str(exc.value)
            and any(r.get("kind") == "checkpoint" and r.get("step") == exc.step for r in records)
        )
        return {
            "stopped": 1,
            "stop_step": exc.step,
            "last_checkpoint_step": int(Path(last).name.removeprefix("step-")) if last is not None else -1,
            "last_checkpoint_loads": loads,
            "checkpoints_after_stop": sum(s > exc.step for s in written),
            "log_records_the_stop": logged,
            "stop_without_checkpoint_says_so": says_so,
            # the message a user reads names the folder to restart from
            "stop_names_its_checkpoint": int(last is not None and f"last good checkpoint kept at {last}" in str(exc)),
        }
    return {
        "stopped": 0,
        "stop_step": -1,
        "last_checkpoint_step": -1,
        "last_checkpoint_loads": 0,
        "checkpoints_after_stop": 0,
        "log_records_the_stop": 0,
        "stop_without_checkpoint_says_so": says_so,
        "stop_names_its_checkpoint": 0,
    }


@checker(
    observes=[
        "tensors_compared",
        "tensors_differing",
        "resumed_from_step",
        "loss_steps_differing",
        "checkpoints_record_data",
        "val_logged_at_end",
        "tied_resumed_from_step",
        "tied_differing",
    ],
    ids=["FALSIFY-PINIT-009"],
)
def resume_equals_uninterrupted(
    engine_tokenizer: EngineTokenizer, pretrain_data: TokenData, tmp_path: Path, steps: int, seed: int = 0
) -> dict[str, Any]:
    """Train ``steps`` steps with a checkpoint halfway; then, in a folder holding only that halfway
    checkpoint, resume the same config: the resumed run's final weights and its losses after the
    halfway point are those of the uninterrupted run, bit for bit, and both final checkpoints record
    the digest of the data they were trained on."""

    half = steps // 2
    cfg = TrainConfig(steps=steps, batch_size=4, seq_len=32, lr=1e-3, warmup_steps=1, save_every=half, seed=seed)

    def interrupted(config: ModelConfig, name: str) -> tuple[Path, TrainResult, TrainResult]:
        whole_dir, resumed_dir = fresh_dir(tmp_path, f"whole-{name}-"), fresh_dir(tmp_path, f"resumed-{name}-")
        whole = pretrain(whole_dir, cfg, config=config, tokenizer=engine_tokenizer, data=pretrain_data, device="cpu")
        halfway = f"step-{half:06d}"
        shutil.copytree(whole_dir / halfway, resumed_dir / halfway)
        (resumed_dir / LATEST_NAME).write_text(json.dumps({"folder": halfway}))
        resumed = pretrain(
            resumed_dir, cfg, config=config, tokenizer=engine_tokenizer, data=pretrain_data, device="cpu", resume=True
        )
        if whole.checkpoint is None or resumed.checkpoint is None:
            raise RuntimeError("a run finished without a final checkpoint")
        return whole_dir, whole, resumed

    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)
    whole_dir, whole, resumed = interrupted(config, "llama")
    # a tied head is one tensor under two names: the resumed run must tie it again
    tied_config = preset("tiny", vocab_size=engine_tokenizer.vocab_size, architecture="qwen2", attention_bias=True,
                         tie_word_embeddings=True)  # fmt: skip
    _, tied_whole, tied_resumed = interrupted(tied_config, "qwen2")
    assert tied_whole.checkpoint is not None and tied_resumed.checkpoint is not None
    tied_a = load_checkpoint(tied_whole.checkpoint / "model.safetensors").model
    tied_b = load_checkpoint(tied_resumed.checkpoint / "model.safetensors").model
    tied_differing = sum(
        not torch.equal(x, y) for x, y in zip(tied_a.state_dict().values(), tied_b.state_dict().values(), strict=True)
    )
    tied_differing += sum(x != y for x, y in zip(tied_whole.losses[half:], tied_resumed.losses, strict=False))
    assert whole.checkpoint is not None and resumed.checkpoint is not None
    first = load_checkpoint(whole.checkpoint / "model.safetensors")
    second = load_checkpoint(resumed.checkpoint / "model.safetensors")
    a, b = first.model.state_dict(), second.model.state_dict()
    tail = whole.losses[half:]
    recorded = sum(c.manifest.get("data_digest") == pretrain_data.digest for c in (first, second))
    log = read_log(whole_dir / LOG_NAME)
    val_logged = int(any(r.get("kind") == "val" and r.get("step") == steps and "val_loss" in r for r in log))
    return {
        "tensors_compared": len(a),
        "tensors_differing": sum(not torch.equal(a[k], b[k]) for k in a),
        "resumed_from_step": resumed.start_step,
        "loss_steps_differing": sum(x != y for x, y in zip(tail, resumed.losses, strict=False))
        + abs(len(tail) - len(resumed.losses)),
        "checkpoints_record_data": recorded,
        "val_logged_at_end": val_logged,
        "tied_resumed_from_step": tied_resumed.start_step,
        "tied_differing": tied_differing,
    }


@checker(
    observes=[
        "steps_compared",
        "max_rel_lr_error",
        "warmup_rising",
        "config_refusals_differing",
        "config_boundary_accepted",
        "factors_compared",
        "max_rel_factor_error",
    ],
    ids=["FALSIFY-PINIT-010"],
)
def lr_schedule(
    engine_tokenizer: EngineTokenizer,
    pretrain_data: TokenData,
    tmp_path: Path,
    steps: int,
    warmup_steps: int,
    lr: float,
    min_lr_ratio: float,
    seed: int = 0,
) -> dict[str, Any]:
    """The learning rate each update used (the run's own log) against the schedule written out here:
    linear warm-up to ``lr`` over ``warmup_steps`` updates, then cosine decay to ``min_lr_ratio * lr``;
    and ``lr_factor`` itself, read up to four steps past the last update (where the scheduler stands
    once a run is over, and where a run continued past its schedule would be), for this schedule
    and for ones whose decay lasts no step or one step."""

    cfg = TrainConfig(
        steps=steps, batch_size=4, seq_len=32, lr=lr, warmup_steps=warmup_steps, min_lr_ratio=min_lr_ratio, seed=seed
    )
    records: list[dict[str, Any]] = []
    config = preset("tiny", vocab_size=engine_tokenizer.vocab_size)
    pretrain(
        fresh_dir(tmp_path, "schedule-"),
        cfg,
        config=config,
        tokenizer=engine_tokenizer,
        data=pretrain_data,
        device="cpu",
        on_record=records.append,
    )
    used = {r["step"]: float(r["lr"]) for r in records if r.get("kind") == "train"}

    def factor(t: int, steps: int, warmup_steps: int) -> float:
        if t < warmup_steps:
            return (t + 1) / warmup_steps
        # the decay spans at least one step and holds at its floor once done
        progress = min(1.0, (t - warmup_steps) / max(1, steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    factor_errors = [
        abs(lr_factor(t, replace(cfg, steps=n, warmup_steps=w)) - factor(t, n, w)) / factor(t, n, w)
        for n, w in ((steps, warmup_steps), (warmup_steps, warmup_steps), (warmup_steps + 1, warmup_steps))
        for t in range(n + 4)
    ]

    sizes = "steps and batch_size must be >= 1 and seq_len >= 2"
    schedule = "warmup_steps must be >= 0 and min_lr_ratio in [0, 1]"
    refusals: list[tuple[dict[str, float], str]] = [
        ({"seq_len": 1}, sizes),
        ({"steps": 0}, sizes),
        ({"batch_size": 0}, sizes),
        ({"warmup_steps": -1}, schedule),
        ({"min_lr_ratio": 1.5}, schedule),
        ({"min_lr_ratio": -0.1}, schedule),
    ]
    # a config that cannot run is refused saying what is wrong
    refused = refusals_differing(
        (functools.partial(TrainConfig, **{**cfg.to_dict(), **change}), ValueError, message)
        for change, message in refusals
    )
    boundary = 0
    smallest = {"steps": 1, "batch_size": 1, "seq_len": 2, "warmup_steps": 0}
    for ratio in (1.0, 0.0):  # the edges of every range: no decay, and decay to nothing
        try:
            TrainConfig(**smallest, min_lr_ratio=ratio)
            boundary += 1
        except ValueError:
            pass
    want = {t: lr * factor(t, steps, warmup_steps) for t in range(steps)}
    errors = [abs(used[t] - want[t]) / want[t] for t in range(steps) if t in used]
    rising = all(used[t] < used[t + 1] for t in range(warmup_steps - 1) if t in used and t + 1 in used)
    return {
        "steps_compared": len(errors),
        "max_rel_lr_error": max(errors) if errors else math.inf,
        "warmup_rising": int(rising and warmup_steps > 1),
        "config_refusals_differing": refused,
        "config_boundary_accepted": boundary,
        "factors_compared": len(factor_errors),
        "max_rel_factor_error": max(factor_errors),
    }


# (the parameters a checkpoint's optimizer trained, those of the run resuming it)
PARAMETER_SETS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("a", "b", "c", "d", "e"), ("a", "b", "x")),  # three dropped, one new
    (("a", "b"), ("b", "a")),  # the same names in another order: state would land on the wrong tensors
    (("m.1", "m.2", "m.3", "m.4", "m.5"), ("n.1", "n.2", "n.3", "n.4")),  # more than three each side
)


@checker(observes=["mismatches", "refused_by_name", "same_set_resumed"], ids=["FALSIFY-PINIT-013"])
def resume_refuses_other_parameters() -> dict[str, Any]:
    """The optimizer state of one parameter list, loaded into a run training another (other names,
    or the same in another order): a ResumeError that names up to three sorted names only the
    checkpoint has and only the run has; the same list resumes with every state tensor equal."""

    def optimizer(names: tuple[str, ...]) -> tuple[torch.optim.Optimizer, Any]:
        params = [nn.Parameter(torch.full((2,), float(i + 1))) for i in range(len(names))]
        opt = torch.optim.AdamW(params, lr=0.1)
        torch.stack([(p**2).sum() for p in params]).sum().backward()
        opt.step()
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)

    out = {"mismatches": len(PARAMETER_SETS), "refused_by_name": 0, "same_set_resumed": 0}
    for saved, running in PARAMETER_SETS:
        tensors, meta = state_to_files(*optimizer(saved), list(saved))
        opt, sched = optimizer(running)
        theirs, ours = sorted(set(saved) - set(running))[:3], sorted(set(running) - set(saved))[:3]
        message = (
            f"the checkpoint trained a different parameter set: only in checkpoint {theirs}, only in this run {ours}"
        )
        try:
            state_from_files(opt, sched, list(running), tensors, meta)
        except ResumeError as exc:
            out["refused_by_name"] += str(exc) == message
        except Exception:  # torch's own size check: a refusal that names nothing
            pass
    names = PARAMETER_SETS[0][0]
    source, source_sched = optimizer(names)
    tensors, meta = state_to_files(source, source_sched, list(names))
    target, target_sched = optimizer(names)
    for p in target.param_groups[0]["params"]:
        target.state[p]["exp_avg"].zero_()
    state_from_files(target, target_sched, list(names), tensors, meta)
    pairs = zip(source.state_dict()["state"].values(), target.state_dict()["state"].values(), strict=True)
    out["same_set_resumed"] = int(all(torch.equal(a[k], b[k]) for a, b in pairs for k in a))
    return out
