"""What ``python -m engine finetune --adapters`` and ``distill`` give a user who runs them.

The commands run through Typer's test runner exactly as ``python -m engine`` runs them; what they
print and write is read back by readers that are not the engine's: ``json`` for the summary, the
log and the manifests, safetensors' ``safe_open`` for checkpoint headers and tensors, PEFT's
``LoraConfig.from_pretrained`` for adapter configs, a sha256 over the base file's tensors written
out here, and the in-process API run with the same settings for the tensors the command trained.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.config import preset
from engine.data import read_examples, tokenize_pairs
from engine.lora import LoraSettings
from engine.multi_adapter import AdapterJob, train_adapters
from engine.quant import NF4Config
from engine.tokenizer import EngineTokenizer
from engine.train import TrainConfig
from falsifiers.shared.cli import cli_runner, refused_cleanly
from falsifiers.shared.inspect_reports import _tensors, adapter_report, fields_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

# Header keys that are not the architecture (ModelConfig fields are the rest).
NOT_ARCHITECTURE = ("format", "format_version", "manifest", "tokenizer")
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
ADAPTER_STEP_FILES = {
    "adapter/adapter_config.json",
    "adapter/adapter_model.safetensors",
    "manifest.json",
    "train_state.json",
    "train_state.safetensors",
}


def _header(path: Path) -> dict[str, str]:

    with safe_open(str(path), "pt") as f:
        return dict(f.metadata() or {})


def _architecture(header: dict[str, str]) -> dict[str, Any]:
    """The header's architecture keys, each value JSON as the safetensors metadata stores it."""
    return {k: json.loads(v) for k, v in header.items() if k not in NOT_ARCHITECTURE}


def _weights_sha256(path: Path) -> str:
    """sha256 over each stored tensor's name, dtype, shape and bytes in name order, a tied head
    left out (it is the embedding): which weights a file holds, whatever its metadata says."""
    tied = json.loads(_header(path).get("tie_word_embeddings", "false"))
    h = hashlib.sha256()
    for name, t in sorted(_tensors(path).items()):
        if tied and name == "lm_head.weight":
            continue
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _log(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text(encoding="utf-8").splitlines()]


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _summary(stdout: str) -> dict[str, Any]:
    try:
        value = json.loads(stdout)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _summary_mismatches(entry: dict[str, Any], folder: Path, steps: int) -> int:
    """Fields of one summary entry that differ from the run folder and its log.jsonl."""
    log = _log(folder)
    train = [r for r in log if r["kind"] == "train"]
    vals = {str(r["step"]): r["val_loss"] for r in log if r["kind"] == "val"}
    want = {
        "out_dir": str(folder),
        "checkpoint": str(folder / f"step-{steps:06d}"),
        "steps_run": steps,
        "final_loss": train[-1]["loss"] if train else None,
        "val_losses": vals,
    }
    return fields_differing(entry, want)


def _tensors_differing(mine: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> int:
    """Tensors of ``theirs`` that ``mine`` lacks or holds other values for, and tensors only ``mine`` has."""
    return sum(k not in mine or not torch.equal(mine[k], t) for k, t in theirs.items()) + len(set(mine) - set(theirs))


def _stopped_after_step_2(run: Path, copy: Path, steps: int) -> None:
    """``copy``: the run folder as a run stopped after its step-2 checkpoint leaves it (no later
    checkpoint, latest.json at step 2; its log is not needed to resume)."""
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns(f"step-{steps:06d}", "log.jsonl"))
    (copy / "latest.json").write_text(json.dumps({"folder": "step-000002", "step": 2}), encoding="utf-8")


def _inspect_mismatches(run: Any, folder: Path, base: Path, base_sha256: str) -> int:
    """Fields of ``inspect --json`` on a one-step QLoRA run folder (default LoRA settings, no double
    quantization) that differ from its step's files read here, plus fields it should not have."""
    run_facts = {"method": "qlora", "base": str(base), "base_weights_sha256": base_sha256, "step": 1}
    want = adapter_report(folder / "step-000001" / "adapter", **run_facts, nf4={"blocksize": 64, "double_quant": False})
    # the command's LoRA defaults, stated here rather than read back from the file they are about
    want |= {"r": 8, "lora_alpha": 16.0, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    result = run("inspect", folder, "--json")
    return fields_differing(_summary(result.stdout) if result.exit_code == 0 else {}, want)


def _pairs(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"prompt": p, "response": r}) for p, r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


ADAPTERS_OBSERVED = (
    "exit_code",
    "adapters",
    "summary_mismatches",
    "layout_mismatches",
    "manifest_fields_compared",
    "manifest_mismatches",
    "state_mismatches",
    "config_mismatches",
    "tensors_compared",
    "tensors_differing",
    "b_trained",
    "qlora_manifest_matching",
    "qlora_inspect_mismatches",
    "qlora_tensors_compared",
    "qlora_tensors_differing",
    "refusals",
    "refused_cleanly",
)


@checker(observes=ADAPTERS_OBSERVED, ids=["FALSIFY-TCLI-001"])
def adapters_from_the_command_line(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, steps: int
) -> dict[str, Any]:
    """``finetune BASE --adapters DATA:OUT --adapters DATA:OUT`` (a DATA path holding a colon,
    synchronized, rank 4, alpha 8 on q/k/v/o): the summary against each adapter's log, the run
    folder's files, latest.json, the manifest against the base file, train_state.json, PEFT's
    reading of the config, the tensors against the in-process ``train_adapters`` with the same
    settings; a QLoRA run's manifest records its NF4 settings; eight bad requests are refused."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft import LoraConfig

    run = cli_runner()
    root = fresh_dir(tmp_path, "tcli-adapters-")
    model = tiny_model_factory(0, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    base = save_checkpoint(root / "base.safetensors", model, engine_tokenizer, make_manifest(step=0))
    # A colon inside DATA (a folder named for a version, as teams do): OUT is what follows the last one.
    data = {
        "sums": _pairs(root / "data:v1" / "sums.jsonl", [(f"Add {i} and {i + 3}.", str(2 * i + 3)) for i in range(16)]),
        "words": _pairs(root / "data:v1" / "words.jsonl", [(f"Spell w{i}x backwards.", f"x{i}w") for i in range(16)]),
    }
    outs = {name: root / "adapters" / name for name in data}
    settings = ["--rank", 4, "--alpha", 8, "--targets", ",".join(TARGETS), "--steps", steps, "--batch-size", 2]
    settings += ["--seq-len", 32, "--lr", 0.01, "--warmup", 1, "--eval-every", 0, "--save-every", 0, "--seed", 7]
    specs = [a for name in data for a in ("--adapters", f"{data[name]}:{outs[name]}")]
    result = run("finetune", base, *specs, "--schedule", "synchronized", *settings)
    out: dict[str, Any] = dict.fromkeys(ADAPTERS_OBSERVED, 0)
    out["exit_code"] = result.exit_code
    summary = _summary(result.stdout)
    if result.exit_code != 0 or not summary:
        return out | {"exit_code": result.exit_code or -1}

    entries = summary.get("adapters", {})
    out["adapters"] = len(entries) if sorted(entries) == sorted(data) else -len(entries)
    # synchronized: every adapter steps once per tick, in the order --adapters names them
    top = {"method": "lora", "schedule": "synchronized", "base": str(base), "order": [*data] * steps}
    out["summary_mismatches"] = sum(summary.get(k) != v for k, v in top.items())
    out["summary_mismatches"] += len(set(summary) - {*top, "adapters"})
    header = _header(base)
    manifest_base: dict[str, Any] = {
        "kind": "finetune",
        "method": "lora",
        "base": str(base),
        "base_weights_sha256": _weights_sha256(base),
        "base_architecture": _architecture(header),
        "template": "docstring",  # the base's tokenizer has no chat template
        "step": steps,
    }
    # The same adapters trained in process, from the same base file and data, with the same settings.
    loaded = load_checkpoint(base)
    cfg = TrainConfig(
        steps=steps, batch_size=2, seq_len=32, lr=0.01, warmup_steps=1, eval_every=0, save_every=0, seed=7
    )
    lora = LoraSettings(r=4, alpha=8.0, dropout=0.0, targets=TARGETS)
    ref_root = fresh_dir(tmp_path, "tcli-reference-")
    jobs = [
        AdapterJob(name, tokenize_pairs(read_examples(path), loaded.tokenizer, 32), ref_root / name, lora)
        for name, path in data.items()
    ]
    reference = train_adapters(loaded.model, jobs, cfg, schedule="synchronized")
    digests = {name: st.job.data.digest for name, st in reference.adapters.items()}
    for name, folder in outs.items():
        step = folder / f"step-{steps:06d}"
        out["summary_mismatches"] += _summary_mismatches(entries.get(name, {}), folder, steps)
        out["layout_mismatches"] += _files(folder) != {"latest.json", "log.jsonl"} | {
            f"step-{steps:06d}/{f}" for f in ADAPTER_STEP_FILES
        }
        latest = json.loads((folder / "latest.json").read_text(encoding="utf-8"))
        out["layout_mismatches"] += latest != {"folder": f"step-{steps:06d}", "step": steps}
        manifest = json.loads((step / "manifest.json").read_text(encoding="utf-8"))
        # as a one-adapter run's manifest: the seed, the data's digest and the settings, and the adapter's name
        want = manifest_base | {"adapter": name, "seed": 7, "data_digest": digests[name], "train_config": cfg.to_dict()}
        out["manifest_fields_compared"] += len(want) + len(manifest_base["base_architecture"]) - 1
        out["manifest_mismatches"] += fields_differing(manifest, want)
        state = json.loads((step / "train_state.json").read_text(encoding="utf-8"))
        out["state_mismatches"] += (state.get("adapter"), state.get("step")) != (name, steps)
        out["state_mismatches"] += state.get("data_digest") != digests[name]
        config = LoraConfig.from_pretrained(str(step / "adapter"))
        got = (config.r, config.lora_alpha, config.lora_dropout, set(config.target_modules or ()))
        out["config_mismatches"] += got != (4, 8, 0.0, set(TARGETS))
        out["config_mismatches"] += str(config.peft_type.value if config.peft_type else None) != "LORA"
        mine = _tensors(step / "adapter" / "adapter_model.safetensors")
        theirs = _tensors(ref_root / name / f"step-{steps:06d}" / "adapter" / "adapter_model.safetensors")
        out["tensors_compared"] += len(theirs)
        out["tensors_differing"] += _tensors_differing(mine, theirs)
        b = [t for k, t in mine.items() if "lora_B" in k]
        out["b_trained"] += bool(b) and all(bool(t.abs().sum() > 0) for t in b)
    out["state_mismatches"] += len(set(digests.values())) != len(digests)

    # QLoRA: one adapter on an NF4 base without double quantization; its manifest says so, and it
    # is the adapter the in-process API trains on that NF4 base.
    qlora = root / "qlora" / "sums"
    q = run("finetune", base, "--adapters", f"{data['sums']}:{qlora}", "--method", "qlora", "--no-double-quant",
            "--steps", 1, "--batch-size", 2, "--seq-len", 32, "--lr", 0.01, "--warmup", 1, "--eval-every", 0,
            "--save-every", 0, "--seed", 7)  # fmt: skip
    if q.exit_code == 0:
        one = TrainConfig(
            steps=1, batch_size=2, seq_len=32, lr=0.01, warmup_steps=1, eval_every=0, save_every=0, seed=7
        )
        q_manifest = json.loads((qlora / "step-000001" / "manifest.json").read_text(encoding="utf-8"))
        want_q = manifest_base | {"method": "qlora", "adapter": "sums", "step": 1, "seed": 7}
        want_q |= {"data_digest": digests["sums"], "train_config": one.to_dict()}
        want_q["nf4"] = {"blocksize": 64, "double_quant": False}
        out["qlora_manifest_matching"] = int(q_manifest == want_q)
        out["qlora_inspect_mismatches"] = _inspect_mismatches(run, qlora, base, manifest_base["base_weights_sha256"])
        nf4_base = load_checkpoint(base)
        job = AdapterJob(
            "sums", tokenize_pairs(read_examples(data["sums"]), nf4_base.tokenizer, 32), ref_root / "q", LoraSettings()
        )
        train_adapters(nf4_base.model, [job], one, quantize=True, nf4=NF4Config(double_quant=False))
        weights = Path("step-000001") / "adapter" / "adapter_model.safetensors"
        theirs = _tensors(ref_root / "q" / weights)
        out["qlora_tensors_compared"] = len(theirs)
        out["qlora_tensors_differing"] = _tensors_differing(_tensors(qlora / weights), theirs)
    else:
        out["qlora_inspect_mismatches"] = -1

    bad = root / "bad"
    missing = root / "data:v1" / "missing.jsonl"
    requests: list[tuple[tuple[Any, ...], tuple[str, ...], tuple[Path, ...]]] = [
        ((base, bad / "run", "--adapters", f"{data['sums']}:{bad / 'a'}"), ("--adapters",), (bad,)),
        ((base, "--data", data["sums"], "--adapters", f"{data['sums']}:{bad / 'a'}"), ("--data",), (bad,)),
        ((base, "--resume", "--adapters", f"{data['sums']}:{bad / 'a'}"), ("--resume",), (bad,)),
        ((base, "--method", "full", "--adapters", f"{data['sums']}:{bad / 'a'}"), ("lora",), (bad,)),
        ((base, "--schedule", "fastest", "--adapters", f"{data['sums']}:{bad / 'a'}"), ("fastest",), (bad,)),
        ((base, "--adapters", str(data["sums"].name)), ("DATA:OUT",), (bad,)),
        ((base, "--adapters", f"{data['sums']}:"), ("DATA:OUT",), (bad,)),
        ((base, "--adapters", f":{bad / 'a'}"), ("DATA:OUT",), (bad,)),
        (
            (base, "--adapters", f"{data['sums']}:{bad / 'x' / 'a'}", "--adapters", f"{data['words']}:{bad / 'a'}"),
            ("share a name",),
            (bad,),
        ),
        (
            (base, "--adapters", f"{data['sums']}:{bad / 'a'}", "--adapters", f"{missing}:{bad / 'b'}"),
            ("missing.jsonl",),
            (bad,),
        ),
    ]
    out["refusals"] = len(requests)
    for args, names, not_written in requests:
        out["refused_cleanly"] += refused_cleanly(run("finetune", *args, "--steps", 1), names, not_written)
    return out


DISTILL_OBSERVED = (
    "exit_code",
    "header_fields_compared",
    "header_mismatches",
    "tokenizer_matching",
    "manifest_mismatches",
    "summary_mismatches",
    "resumed_tensors_compared",
    "resumed_tensors_differing",
    "refusals",
    "refused_cleanly",
    "nf4_student_init_run",
)


@checker(observes=DISTILL_OBSERVED, ids=["FALSIFY-TCLI-002"])
def distill_from_the_command_line(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, steps: int
) -> dict[str, Any]:
    """``distill TEACHER OUT --student-preset tiny`` from a teacher of another width, vocabulary
    (640 rows), context (384) and RoPE base (50000), special ids 0/1/2: the student checkpoint's
    header is the preset's shape with the teacher's vocabulary, special ids, context and RoPE base,
    its tokenizer is the teacher's, its manifest records the run, the summary is the log's and the
    distillation's settings; a run stopped after its step-2 checkpoint and resumed writes the same
    final weights bit for bit; one step from that student (--student-init) with --nf4-teacher
    records and prints the NF4 teacher; six bad requests are refused before anything is written."""

    run = cli_runner()
    root = fresh_dir(tmp_path, "tcli-distill-")
    teacher_model = tiny_model_factory(
        0,
        hidden_size=128,
        intermediate_size=352,
        vocab_size=640,
        max_position_embeddings=384,
        rope_theta=50000.0,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
    )
    teacher = save_checkpoint(root / "teacher.safetensors", teacher_model, engine_tokenizer, make_manifest(step=0))
    settings = ["--steps", steps, "--batch-size", 2, "--seq-len", 32, "--lr", 0.01, "--warmup", 1]
    settings += ["--eval-every", 0, "--save-every", 2, "--seed", 3, "--temperature", 3.0, "--alpha", 0.25]
    result = run("distill", teacher, root / "run", "--student-preset", "tiny", *settings)
    out: dict[str, Any] = dict.fromkeys(DISTILL_OBSERVED, 0)
    summary = _summary(result.stdout)
    if result.exit_code != 0 or not summary:
        return out | {"exit_code": result.exit_code or -1}

    folder = root / "run"
    student = folder / f"step-{steps:06d}" / "model.safetensors"
    teacher_header, header = _header(teacher), _header(student)
    shape = preset("tiny").to_dict()
    carried = ("vocab_size", "bos_token_id", "eos_token_id", "pad_token_id", "max_position_embeddings", "rope_theta")
    teacher_arch = _architecture(teacher_header)
    want_arch = {k: (teacher_arch[k] if k in carried else v) for k, v in shape.items()}
    got_arch = _architecture(header)
    out["header_fields_compared"] = len(want_arch)
    out["header_mismatches"] = sum(got_arch.get(k) != v for k, v in want_arch.items())
    out["header_mismatches"] += len(set(got_arch) - set(want_arch))
    out["tokenizer_matching"] = int(header.get("tokenizer") == teacher_header.get("tokenizer"))
    manifest = json.loads(header["manifest"])
    want_manifest = {
        "kind": "distill",
        "teacher": str(teacher),
        "teacher_nf4": False,
        "temperature": 3.0,
        "alpha": 0.25,
        "step": steps,
        "seed": 3,
    }
    out["manifest_mismatches"] = sum(manifest.get(k, "<missing>") != v for k, v in want_manifest.items())
    out["manifest_mismatches"] += not isinstance(manifest.get("data_digest"), str)
    out["summary_mismatches"] = _summary_mismatches(
        {k: summary.get(k) for k in ("out_dir", "checkpoint", "steps_run", "final_loss", "val_losses")}, folder, steps
    )
    distilled = {"teacher": str(teacher), "teacher_nf4": False, "temperature": 3.0, "alpha": 0.25}
    out["summary_mismatches"] += sum(summary.get(k, "<missing>") != v for k, v in distilled.items())
    log = _log(folder)
    step0 = [r["loss"] for r in log if r["kind"] == "step0"]
    started = (summary.get("start_step"), summary.get("step0_loss"))
    out["summary_mismatches"] += started != (0, step0[0] if step0 else -1)

    # Stopped after the step-2 checkpoint (step 3 never written, latest.json at 2), then resumed.
    resumed = root / "resumed"
    _stopped_after_step_2(folder, resumed, steps)
    again = run("distill", teacher, resumed, "--student-preset", "tiny", *settings, "--resume")
    if again.exit_code == 0:
        mine = _tensors(resumed / f"step-{steps:06d}" / "model.safetensors")
        theirs = _tensors(student)
        out["resumed_tensors_compared"] = len(theirs)
        out["resumed_tensors_differing"] = _tensors_differing(mine, theirs)
    else:
        out["resumed_tensors_differing"] = -1

    # One step from the distilled student, the teacher kept in NF4: the flag reaches the run, its
    # manifest and the summary.
    one_step = ["--steps", 1, *settings[2:]]  # settings opens with --steps
    nf4_run = run("distill", teacher, root / "nf4", "--student-init", student, *one_step, "--nf4-teacher")
    nf4_summary = _summary(nf4_run.stdout) if nf4_run.exit_code == 0 else {}
    nf4_manifest = (
        json.loads(_header(root / "nf4" / "step-000001" / "model.safetensors")["manifest"]) if nf4_summary else {}
    )
    out["nf4_student_init_run"] = [
        nf4_run.exit_code,
        nf4_summary.get("teacher_nf4", "<missing>"),
        nf4_manifest.get("teacher_nf4", "<missing>"),
        nf4_manifest.get("kind", "<missing>"),
    ]

    bad = root / "bad"
    requests: list[tuple[tuple[Any, ...], tuple[str, ...]]] = [
        ((teacher, bad, "--student-preset", "tiny", "--student-init", teacher), ("exactly one",)),
        ((teacher, bad), ("exactly one",)),
        ((teacher, bad, "--student-preset", "huge"), ("huge",)),
        ((root / "no-teacher.safetensors", bad, "--student-preset", "tiny"), ("no-teacher.safetensors",)),
        ((teacher, bad, "--student-preset", "tiny", "--temperature", 0), ("temperature",)),
        ((teacher, bad, "--student-preset", "tiny", "--alpha", 1.5), ("alpha",)),
    ]
    out["refusals"] = len(requests)
    for args, names in requests:
        out["refused_cleanly"] += refused_cleanly(run("distill", *args, "--steps", 1), names, (bad,))
    return out | {"exit_code": 0}


RESUME_OBSERVED = ("methods", "resumed", "tensors_compared", "tensors_differing", "summary_mismatches")


@checker(observes=RESUME_OBSERVED, ids=["FALSIFY-TCLI-003"])
def finetune_resumes_where_it_stopped(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, steps: int
) -> dict[str, Any]:
    """``finetune BASE OUT --data PAIRS`` with full weights and with LoRA on a tied base, each run
    straight through and run again stopped after its step-2 checkpoint then ``--resume``d: the
    final weights are the same bit for bit, and the resumed summary says it started at step 2,
    ran the remaining steps and ended on the same loss."""
    run = cli_runner()
    root = fresh_dir(tmp_path, "tcli-resume-")
    model = tiny_model_factory(0, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    base = save_checkpoint(root / "base.safetensors", model, engine_tokenizer, make_manifest(step=0))
    pairs = _pairs(root / "pairs.jsonl", [(f"Count to {i}.", " ".join(map(str, range(i)))) for i in range(2, 18)])
    out: dict[str, Any] = dict.fromkeys(RESUME_OBSERVED, 0)
    last = f"step-{steps:06d}"
    for method, weights in (("full", "model.safetensors"), ("lora", "adapter/adapter_model.safetensors")):
        settings = ["--method", method, "--data", pairs, "--steps", steps, "--save-every", 2, "--eval-every", 0]
        settings += ["--batch-size", 2, "--seq-len", 32, "--lr", 0.01, "--warmup", 1, "--seed", 5]
        straight, stopped = root / f"{method}-straight", root / f"{method}-resumed"
        first = run("finetune", base, straight, *settings)
        out["methods"] += 1
        if first.exit_code != 0:
            out["summary_mismatches"] += 1
            continue
        _stopped_after_step_2(straight, stopped, steps)
        again = run("finetune", base, stopped, *settings, "--resume")
        if again.exit_code != 0:
            continue
        out["resumed"] += 1
        mine, theirs = _tensors(stopped / last / weights), _tensors(straight / last / weights)
        out["tensors_compared"] += len(theirs)
        out["tensors_differing"] += _tensors_differing(mine, theirs)
        a, b = _summary(first.stdout), _summary(again.stdout)
        want = {"start_step": 2, "steps_run": steps - 2, "step0_loss": None, "final_loss": a.get("final_loss")}
        want |= {"checkpoint": str(stopped / last), "method": method}
        out["summary_mismatches"] += sum(b.get(k, "<missing>") != v for k, v in want.items())
    return out
