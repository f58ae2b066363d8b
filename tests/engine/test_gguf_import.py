from __future__ import annotations

import hashlib
import json
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from engine.errors import ExportError
from engine.faults import FAULTS
from engine.gguf_export import export_gguf
from engine.gguf_import import gguf_tokenizer, import_gguf
from engine.gguf_layout import read_gguf
from engine.pretokenizers import PRE_TOKENIZERS, llama_cpp_name
from engine.tokenizer import EngineTokenizer
from tests.engine.chat_helpers import CHATML, chat_tokenizer
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model, tiny_tokenizer

CORPUS = (
    "def main():\n    return x  +  1\n\n\n",
    "The year 2024 had 366 days; 3.14159 is pi.",
    "naïve café — 日本語 テキスト 🙂",
    "  leading spaces\tand\ttabs   trailing   ",
    "<|im_start|>user\nhi<|im_end|>\n",
    "x=12345678901234567890",
)


def _with_pre(tok: EngineTokenizer, name: str) -> EngineTokenizer:
    backend = Tokenizer.from_str(tok.backend.to_str())
    backend.pre_tokenizer = PRE_TOKENIZERS[name]()
    return tok.with_backend(backend)


@pytest.mark.parametrize(
    ("config", "dtype", "bound"),
    [
        (tiny_config(), "f32", 0.0),
        (qwen2_tiny_config(), "f32", 0.0),
        (tiny_config(tie_word_embeddings=True), "f16", 2e-3),
        (tiny_config(), "q8_0", 5e-2),
    ],
    ids=["llama-f32", "qwen2-f32", "tied-f16", "q8_0"],
)
def test_export_then_import_gives_the_same_model(tmp_path: Path, config, dtype: str, bound: float) -> None:  # type: ignore[no-untyped-def]
    tok = tiny_tokenizer()
    model = tiny_model(config, std=0.05)
    path = export_gguf(model, tok, tmp_path / "m.gguf", dtype)  # type: ignore[arg-type]
    loaded = import_gguf(path)
    assert loaded.config.replace(bos_token_id=None, eos_token_id=None, pad_token_id=None) == config.replace(
        max_position_embeddings=config.max_position_embeddings
    )
    ids = torch.tensor([tok.encode("def add(a, b):\n    return a + b", add_bos=True)])
    with torch.no_grad():
        diff = (loaded.model(ids).logits - model(ids).logits).abs().max().item()
    assert diff <= bound
    assert loaded.manifest["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.manifest["source_format"] == "gguf"
    assert sum(loaded.manifest["source_tensor_types"].values()) == len(read_gguf(path).tensors)


@pytest.mark.parametrize("pre", ["gpt-2", "smollm", "qwen2", "llama-bpe"])
def test_tokenizer_round_trips_with_its_pre_tokenizer(tmp_path: Path, pre: str) -> None:
    tok = _with_pre(chat_tokenizer(), pre)
    model = tiny_model(tiny_config(vocab_size=tok.vocab_size))
    path = export_gguf(model, tok, tmp_path / "m.gguf")
    fields = read_gguf(path).fields
    assert fields["tokenizer.ggml.pre"] == pre
    back = import_gguf(path).tokenizer
    for text in CORPUS:
        assert back.encode(text) == tok.encode(text), text
        assert back.decode(back.encode(text)) == text
    assert back.chat_template == CHATML and back.add_bos_token is False
    assert back.apply_chat_template([{"role": "user", "content": "hi"}]) == tok.apply_chat_template(
        [{"role": "user", "content": "hi"}]
    )


def test_pre_tokenizers_are_told_apart() -> None:
    tok = tiny_tokenizer()
    assert llama_cpp_name(tok.backend) == "gpt-2"
    for name in ("smollm", "qwen2", "llama-bpe"):
        assert llama_cpp_name(_with_pre(tok, name).backend) == name
    # the rules really cut differently, so a wrong name would change ids
    texts = {name: _with_pre(tok, name).encode("x  +  1 2024") for name in ("gpt-2", "smollm", "qwen2")}
    assert len({tuple(v) for v in texts.values()}) > 1


def test_export_refuses_a_pre_tokenizer_llama_cpp_lacks(tmp_path: Path) -> None:
    from tokenizers import pre_tokenizers

    tok = tiny_tokenizer()
    backend = Tokenizer.from_str(tok.backend.to_str())
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    odd = EngineTokenizer(backend)
    with pytest.raises(ExportError, match=r"no llama\.cpp equivalent"):
        export_gguf(tiny_model(), odd, tmp_path / "m.gguf")


def test_export_writes_the_tokenizers_truth(tmp_path: Path) -> None:
    tok = chat_tokenizer(add_bos_token=True)
    config = tiny_config(vocab_size=tok.vocab_size, eos_token_id=(tok.eos_id, tok.backend.token_to_id("<|im_start|>")))
    path = export_gguf(tiny_model(config), tok, tmp_path / "m.gguf")
    f = read_gguf(path).fields
    assert f["tokenizer.ggml.add_bos_token"] is True
    assert f["tokenizer.chat_template"] == CHATML
    assert f["tokenizer.ggml.eos_token_id"] == tok.eos_id
    assert f["tokenizer.ggml.eot_token_id"] == config.eos_ids[1]
    control = int(gguf.TokenType.CONTROL)
    start = tok.backend.token_to_id("<|im_start|>")
    assert f["tokenizer.ggml.token_type"][start] == control
    back = import_gguf(path)
    assert back.config.eos_ids == config.eos_ids and back.tokenizer.add_bos_token is True
    with FAULTS.enabled("gguf_add_bos_dropped"):
        assert (
            read_gguf(export_gguf(tiny_model(config), tok, tmp_path / "f.gguf")).fields["tokenizer.ggml.add_bos_token"]
            is False
        )


def test_fault_pretokenizer_ignored_changes_ids(tmp_path: Path) -> None:
    tok = _with_pre(tiny_tokenizer(), "smollm")
    path = export_gguf(tiny_model(), tok, tmp_path / "m.gguf")
    fields = read_gguf(path).fields
    assert gguf_tokenizer(fields).encode("x  +  1") == tok.encode("x  +  1")
    with FAULTS.enabled("gguf_import_pretokenizer_ignored"):
        assert gguf_tokenizer(fields).encode("x  +  1") != tok.encode("x  +  1")


def _rewrite(src: Path, dst: Path, drop: set[str] = frozenset(), set_: dict | None = None) -> Path:  # type: ignore[assignment,type-arg]
    """A copy of a GGUF with metadata keys dropped or replaced (strings / ints only)."""
    contents = read_gguf(src)
    reader = gguf.GGUFReader(str(src))
    writer = gguf.GGUFWriter(str(dst), contents.arch)
    for key, value in contents.fields.items():
        if key in drop or key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = (set_ or {}).get(key, value)
        vtype = reader.fields[key].types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, value)
        else:
            writer.add_key_value(key, value, vtype)
    for t in reader.tensors:
        shape = list(reversed([int(d) for d in t.shape]))
        writer.add_tensor(t.name, np.array(t.data), raw_shape=shape, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dst


@pytest.fixture(scope="module")
def small_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_gguf(tiny_model(), tiny_tokenizer(), tmp_path_factory.mktemp("g") / "m.gguf")


@pytest.mark.parametrize(
    ("drop", "set_", "fragment"),
    [
        ({"llama.block_count"}, None, "lacks `llama.block_count`"),
        (set(), {"tokenizer.ggml.pre": "mystery"}, "pre-tokenizer `mystery` is not supported"),
        (set(), {"tokenizer.ggml.model": "llama"}, "tokenizer model `llama` is not supported"),
        (set(), {"tokenizer.ggml.eos_token_id": 10**6}, "not a token id"),
    ],
)
def test_malformed_metadata_is_named(small_gguf: Path, tmp_path: Path, drop: set[str], set_, fragment: str) -> None:  # type: ignore[no-untyped-def]
    bad = _rewrite(small_gguf, tmp_path / "bad.gguf", drop, set_)
    with pytest.raises(ExportError, match=fragment):
        import_gguf(bad)


def test_rope_scaling_is_refused_by_its_type(small_gguf: Path, tmp_path: Path) -> None:
    from falsifiers.engine_files.gguf_reading import rewrite_gguf

    yarn = {"llama.rope.scaling.type": ("yarn", gguf.GGUFValueType.STRING)}
    bad = rewrite_gguf(small_gguf, tmp_path / "yarn.gguf", typed=yarn)
    with pytest.raises(ExportError, match="rope scaling `yarn`"):
        import_gguf(bad)


@pytest.mark.parametrize(("config", "context"), [(tiny_config(), 2048), (qwen2_tiny_config(), 32768)])
def test_a_file_without_context_length_gets_the_familys_default(tmp_path: Path, config, context: int) -> None:  # type: ignore[no-untyped-def]
    path = export_gguf(tiny_model(config), tiny_tokenizer(), tmp_path / "m.gguf")
    bare = _rewrite(path, tmp_path / "bare.gguf", {f"{config.architecture}.context_length"})
    assert import_gguf(bare).config.max_position_embeddings == context
    with FAULTS.enabled("gguf_import_context_default_2048"):
        assert import_gguf(bare).config.max_position_embeddings == 2048


def test_a_short_token_type_list_is_refused(small_gguf: Path, tmp_path: Path) -> None:
    types = read_gguf(small_gguf).fields["tokenizer.ggml.token_type"]
    bad = _rewrite(small_gguf, tmp_path / "short.gguf", set_={"tokenizer.ggml.token_type": types[:-1]})
    with pytest.raises(ExportError, match=f"{len(types) - 1} entries for {len(types)} tokens"):
        import_gguf(bad)
    with FAULTS.enabled("gguf_token_type_length_padded"):
        assert import_gguf(bad).tokenizer.vocab_size == len(types)


def test_not_a_gguf_and_missing_file(tmp_path: Path) -> None:
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"not gguf at all")
    with pytest.raises(ExportError, match="not a readable GGUF"):
        import_gguf(junk)
    with pytest.raises(ExportError, match="no such GGUF file"):
        import_gguf(tmp_path / "absent.gguf")


def test_cli_import_of_a_gguf(small_gguf: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "c.safetensors"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "import", str(small_gguf), str(out), "--dtype", "bf16"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["source_sha256"] == hashlib.sha256(small_gguf.read_bytes()).hexdigest()
    from engine.checkpoint import load_checkpoint

    loaded = load_checkpoint(out)
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    assert loaded.manifest["source_format"] == "gguf" and loaded.manifest["kind"] == "import"
    refused = subprocess.run(
        [sys.executable, "-m", "engine", "import", str(small_gguf), str(out), "--dtype", "q4_0"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert refused.returncode == 2  # the choice is not offered at all


def test_a_package_source_names_the_gguf_it_ships(monkeypatch: pytest.MonkeyPatch, small_gguf: Path) -> None:
    import importlib.metadata

    from engine.gguf_import import gguf_in_distribution

    class Dist:
        def __init__(self, files: list[Path]) -> None:
            self.files = files

        def locate_file(self, f: Path) -> Path:
            return small_gguf.parent / f.name

    dists = {"one": Dist([Path("pkg/__init__.py"), Path("pkg/m.gguf")]), "none": Dist([Path("pkg/__init__.py")])}

    def distribution(name: str) -> Dist:
        if name not in dists:
            raise importlib.metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    assert gguf_in_distribution("one") == small_gguf
    with pytest.raises(ExportError, match=r"exactly one \.gguf file; it ships none"):
        gguf_in_distribution("none")
    with pytest.raises(ExportError, match="not installed"):
        gguf_in_distribution("absent")
