from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli_train  # noqa: F401  (registers the commands)
from engine.app import app
from engine.faults import FAULTS

runner = CliRunner()
SMALL = ["--batch-size", "2", "--seq-len", "32", "--warmup", "1"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "pre"
    result = runner.invoke(
        app, ["pretrain", str(out), "--steps", "3", "--save-every", "3", "--eval-every", "0", *SMALL]
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["steps_run"] == 3 and summary["step0_loss"] > summary["final_loss"] - 1.0
    assert (out / "log.jsonl").is_file()
    return Path(summary["checkpoint"]) / "model.safetensors"


def test_pretrain_nan_stops_with_clear_error(tmp_path: Path) -> None:
    with FAULTS.enabled("nan_in_step"):
        result = runner.invoke(app, ["pretrain", str(tmp_path), "--steps", "4", "--save-every", "1", *SMALL])
    assert result.exit_code == 3
    assert "error: step 2: the loss is nan" in result.stderr
    assert "step-000002" in result.stderr and (tmp_path / "step-000002").is_dir()
    assert "Traceback" not in result.stderr


def test_pretrain_init_mismatch_lists_differences(tmp_path: Path, pretrained: Path) -> None:
    result = runner.invoke(
        app, ["pretrain", str(tmp_path), "--init", str(pretrained), "--preset", "small", "--steps", "1", *SMALL]
    )
    assert result.exit_code == 2
    assert "vocab_size: 512 != 2048" in result.stderr and "hidden_size: 64 != 256" in result.stderr


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_finetune(tmp_path: Path, pretrained: Path, method: str) -> None:
    result = runner.invoke(
        app,
        [
            "finetune",
            str(pretrained),
            str(tmp_path),
            "--method",
            method,
            "--steps",
            "2",
            "--rank",
            "4",
            "--targets",
            "q_proj,v_proj,up_proj",
            *SMALL,
        ],
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["method"] == method
    assert (Path(summary["checkpoint"]) / "adapter" / "adapter_model.safetensors").is_file()


def test_finetune_bad_target_is_refused(tmp_path: Path, pretrained: Path) -> None:
    result = runner.invoke(app, ["finetune", str(pretrained), str(tmp_path), "--targets", "qkv", "--steps", "1"])
    assert result.exit_code == 2 and "unknown LoRA target" in result.stderr


def test_distill_refusals_and_run(tmp_path: Path, pretrained: Path) -> None:
    same = runner.invoke(
        app,
        ["distill", str(pretrained), str(tmp_path / "a"), "--student-init", str(pretrained), "--steps", "1", *SMALL],
    )
    assert same.exit_code == 2 and "identical weights" in same.stderr
    both = runner.invoke(
        app,
        [
            "distill",
            str(pretrained),
            str(tmp_path / "b"),
            "--student-init",
            str(pretrained),
            "--student-preset",
            "tiny",
        ],
    )
    assert both.exit_code == 2 and "exactly one" in both.stderr
    ok = runner.invoke(
        app,
        [
            "distill",
            str(pretrained),
            str(tmp_path / "c"),
            "--student-preset",
            "tiny",
            "--nf4-teacher",
            "--steps",
            "2",
            *SMALL,
        ],
    )
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["steps_run"] == 2


def test_distill_student_preset_takes_the_teachers_vocabulary(tmp_path: Path) -> None:
    """A teacher with another vocabulary than the preset's (a real model's 49,152 tokens, here 700):
    the student gets the preset's shape and the teacher's vocabulary and special ids, since it is
    saved with the teacher's tokenizer."""
    import torch

    from engine.checkpoint import inspect_checkpoint, save_checkpoint
    from engine.config import preset
    from engine.model import build_model
    from engine.tokenizer import cached_tokenizer

    torch.manual_seed(0)
    tok = cached_tokenizer(700)
    teacher_config = preset("tiny", vocab_size=700, hidden_size=128, intermediate_size=256, rope_theta=50000.0)
    teacher = save_checkpoint(tmp_path / "teacher.safetensors", build_model(teacher_config), tok, {})
    result = runner.invoke(
        app, ["distill", str(teacher), str(tmp_path / "run"), "--student-preset", "tiny", "--steps", "2", *SMALL]
    )
    assert result.exit_code == 0, result.stderr
    student = inspect_checkpoint(Path(json.loads(result.stdout)["checkpoint"]) / "model.safetensors")[0]
    teacher_saved = inspect_checkpoint(teacher)[0]
    assert (student.vocab_size, student.hidden_size, student.num_hidden_layers) == (700, 64, 2)
    assert (student.bos_token_id, student.eos_ids, student.pad_token_id) == (
        teacher_saved.bos_token_id,
        teacher_saved.eos_ids,
        teacher_saved.pad_token_id,
    )
    assert student.rope_theta == 50000.0


def test_bench(tmp_path: Path) -> None:
    out = tmp_path / "bricks.json"
    result = runner.invoke(
        app,
        [
            "bench",
            "--brick",
            "loss",
            "--brick",
            "optimizer",
            "--reps",
            "2",
            "--warmup",
            "1",
            "--seq-len",
            "16",
            "--min-rep-ms",
            "5",
            "--threads",
            "1",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "loss" in result.stdout and "median ms" in result.stdout
    rows = json.loads(out.read_text())
    assert [r["name"] for r in rows] == ["loss", "optimizer"]
    # sub-millisecond bricks are batched to last the 5 ms asked for
    assert all(r["calls_per_rep"] > 1 for r in rows)
    bad = runner.invoke(app, ["bench", "--brick", "warp"])
    assert bad.exit_code == 2 and "unknown brick" in bad.stderr
