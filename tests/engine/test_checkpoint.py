from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import engine.checkpoint as ckpt_mod
from engine.checkpoint import (
    CheckpointError,
    load_checkpoint,
    make_manifest,
    read_header,
    save_checkpoint,
)
from engine.config import ARCHITECTURE_KEYS
from engine.faults import FAULTS
from engine.model import DecoderLM
from engine.tokenizer import EngineTokenizer
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model, tiny_tokenizer


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return tiny_tokenizer()


@pytest.fixture
def model() -> DecoderLM:
    return tiny_model()


@pytest.fixture
def saved(tmp_path: Path, model: DecoderLM, tok: EngineTokenizer) -> Path:
    return save_checkpoint(tmp_path / "m.safetensors", model, tok, make_manifest(step=7, seed=3, data_digest="abc"))


def _rewrite(src: Path, dst: Path, *, meta_edit=None, tensor_edit=None) -> Path:  # type: ignore[no-untyped-def]
    """Re-save a checkpoint with its metadata or tensors altered, as a faulty writer would."""
    with safe_open(str(src), framework="pt") as fh:
        meta = dict(fh.metadata())
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118
    if meta_edit:
        meta_edit(meta)
    if tensor_edit:
        tensor_edit(tensors)
    save_file(tensors, str(dst), metadata=meta)
    return dst


def test_roundtrip_restores_weights_tokenizer_and_manifest(saved: Path, model: DecoderLM, tok: EngineTokenizer) -> None:
    loaded = load_checkpoint(saved)
    assert loaded.config == model.config.replace(bos_token_id=0, eos_token_id=1, pad_token_id=2)
    assert loaded.tokenizer == tok
    assert loaded.manifest["step"] == 7 and loaded.manifest["seed"] == 3 and loaded.manifest["data_digest"] == "abc"
    assert loaded.manifest["versions"]["torch"] == torch.__version__
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    ids = torch.tensor([[5, 6, 7, 8]])
    assert torch.equal(model(ids).logits, loaded.model(ids).logits)


def test_metadata_holds_each_architecture_key_as_json(saved: Path, model: DecoderLM) -> None:
    _, meta = read_header(saved)
    assert meta["format"] == "pv-engine-checkpoint" and meta["format_version"] == "1"
    for key in ARCHITECTURE_KEYS:
        assert json.loads(meta[key]) == getattr(model.config, key)
    assert json.loads(meta["tokenizer"])["special_tokens"]["eos"] == {"token": "<|eos|>", "id": 1}


def test_tied_embeddings_stored_once_and_retied(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(qwen2_tiny_config())
    path = save_checkpoint(tmp_path / "q.safetensors", model, tok)
    tensors, _ = read_header(path)
    assert "lm_head.weight" not in tensors and "model.embed_tokens.weight" in tensors
    assert "model.layers.0.self_attn.q_proj.bias" in tensors
    loaded = load_checkpoint(path).model
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(model(ids).logits, loaded(ids).logits)


def test_no_pickle_anywhere(
    tmp_path: Path, model: DecoderLM, tok: EngineTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("unpickling attempted")

    for target, name in [(torch, "load"), (pickle, "load"), (pickle, "loads"), (pickle, "Unpickler")]:
        monkeypatch.setattr(target, name, refuse)
    path = save_checkpoint(tmp_path / "p.safetensors", model, tok)
    assert load_checkpoint(path).config.hidden_size == model.config.hidden_size


def test_load_with_dtype(saved: Path) -> None:
    loaded = load_checkpoint(saved, dtype=torch.float16)
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float16}


def test_save_refuses_tokenizer_larger_than_model(tmp_path: Path, tok: EngineTokenizer) -> None:
    with pytest.raises(CheckpointError, match="512 tokens but the model's vocab_size is 300"):
        save_checkpoint(tmp_path / "x.safetensors", tiny_model(tiny_config(vocab_size=300)), tok)


# --- atomicity -------------------------------------------------------------------------------


def test_failed_save_keeps_previous_file(
    saved: Path, model: DecoderLM, tok: EngineTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = saved.read_bytes()

    def half_write(tensors: dict, path: Path, meta: dict) -> None:  # type: ignore[type-arg]
        path.write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt_mod, "_write_tensors", half_write)
    with torch.no_grad():
        model.lm_head.weight.add_(1.0)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(saved, model, tok, make_manifest(step=8))
    assert saved.read_bytes() == before
    assert load_checkpoint(saved).manifest["step"] == 7
    assert sorted(p.name for p in saved.parent.iterdir()) == [saved.name]  # no temp file left behind


def test_process_killed_mid_save_keeps_previous_file(saved: Path) -> None:
    before = saved.read_bytes()
    script = f"""
import os, torch
import engine.checkpoint as c
from tests.engine.core_helpers import tiny_model, tiny_tokenizer
real = c._write_tensors
def crash(tensors, path, meta):
    real(tensors, path, meta)
    os._exit(9)  # the process dies after writing the temp file, before the rename
c._write_tensors = crash
c.save_checkpoint({str(saved)!r}, tiny_model(seed=1), tiny_tokenizer(), c.make_manifest(step=99))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2], capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()
    assert saved.read_bytes() == before
    assert load_checkpoint(saved).manifest["step"] == 7


def test_save_replaces_existing_file(saved: Path, model: DecoderLM, tok: EngineTokenizer) -> None:
    save_checkpoint(saved, model, tok, make_manifest(step=8))
    assert load_checkpoint(saved).manifest["step"] == 8


# --- bad input -------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        load_checkpoint(tmp_path / "nope.safetensors")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a file"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("keep", [0, 5, 8, 100, -10])
def test_truncated_file(saved: Path, tmp_path: Path, keep: int) -> None:
    data = saved.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:keep])
    with pytest.raises(CheckpointError, match="truncated"):
        load_checkpoint(cut)


def test_torch_pickle_file_is_refused_without_unpickling(tmp_path: Path, model: DecoderLM) -> None:
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    with pytest.raises(CheckpointError, match="zip archive"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x80\x04\x95" + b"\x00" * 40, "Python pickle"),
        (b"GGUF" + b"\x00" * 40, "GGUF file"),
        (struct.pack("<Q", 10**12) + b"{}", "implausible"),
        (struct.pack("<Q", 4) + b"\xff\xfe\x00\x01", "header is not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (b"just some text, not a checkpoint at all", "implausible|truncated|not JSON"),
    ],
)
def test_wrong_file_types(tmp_path: Path, payload: bytes, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(payload)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_corrupt_tensor_entry(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": "x"}}).encode()
    path = tmp_path / "c.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(CheckpointError, match="corrupt header entry for tensor `w`"):
        load_checkpoint(path)


def test_plain_safetensors_without_format(tmp_path: Path) -> None:
    path = tmp_path / "plain.safetensors"
    save_file({"w": torch.zeros(2)}, str(path))
    with pytest.raises(CheckpointError, match="missing metadata key `format`"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop("hidden_size"), "missing metadata key `hidden_size`"),
        (lambda m: m.pop("rope_theta"), "missing metadata key `rope_theta`"),
        (lambda m: m.pop("manifest"), "missing metadata key `manifest`"),
        (lambda m: m.update(architecture='"gpt2"'), "unknown architecture `gpt2`"),
        (lambda m: m.update(format="other"), "metadata `format` is 'other'"),
        (lambda m: m.update(format_version="9"), "unsupported checkpoint format_version '9'"),
        (lambda m: m.pop("format_version"), "missing metadata key `format_version`"),
        (lambda m: m.update(eos_token_id="[2, 9999]"), "`eos_token_id` must be a token id below vocab_size or a list"),
        (lambda m: m.update(hidden_size="sixty"), "metadata key `hidden_size` is not valid JSON"),
        (lambda m: m.update(num_hidden_layers="2.5"), "`num_hidden_layers` must be a positive integer"),
        (lambda m: m.update(rms_norm_eps="-1"), "`rms_norm_eps` must be a positive number"),
        (lambda m: m.update(attention_bias='"yes"'), "`attention_bias` must be true or false"),
        (lambda m: m.update(num_key_value_heads="3"), "inconsistent architecture metadata: num_attention_heads 4"),
        (lambda m: m.update(eos_token_id="9999"), "`eos_token_id` must be a token id below vocab_size"),
        (lambda m: m.update(tokenizer="{"), "metadata key `tokenizer` is unusable"),
        (lambda m: m.update(manifest="[1]"), "`manifest` is not a JSON object"),
        (lambda m: m.update(manifest='{"step": 1}'), "manifest lacks `seed`"),
        (lambda m: m.update(vocab_size="300"), "tokenizer has 512 tokens but vocab_size is 300"),
    ],
)
def test_bad_metadata_is_named(saved: Path, tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    bad = _rewrite(saved, tmp_path / "bad.safetensors", meta_edit=edit)
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(")):
        load_checkpoint(bad)


def test_shape_mismatch_is_named(saved: Path, tmp_path: Path) -> None:
    name = "model.layers.1.mlp.up_proj.weight"
    bad = _rewrite(saved, tmp_path / "bad.safetensors", tensor_edit=lambda t: t.update({name: torch.zeros(64, 64)}))
    with pytest.raises(CheckpointError, match=rf"tensor `{name}` has shape \[64, 64\], expected \[176, 64\]"):
        load_checkpoint(bad)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.pop("model.norm.weight"), "missing tensor `model.norm.weight`"),
        (lambda t: t.update(extra=torch.zeros(1)), "unexpected tensor `extra`"),
        (lambda t: t.update({"model.norm.weight": torch.ones(64, dtype=torch.int64)}), "has dtype I64"),
        (lambda t: t.update({"model.norm.weight": torch.ones(64, dtype=torch.float16)}), "mix dtypes"),
        (lambda t: t["model.norm.weight"].__setitem__(0, float("nan")), "`model.norm.weight` holds NaN"),
    ],
)
def test_bad_tensors_are_named(saved: Path, tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    bad = _rewrite(saved, tmp_path / "bad.safetensors", tensor_edit=edit)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(bad)


def test_untied_head_in_tied_checkpoint_is_named(tmp_path: Path, tok: EngineTokenizer) -> None:
    path = save_checkpoint(tmp_path / "q.safetensors", tiny_model(qwen2_tiny_config()), tok)
    bad = _rewrite(path, tmp_path / "b.safetensors", tensor_edit=lambda t: t.update({"lm_head.weight": torch.zeros(1)}))
    with pytest.raises(CheckpointError, match=r"unexpected tensor `lm_head\.weight` \(tied embeddings"):
        load_checkpoint(bad)


def test_flipped_bytes_in_header(saved: Path, tmp_path: Path) -> None:
    data = bytearray(saved.read_bytes())
    data[9] ^= 0xFF
    bad = tmp_path / "flip.safetensors"
    bad.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        load_checkpoint(bad)


# --- faults ----------------------------------------------------------------------------------


def test_fault_checkpoint_without_tokenizer(tmp_path: Path, model: DecoderLM, tok: EngineTokenizer) -> None:
    with FAULTS.enabled("checkpoint_without_tokenizer"):
        path = save_checkpoint(tmp_path / "f.safetensors", model, tok)
    assert "tokenizer" not in read_header(path)[1]
    with pytest.raises(CheckpointError, match="missing metadata key `tokenizer`"):
        load_checkpoint(path)


def test_fault_checkpoint_drops_arch_metadata(tmp_path: Path, model: DecoderLM, tok: EngineTokenizer) -> None:
    with FAULTS.enabled("checkpoint_drops_arch_metadata"):
        path = save_checkpoint(tmp_path / "f.safetensors", model, tok)
    meta = read_header(path)[1]
    assert not set(ARCHITECTURE_KEYS) & set(meta)
    with pytest.raises(CheckpointError, match="missing metadata key `architecture`"):
        load_checkpoint(path)


def test_faults_off_by_default(saved: Path) -> None:
    assert load_checkpoint(saved).tokenizer is not None
    assert os.environ.get("PV_FAULTS", "") == ""
