from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import engine.cli_core  # noqa: F401  (registers the commands)
from engine.app import app
from engine.checkpoint import make_manifest, save_checkpoint
from engine.gguf_layout import read_gguf
from engine.hf_interop import import_hf
from tests.engine.core_helpers import tiny_model, tiny_tokenizer

runner = CliRunner()


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "m.safetensors"
    return save_checkpoint(path, tiny_model(std=0.3), tiny_tokenizer(), make_manifest(step=5, seed=11))


def test_inspect_json(ckpt: Path) -> None:
    result = runner.invoke(app, ["inspect", str(ckpt), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["architecture"]["hidden_size"] == 64
    assert data["architecture"]["architecture"] == "llama"
    assert data["parameters"] == tiny_model().num_parameters()
    assert data["tokenizer"]["vocab_size"] == 512
    assert data["tokenizer"]["special_tokens"]["eos"] == {"token": "<|eos|>", "id": 1}
    assert data["manifest"]["step"] == 5 and data["manifest"]["seed"] == 11
    assert data["dtype"] == "F32"


def test_inspect_tables(ckpt: Path) -> None:
    result = runner.invoke(app, ["inspect", str(ckpt)])
    assert result.exit_code == 0, result.output
    assert "num_key_value_heads" in result.stdout
    assert "512 tokens" in result.stdout
    assert '"step": 5' in result.stdout


def test_generate_greedy_is_deterministic_and_sized(ckpt: Path) -> None:
    args = ["generate", str(ckpt), "-p", "def add(a, b):", "-p", "import", "-n", "6", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    rows = json.loads(first.stdout)
    assert [r["prompt"] for r in rows] == ["def add(a, b):", "import"]
    for row in rows:
        assert row["prompt_ids"][0] == 0  # BOS
        assert len(row["new_ids"]) == 6 or row["stopped_on_eos"]
    assert json.loads(runner.invoke(app, args).stdout) == rows


def test_generate_plain_text_echoes_prompt(ckpt: Path) -> None:
    result = runner.invoke(app, ["generate", str(ckpt), "--prompt", "hello", "-n", "3"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("hello")


def test_generate_sampling_seeded(ckpt: Path) -> None:
    args = ["generate", str(ckpt), "-p", "x", "-n", "12", "--temperature", "1.0", "--json", "--no-bos"]
    a = json.loads(runner.invoke(app, [*args, "--seed", "1"]).stdout)
    b = json.loads(runner.invoke(app, [*args, "--seed", "1"]).stdout)
    c = json.loads(runner.invoke(app, [*args, "--seed", "2"]).stdout)
    assert a == b and a != c
    assert a[0]["prompt_ids"][0] != 0


def test_export_hf_and_gguf(ckpt: Path, tmp_path: Path) -> None:
    hf = runner.invoke(app, ["export", str(ckpt), "--format", "hf", "-o", str(tmp_path / "hf")])
    assert hf.exit_code == 0, hf.output
    assert import_hf(tmp_path / "hf").config.hidden_size == 64
    gg = runner.invoke(app, ["export", str(ckpt), "--format", "gguf", "-o", str(tmp_path / "m.gguf"), "--dtype", "f16"])
    assert gg.exit_code == 0, gg.output
    assert read_gguf(tmp_path / "m.gguf").fields["general.file_type"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inspect", "{missing}"], "no such checkpoint file"),
        (["inspect", "{garbage}"], "not a safetensors file|truncated|implausible"),
        (["generate", "{ckpt}", "-p", "x", "-n", "1000"], "exceeds the context window of 256"),
        (["generate", "{ckpt}", "-p", "x", "--temperature", "1", "--top-p", "2"], r"top_p must be in \(0, 1\]"),
        (["generate", "{ckpt}", "-p", "x", "--device", "cuda:7"], "torch sees no CUDA device"),
        (["generate", "{ckpt}", "-p", "x", "--device", "tpu"], "not a device name|not supported by the engine"),
        (["export", "{ckpt}", "--format", "gguf", "-o", "{dir}"], "is a directory"),
        (["export", "{missing}", "--format", "hf", "-o", "{dir}/out"], "no such checkpoint file"),
    ],
)
def test_bad_input_exits_2_with_a_message(ckpt: Path, tmp_path: Path, args: list[str], message: str) -> None:
    if "cuda:7" in args and torch.cuda.is_available():
        pytest.skip("a machine with CUDA cannot show the no-CUDA message")
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_text("this is not a checkpoint")
    values = {"missing": str(tmp_path / "nope.safetensors"), "garbage": str(garbage), "ckpt": str(ckpt)}
    values["dir"] = str(tmp_path)
    result = runner.invoke(app, [a.format(**values) for a in args])
    assert result.exit_code == 2
    assert "error:" in result.stderr
    assert "Traceback" not in result.output
    assert re.search(message, result.stderr), result.stderr


def test_unknown_format_is_a_usage_error(ckpt: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", str(ckpt), "--format", "onnx", "-o", str(tmp_path / "x")])
    assert result.exit_code == 2


def test_python_dash_m_engine(ckpt: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "inspect", str(ckpt), "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tensors"] == 21


def test_help_and_bad_arguments_import_no_torch_peft_or_bitsandbytes() -> None:
    """Start-up stays well under a second because nothing heavy is imported before a command runs."""
    probe = (
        "import sys\n"
        "from engine.__main__ import main\n"
        "sys.argv = ['engine', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('torch', 'peft', 'bitsandbytes', 'transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_an_error_prints_a_bracketed_path_as_it_is(tmp_path: Path) -> None:
    from engine.faults import FAULTS

    missing = tmp_path / "[v1]" / "model[0].safetensors"
    result = CliRunner().invoke(app, ["inspect", str(missing)])
    assert result.exit_code == 2 and str(missing) in " ".join(result.stderr.split()).replace(" ", "")
    with FAULTS.enabled("cli_error_read_as_markup"):
        result = CliRunner().invoke(app, ["inspect", str(missing)])
    assert str(missing) not in result.stderr.replace("\n", "")
