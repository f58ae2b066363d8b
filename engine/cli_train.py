"""``python -m engine pretrain | finetune | distill | bench``.

Training commands show a progress bar with the latest loss on stderr and print a JSON summary on
stdout.  A NaN/Inf loss stops the run with ``error: step N: the loss is nan ...`` naming the last
good checkpoint (kept), exit code 3; bad input exits 2, never with a traceback.

Imports inside functions: each command imports torch, rich and the engine modules it uses when it
runs, so `python -m engine --help`, a refused option and shell completion answer without loading
torch (`python -X importtime -m engine --help` shows no torch).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from engine import cli_support as cli
from engine.app import app
from engine.config import ALL_PROJECTIONS, PRESETS, preset
from engine.faults import FAULTS
from engine.recipes import apply_recipe, recipe_manifest

if TYPE_CHECKING:
    from engine.lora import LoraSettings
    from engine.train import TrainConfig, TrainResult


class Method(StrEnum):
    full = "full"
    lora = "lora"
    qlora = "qlora"


def _print_summary(summary: dict[str, Any]) -> None:
    """The run's JSON summary, once: under torchrun only rank 0 prints it."""
    from engine.distributed import rank_info

    text = json.dumps(summary, indent=2, sort_keys=True)
    if FAULTS.active("train_summary_read_as_markup"):  # the defect: [brackets] in its paths read as styles
        cli.out.print(text)  # pragma: no mutate
        return  # pragma: no mutate
    if rank_info().rank == 0:  # JSON, not markup: a run folder such as runs/[v1] prints as it is
        cli.out.print(text, markup=False)


@contextmanager
def _training_progress(steps: int, label: str) -> Iterator[Callable[[dict[str, Any]], None]]:
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=cli.err,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=steps, status="")

        def on_record(record: dict[str, Any]) -> None:
            if record["kind"] == "start":
                progress.update(task, completed=record["step"])
            elif record["kind"] == "train":
                progress.update(task, completed=record["step"] + 1, status=f"loss {record['loss']:.4f}")
            elif record["kind"] == "val":
                progress.update(task, status=f"val {record['val_loss']:.4f}")

        yield on_record


def _summary(result: TrainResult) -> dict[str, Any]:
    return {
        "out_dir": str(result.out_dir),
        "checkpoint": str(result.checkpoint) if result.checkpoint else None,
        "start_step": result.start_step,
        "steps_run": len(result.losses),
        "step0_loss": result.step0_loss if result.start_step == 0 else None,
        "final_loss": result.losses[-1] if result.losses else None,
        "val_losses": {str(k): v for k, v in sorted(result.val_losses.items())},
        "tokens_per_s": round(result.tokens_per_second, 1),
    }


def _preset(name: str) -> Any:
    try:
        return preset(name)
    except ValueError as exc:
        raise cli.fail(str(exc)) from None


def _train_config(
    steps: int,
    batch_size: int,
    seq_len: int,
    lr: float,
    warmup: int,
    eval_every: int,
    save_every: int,
    seed: int,
    grad_clip: float,
) -> TrainConfig:
    from engine.train import TrainConfig

    return cli.guarded(
        lambda: TrainConfig(
            steps=steps,
            batch_size=batch_size,
            seq_len=seq_len,
            lr=lr,
            warmup_steps=warmup,
            eval_every=eval_every,
            save_every=save_every,
            seed=seed,
            grad_clip=grad_clip,
        )
    )


Steps = Annotated[int, typer.Option(help="Optimizer updates.")]
BatchSize = Annotated[int, typer.Option("--batch-size")]
SeqLen = Annotated[int, typer.Option("--seq-len")]
Lr = Annotated[float, typer.Option(help="Peak learning rate (AdamW).")]
Warmup = Annotated[int, typer.Option(help="Linear warm-up steps before the cosine decay.")]
EvalEvery = Annotated[int, typer.Option("--eval-every", help="Validation loss every N steps (0: at the end).")]
SaveEvery = Annotated[int, typer.Option("--save-every", help="Checkpoint every N steps (0: at the end).")]
Seed = Annotated[int, typer.Option()]
GradClip = Annotated[float, typer.Option("--grad-clip", help="Max gradient norm (0: off).")]
Resume = Annotated[bool, typer.Option("--resume/--no-resume", help="Continue from OUT's latest checkpoint.")]
NF4Teacher = Annotated[bool, typer.Option("--nf4-teacher/--no-nf4-teacher", help="Keep the teacher in NF4.")]
AllowSame = Annotated[bool, typer.Option("--allow-same/--no-allow-same", help="Allow identical teacher/student.")]
Device = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:N (default: $PV_DEVICE, else auto).")]
Config = Annotated[
    Path | None,
    typer.Option(
        "--config",
        is_eager=True,
        callback=apply_recipe,
        help="A YAML recipe holding this command's arguments (recipes/*.yaml); flags given here override it.",
    ),
]


@app.command()
def pretrain(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(help="Run folder: checkpoints, log.jsonl.")],
    preset_name: Annotated[
        str | None,
        typer.Option(
            "--preset", help=f"Model shape: {', '.join(PRESETS)} (default tiny; with --init, checked against it)."
        ),
    ] = None,
    init: Annotated[Path | None, typer.Option(help="Start from this checkpoint's weights.")] = None,
    steps: Steps = 200,
    batch_size: BatchSize = 8,
    seq_len: SeqLen = 64,
    lr: Lr = 1e-3,
    warmup: Warmup = 20,
    eval_every: EvalEvery = 50,
    save_every: SaveEvery = 100,
    seed: Seed = 0,
    grad_clip: GradClip = 1.0,
    resume: Resume = False,
    device: Device = None,
    config_file: Config = None,
) -> None:
    """Pretrain a decoder on the local token corpus, from scratch or from --init."""
    from engine.train import pretrain as run_pretrain

    cfg = _train_config(steps, batch_size, seq_len, lr, warmup, eval_every, save_every, seed, grad_clip)
    config = _preset(preset_name or "tiny") if init is None or preset_name else None
    recipe = recipe_manifest(ctx)
    with _training_progress(steps, "pretrain") as on_record:
        result = cli.guarded(
            lambda: run_pretrain(
                out,
                cfg,
                config=config,
                init=init,
                resume=resume,
                device=device,
                on_record=on_record,
                manifest=recipe,
            )
        )
    _print_summary({**_summary(result), **recipe})


@app.command()
def finetune(
    ctx: typer.Context,
    base: Annotated[Path, typer.Argument(help="Checkpoint to fine-tune.")],
    out: Annotated[Path | None, typer.Argument(help="Run folder (not with --adapters).")] = None,
    method: Annotated[Method, typer.Option(help="full weights, LoRA, or QLoRA (NF4 base).")] = Method.lora,
    adapters: Annotated[
        list[str] | None,
        typer.Option(
            "--adapters",
            help="DATA:OUT, repeatable: train one adapter per instruction JSONL on one frozen base, each with "
            "its own optimizer state, schedule, log and checkpoints in OUT.",
        ),
    ] = None,
    schedule: Annotated[
        str, typer.Option(help="Which adapter steps next: round_robin, synchronized, lowest_val_first.")
    ] = "round_robin",
    rank: Annotated[int, typer.Option(help="LoRA rank.")] = 8,
    alpha: Annotated[float, typer.Option(help="LoRA alpha.")] = 16.0,
    dropout: Annotated[float, typer.Option(help="LoRA dropout.")] = 0.0,
    targets: Annotated[str, typer.Option(help=f"Comma-separated projections: {','.join(ALL_PROJECTIONS)}.")] = (
        "q_proj,v_proj"
    ),
    double_quant: Annotated[bool, typer.Option("--double-quant/--no-double-quant")] = True,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Training JSONL: rows of {prompt, response} or of {messages: [{role, content}, ...]} "
            "(default: stdlib docstring pairs)."
        ),
    ] = None,
    template: Annotated[
        str,
        typer.Option(
            help="How examples become tokens: chat (the checkpoint's chat template; only assistant turns are "
            "learned), docstring (### Docstring / ### Code, the engine's own pretraining format), or auto: chat "
            "when the checkpoint has a chat template, else docstring."
        ),
    ] = "auto",
    steps: Steps = 100,
    batch_size: BatchSize = 8,
    seq_len: SeqLen = 128,
    lr: Lr = 2e-4,
    warmup: Warmup = 10,
    eval_every: EvalEvery = 25,
    save_every: SaveEvery = 50,
    seed: Seed = 0,
    grad_clip: GradClip = 1.0,
    resume: Resume = False,
    device: Device = None,
    config_file: Config = None,
) -> None:
    """Fine-tune a checkpoint on instruction pairs: full, LoRA or QLoRA."""
    from engine.checkpoint import inspect_checkpoint
    from engine.data import TEMPLATES, read_examples, resolve_template, tokenize_pairs
    from engine.lora import LoraSettings
    from engine.quant import NF4Config
    from engine.train import finetune as run_finetune

    if template not in TEMPLATES:
        raise cli.fail(f"unknown --template {template!r}; expected one of {', '.join(TEMPLATES)}")

    cfg = _train_config(steps, batch_size, seq_len, lr, warmup, eval_every, save_every, seed, grad_clip)
    settings = cli.guarded(
        lambda: LoraSettings(
            r=rank, alpha=alpha, dropout=dropout, targets=tuple(t.strip() for t in targets.split(",") if t.strip())
        )
    )
    recipe = recipe_manifest(ctx)
    if adapters:
        if out is not None or data is not None or resume:
            raise cli.fail("--adapters names each adapter's DATA:OUT; give no OUT argument, --data or --resume with it")
        if method is Method.full:
            raise cli.fail("--adapters trains LoRA adapters: use --method lora or qlora")
        _finetune_adapters(base, adapters, method, settings, cfg, schedule, double_quant, device, recipe, template)
        return
    if out is None:
        raise cli.fail("missing OUT: the run folder (or --adapters DATA:OUT)")
    inst = None
    if data is not None:
        # the header alone: the tokenizer is in it, and the training loads the weights itself
        _, tokenizer, _, _ = cli.guarded(lambda: inspect_checkpoint(base))
        chosen = cli.guarded(lambda: resolve_template(template, tokenizer))
        inst = cli.guarded(lambda: tokenize_pairs(read_examples(data), tokenizer, seq_len, template=chosen))
        recipe = {**recipe, "template": chosen}
    with _training_progress(steps, f"finetune ({method.value})") as on_record:
        result = cli.guarded(
            lambda: run_finetune(
                base,
                out,
                cfg,
                method=method.value,
                lora=settings,
                nf4=NF4Config(double_quant=double_quant),
                data=inst,
                resume=resume,
                device=device,
                on_record=on_record,
                manifest=recipe,
            )
        )
    _print_summary({**_summary(result), "method": method.value, **recipe})


def _finetune_adapters(
    base: Path,
    specs: list[str],
    method: Method,
    settings: LoraSettings,
    cfg: TrainConfig,
    schedule: str,
    double_quant: bool,
    device: str | None,
    extra_manifest: dict[str, Any],
    template: str = "auto",
) -> None:
    """``finetune --adapters DATA:OUT ...``: the command line read, the training is
    :func:`engine.multi_adapter.finetune_adapters`'."""
    from engine.multi_adapter import SCHEDULES, finetune_adapters
    from engine.quant import NF4Config

    if schedule not in SCHEDULES:
        raise cli.fail(f"unknown schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
    runs = []
    for spec in specs:
        data_path, sep, out_path = spec.rpartition(":")  # OUT is a folder name: DATA may hold a colon
        if FAULTS.active("adapters_spec_split_at_first_colon"):
            data_path, sep, out_path = spec.partition(":")  # the defect  # pragma: no mutate
        if not sep or not data_path or not out_path:
            raise cli.fail(f"--adapters {spec!r}: expected DATA:OUT (an instruction JSONL and a folder)")
        runs.append((Path(data_path), Path(out_path)))
    names = [o.name for _, o in runs]
    if len(set(names)) != len(names):
        raise cli.fail(f"--adapters: two OUT folders share a name ({', '.join(names)}); each names its adapter")
    result = cli.guarded(
        lambda: finetune_adapters(
            base,
            runs,
            cfg,
            method="qlora" if method is Method.qlora else "lora",
            settings=settings,
            schedule=schedule,  # type: ignore[arg-type]
            nf4=NF4Config(double_quant=double_quant),
            device=device,
            manifest=extra_manifest,
            template=template,
        )
    )
    _print_summary(
        {
            "method": method.value,
            "schedule": schedule,
            "base": str(base),
            "order": result.order,  # which adapter took each step, in turn
            "adapters": {
                name: {
                    "out_dir": str(st.job.out_dir),
                    "checkpoint": str(st.checkpoint) if st.checkpoint else None,
                    "steps_run": st.step,
                    "final_loss": st.losses[-1] if st.losses else None,
                    "val_losses": {str(k): v for k, v in sorted(st.val_losses.items())},
                }
                for name, st in result.adapters.items()
            },
        }
    )


@app.command()
def distill(
    ctx: typer.Context,
    teacher: Annotated[Path, typer.Argument(help="Teacher checkpoint (frozen).")],
    out: Annotated[Path, typer.Argument(help="Run folder.")],
    student_preset: Annotated[
        str | None,
        typer.Option("--student-preset", help="New student of this shape (vocabulary and special ids: the teacher's)."),
    ] = None,
    student_init: Annotated[Path | None, typer.Option("--student-init", help="Student checkpoint.")] = None,
    temperature: Annotated[float, typer.Option(help="Softmax temperature T (KL scaled by T^2).")] = 2.0,
    alpha: Annotated[float, typer.Option(help="Weight of the KL term; 1-alpha weighs the CE.")] = 0.5,
    nf4_teacher: NF4Teacher = False,
    allow_same: AllowSame = False,
    steps: Steps = 100,
    batch_size: BatchSize = 8,
    seq_len: SeqLen = 64,
    lr: Lr = 1e-3,
    warmup: Warmup = 10,
    eval_every: EvalEvery = 25,
    save_every: SaveEvery = 50,
    seed: Seed = 0,
    grad_clip: GradClip = 1.0,
    resume: Resume = False,
    device: Device = None,
    config_file: Config = None,
) -> None:
    """Distill a frozen (optionally NF4) teacher into a student: KL at T plus CE."""
    from engine.distill import distill as run_distill

    if (student_preset is None) == (student_init is None):
        raise cli.fail("give exactly one of --student-preset or --student-init")
    cfg = _train_config(steps, batch_size, seq_len, lr, warmup, eval_every, save_every, seed, grad_clip)
    student_config = None
    if student_preset:
        from engine.checkpoint import config_from_metadata, read_header
        from engine.distill import student_of_shape

        teacher_config = cli.guarded(lambda: config_from_metadata(read_header(teacher)[1]))
        student_config = student_of_shape(_preset(student_preset), teacher_config)
    recipe = recipe_manifest(ctx)
    with _training_progress(steps, "distill") as on_record:
        result = cli.guarded(
            lambda: run_distill(
                teacher,
                out,
                cfg,
                student_config=student_config,
                student_init=student_init,
                temperature=temperature,
                alpha=alpha,
                quantize_teacher=nf4_teacher,
                allow_same=allow_same,
                resume=resume,
                device=device,
                on_record=on_record,
                manifest=recipe,
            )
        )
    # what was distilled from and how, as the student's manifest records it
    settings = {"teacher": str(teacher), "teacher_nf4": nf4_teacher, "temperature": temperature, "alpha": alpha}
    _print_summary({**_summary(result), **settings, **recipe})


@app.command()
def bench(
    brick: Annotated[list[str], typer.Option(help="Brick to measure (repeatable) or 'all'.")],
    checkpoint: Annotated[
        Path | None,
        typer.Argument(help="Size the bricks by this checkpoint's architecture (its weights are not read)."),
    ] = None,
    preset_name: Annotated[str, typer.Option("--preset")] = "tiny",
    batch_size: BatchSize = 4,
    seq_len: SeqLen = 64,
    new_tokens: Annotated[int, typer.Option("--new-tokens")] = 16,
    reps: Annotated[int, typer.Option(help="Timed repetitions.")] = 7,
    warmup: Annotated[int, typer.Option(help="Untimed warm-up repetitions.")] = 2,
    min_rep_ms: Annotated[
        float, typer.Option("--min-rep-ms", help="Batch calls until one timed repetition lasts at least this.")
    ] = 20.0,
    threads: Annotated[int, typer.Option(help="torch intra-op threads while timing (0: torch's default).")] = 0,
    qlora: Annotated[bool, typer.Option("--qlora", help="LoRA bricks on an NF4 base.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results as JSON here.")] = None,
    device: Device = None,
    max_memory_gib: Annotated[
        float | None,
        typer.Option(
            "--max-memory-gib",
            min=0.0,
            help="A brick that needs more is computed on meta, not run (default: 80%% free).",
        ),
    ] = None,
) -> None:
    """Measure benchmark bricks (min / median / CV) and print a table; too big a brick is reported, not run."""
    from engine.bricks import BRICKS, BrickSettings, results_json, results_table, run_bricks
    from engine.device import resolve_device

    names = list(BRICKS) if "all" in brick else brick
    unknown = [n for n in names if n not in BRICKS]
    if FAULTS.active("bench_unknown_bricks_skipped"):  # the defect: a misspelt brick is dropped unsaid
        names, unknown = [n for n in names if n in BRICKS], []  # pragma: no mutate
    if unknown:
        raise cli.fail(f"unknown brick(s) {', '.join(unknown)}; known: {', '.join(BRICKS)}, all")
    _preset(preset_name)
    config = None
    if checkpoint is not None:
        from engine.checkpoint import config_from_metadata, read_header

        config = cli.guarded(lambda: config_from_metadata(read_header(checkpoint)[1]))
    dev = cli.guarded(lambda: resolve_device(device))
    settings = BrickSettings(
        preset=preset_name,
        batch_size=batch_size,
        seq_len=seq_len,
        new_tokens=new_tokens,
        reps=reps,
        warmup=warmup,
        min_rep_s=min_rep_ms / 1000.0,
        threads=threads,
        qlora=qlora,
        device=str(dev),
        config=config,
        max_memory_gib=max_memory_gib,
    )
    results = cli.guarded(lambda: run_bricks(names, settings))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(results_json(results) + "\n")
    cli.out.print(results_table(results))
