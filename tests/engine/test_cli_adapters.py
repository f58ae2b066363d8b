"""Adapters end to end on the CLI: finetune → inspect → generate --adapter → merge → export → import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

# each module registers its commands on import: inspect and generate, import and merge, finetune
import engine.cli_convert
import engine.cli_core
import engine.cli_train  # noqa: F401
from engine.adapters import AdapterError, find_adapter, load_adapted
from engine.app import app
from engine.checkpoint import load_checkpoint

runner = CliRunner()
SMALL = ["--batch-size", "2", "--seq-len", "32", "--warmup", "1"]
# a learning rate high enough that three steps move the adapter's logits measurably
TRAIN = ["--steps", "3", "--lr", "1e-2", "--rank", "4", "--eval-every", "0", *SMALL]


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("adapters") / "pre"
    summary = json.loads(_ok(["pretrain", str(out), "--steps", "2", "--save-every", "2", "--eval-every", "0", *SMALL]))
    return Path(summary["checkpoint"]) / "model.safetensors"


@pytest.fixture(scope="module")
def lora_run(base: Path) -> Path:
    out = base.parent.parent.parent / "lora"
    _ok(["finetune", str(base), str(out), "--method", "lora", *TRAIN])
    return out


def _logits(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out = model(torch.tensor([ids]))
    return (out.logits if hasattr(out, "logits") else out)[0]


def test_inspect_reads_an_adapter_run(base: Path, lora_run: Path) -> None:
    info = json.loads(_ok(["inspect", str(lora_run), "--json"]))
    assert (info["kind"], info["method"], info["base"], info["step"], info["r"]) == ("adapter", "lora", str(base), 3, 4)
    assert info["target_modules"] == ["q_proj", "v_proj"] and info["parameters"] > 0
    step = lora_run / "step-000003"
    assert json.loads(_ok(["inspect", str(step), "--json"]))["sha256"] == info["sha256"]
    assert json.loads(_ok(["inspect", str(step / "adapter"), "--json"]))["path"] == info["path"]
    assert "lora_alpha" in _ok(["inspect", str(lora_run)])


def test_generate_with_an_adapter_is_generation_from_the_merged_checkpoint(
    base: Path, lora_run: Path, tmp_path: Path
) -> None:
    merged_ckpt = tmp_path / "merged.safetensors"
    runner.invoke(app, ["merge", str(base), str(lora_run), str(merged_ckpt)])
    assert merged_ckpt.is_file()
    loaded = load_checkpoint(merged_ckpt)
    assert loaded.manifest["kind"] == "merged" and loaded.manifest["adapter_sha256"] == find_adapter(lora_run).sha256

    adapted, base_loaded = load_adapted(base, find_adapter(lora_run))
    ids = base_loaded.tokenizer.encode("def add(a, b):", add_bos=True)
    with_adapter = _logits(adapted, ids)
    assert (with_adapter - _logits(load_checkpoint(base).model, ids)).abs().max() > 1e-3  # the adapter acts
    torch.testing.assert_close(_logits(loaded.model, ids), with_adapter, atol=2e-5, rtol=0)

    args = ["-p", "def add(a, b):", "-n", "8", "--json"]
    via_adapter = json.loads(_ok(["generate", str(base), "--adapter", str(lora_run), *args]))
    via_merged = json.loads(_ok(["generate", str(merged_ckpt), *args]))
    assert via_adapter[0]["new_ids"] == via_merged[0]["new_ids"]


def test_export_with_an_adapter_writes_the_merged_model_and_import_reads_it_back(
    base: Path, lora_run: Path, tmp_path: Path
) -> None:
    _ok(["export", str(base), "--adapter", str(lora_run), "-f", "hf", "-o", str(tmp_path / "hf")])
    summary = json.loads(_ok(["import", str(tmp_path / "hf"), str(tmp_path / "back.safetensors")]))
    assert summary["checkpoint"] == str(tmp_path / "back.safetensors") and len(summary["source_sha256"]) == 64
    back = load_checkpoint(tmp_path / "back.safetensors")
    assert back.manifest["kind"] == "import" and back.manifest["imported_from"] == str(tmp_path / "hf")
    adapted, loaded = load_adapted(base, find_adapter(lora_run))
    ids = loaded.tokenizer.encode("return a + b", add_bos=True)
    torch.testing.assert_close(_logits(back.model, ids), _logits(adapted, ids), atol=2e-5, rtol=0)
    _ok(["export", str(base), "--adapter", str(lora_run), "-f", "gguf", "-o", str(tmp_path / "m.gguf")])
    assert (tmp_path / "m.gguf").stat().st_size > 0


def test_a_qlora_adapter_runs_on_the_nf4_base_it_was_trained_on(base: Path, tmp_path: Path) -> None:
    pytest.importorskip("bitsandbytes")
    run = tmp_path / "qlora"
    _ok(["finetune", str(base), str(run), "--method", "qlora", *TRAIN])
    folder = find_adapter(run)
    assert folder.method == "qlora" and folder.nf4 is not None and folder.nf4.double_quant is True
    assert json.loads(_ok(["inspect", str(run), "--json"]))["nf4"] == {"blocksize": 64, "double_quant": True}
    out = json.loads(_ok(["generate", str(base), "--adapter", str(run), "-p", "def f():", "-n", "4", "--json"]))
    assert len(out[0]["new_ids"]) <= 4
    _ok(["merge", str(base), str(run), str(tmp_path / "merged.safetensors")])
    adapted, loaded = load_adapted(base, find_adapter(run))  # NF4 base, as trained
    ids = loaded.tokenizer.encode("def f():", add_bos=True)
    merged = load_checkpoint(tmp_path / "merged.safetensors").model
    # merged on the dequantized base exactly: W = dequant(W_nf4) + B·A·scale
    torch.testing.assert_close(_logits(merged, ids), _logits(adapted, ids), atol=1e-4, rtol=0)


def test_several_adapters_on_one_base_from_the_cli(base: Path, tmp_path: Path) -> None:
    rows = [{"prompt": f"say {w}", "response": f"return '{w}'"} for w in ("yes", "no", "maybe", "later")]
    for name in ("d1", "d2"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = json.loads(
        _ok(
            [
                "finetune",
                str(base),
                "--adapters",
                f"{tmp_path / 'd1.jsonl'}:{tmp_path / 'a'}",
                "--adapters",
                f"{tmp_path / 'd2.jsonl'}:{tmp_path / 'b'}",
                "--schedule",
                "synchronized",
                *TRAIN,
            ]
        )
    )
    assert summary["schedule"] == "synchronized" and set(summary["adapters"]) == {"a", "b"}
    for name in ("a", "b"):
        assert summary["adapters"][name]["steps_run"] == 3
        assert (tmp_path / name / "log.jsonl").is_file()
        folder = find_adapter(tmp_path / name)
        assert (folder.method, folder.base, folder.step) == ("lora", str(base), 3)
    _ok(["generate", str(base), "--adapter", str(tmp_path / "b"), "-p", "say yes", "-n", "2"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--adapters", "no-colon"], "expected DATA:OUT"),
        (["OUT", "--adapters", "d.jsonl:o"], "give no OUT argument"),
        (["--adapters", "d.jsonl:o", "--method", "full"], "use --method lora or qlora"),
        (["--adapters", "d.jsonl:x/o", "--adapters", "e.jsonl:y/o"], "two OUT folders share a name"),
        (["--adapters", "d.jsonl:o", "--schedule", "random"], "unknown schedule 'random'"),
        ([], "missing OUT"),
    ],
)
def test_adapter_cli_refusals(base: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["finetune", str(base), *args, "--steps", "1"])
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_a_folder_without_an_adapter_is_refused_by_name(base: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", str(base), "--adapter", str(tmp_path), "-p", "x"])
    assert result.exit_code == 2 and "no adapter here" in result.stderr
    full = base.parent  # a pretraining step folder holds a checkpoint, not an adapter
    with pytest.raises(AdapterError, match="a full fine-tune writes a checkpoint"):
        find_adapter(full)
    result = runner.invoke(app, ["import", str(tmp_path / "missing"), str(tmp_path / "x.safetensors")])
    assert result.exit_code == 2 and "not a directory" in result.stderr


@pytest.fixture(scope="module")
def other_base(base: Path) -> Path:
    """A base of the same shape with other weights (a different seed), as a user might mix up."""
    from engine.checkpoint import save_checkpoint

    loaded = load_checkpoint(base)
    with torch.no_grad():
        for p in loaded.model.parameters():
            p.add_(0.01)
    return save_checkpoint(base.parent / "other.safetensors", loaded.model, loaded.tokenizer)


def test_an_adapter_records_its_base_and_refuses_another(base: Path, lora_run: Path, other_base: Path) -> None:
    from engine.checkpoint import weights_digest

    info = json.loads(_ok(["inspect", str(lora_run), "--json"]))
    own, other = weights_digest(load_checkpoint(base).model), weights_digest(load_checkpoint(other_base).model)
    assert info["base_weights_sha256"] == own != other
    with pytest.raises(AdapterError) as exc:
        load_adapted(other_base, find_adapter(lora_run))
    assert own in str(exc.value) and other in str(exc.value) and "--allow-other-base" in str(exc.value)
    for args in (
        ["generate", str(other_base), "-p", "def f", "-n", "2", "--adapter", str(lora_run)],
        ["merge", str(other_base), str(lora_run), str(other_base.parent / "m.safetensors")],
        ["export", str(other_base), "-a", str(lora_run), "-f", "gguf", "-o", str(other_base.parent / "m.gguf")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and own in result.output, (args, result.output)
    load_adapted(base, find_adapter(lora_run))  # its own base is fine


def test_an_override_is_recorded_in_the_merged_manifest(base: Path, lora_run: Path, other_base: Path) -> None:
    from engine.checkpoint import weights_digest
    from engine.faults import FAULTS

    out = other_base.parent / "merged-anyway.safetensors"
    _ok(["merge", str(other_base), str(lora_run), str(out), "--allow-other-base"])
    manifest = load_checkpoint(out).manifest
    own, other = weights_digest(load_checkpoint(base).model), weights_digest(load_checkpoint(other_base).model)
    assert manifest["base_override"] == {"expected_base_weights_sha256": own, "base_weights_sha256": other}
    assert manifest["base_weights_sha256"] == other
    plain = base.parent / "merged-own.safetensors"
    _ok(["merge", str(base), str(lora_run), str(plain)])
    assert "base_override" not in load_checkpoint(plain).manifest
    with FAULTS.enabled("adapter_base_unchecked"):
        load_adapted(other_base, find_adapter(lora_run))  # the defect: accepted silently


def test_weights_digest_sees_dtype_and_values_not_the_manifest(base: Path, tmp_path: Path) -> None:
    from engine.checkpoint import save_checkpoint, weights_digest

    loaded = load_checkpoint(base)
    digest = weights_digest(loaded.model)
    again = save_checkpoint(tmp_path / "same.safetensors", loaded.model, loaded.tokenizer, {"note": "other manifest"})
    assert weights_digest(load_checkpoint(again).model) == digest
    assert weights_digest(loaded.model.half()) != digest


def test_merge_nf4_option_reaches_the_merge(base: Path, lora_run: Path, tmp_path: Path) -> None:
    from engine.faults import FAULTS

    def merged_weights(*flags: str) -> dict[str, torch.Tensor]:
        out = tmp_path / f"m{len(list(tmp_path.iterdir()))}.safetensors"
        _ok(["merge", str(base), str(lora_run), str(out), *flags])
        return load_checkpoint(out).model.state_dict()

    plain, nf4 = merged_weights(), merged_weights("--nf4")
    assert any(not torch.equal(plain[k], nf4[k]) for k in plain)
    with FAULTS.enabled("merge_nf4_option_ignored"):
        ignored = merged_weights("--nf4")
    assert all(torch.equal(plain[k], ignored[k]) for k in plain)
