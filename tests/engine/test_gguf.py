from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.checkpoint import save_checkpoint
from engine.errors import ExportError
from engine.faults import FAULTS
from engine.gguf_export import GgufEosWarning, export_checkpoint_gguf, export_gguf
from engine.gguf_layout import engine_state_from_gguf, gguf_tensor_name, permute_qk, read_gguf, unpermute_qk
from engine.model import rope_cos_sin
from engine.tokenizer import EngineTokenizer
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model, tiny_tokenizer


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """The Hugging Face convention's RoPE helper, (x1, x2) -> (-x2, x1): the reference the engine's
    folded-sine roll is compared with."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return tiny_tokenizer()


def _layer_names(arch: str, bias: bool) -> set[str]:
    names = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}
    out = {f"{n}.weight" for n in names}
    if bias:
        out |= {"attn_q.bias", "attn_k.bias", "attn_v.bias"}
    return out


@pytest.mark.parametrize(
    ("config", "arch", "tied"),
    [
        (tiny_config(vocab_size=600), "llama", False),
        (tiny_config(tie_word_embeddings=True), "llama", True),
        (qwen2_tiny_config(), "qwen2", True),
        (qwen2_tiny_config(tie_word_embeddings=False), "qwen2", False),
    ],
)
def test_layout_is_what_llama_cpp_expects(tmp_path: Path, tok: EngineTokenizer, config, arch: str, tied: bool) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(config)
    contents = read_gguf(export_gguf(model, tok, tmp_path / "m.gguf"))
    assert contents.arch == arch
    expected = {"token_embd.weight", "output_norm.weight"} | ({"output.weight"} if not tied else set())
    for i in range(config.num_hidden_layers):
        expected |= {f"blk.{i}.{n}" for n in _layer_names(arch, config.attention_bias)}
    assert set(contents.tensors) == expected
    f = contents.fields
    assert f[f"{arch}.context_length"] == config.max_position_embeddings
    assert f[f"{arch}.embedding_length"] == config.hidden_size
    assert f[f"{arch}.block_count"] == config.num_hidden_layers
    assert f[f"{arch}.feed_forward_length"] == config.intermediate_size
    assert f[f"{arch}.attention.head_count"] == config.num_attention_heads
    assert f[f"{arch}.attention.head_count_kv"] == config.num_key_value_heads
    assert f[f"{arch}.rope.freq_base"] == pytest.approx(config.rope_theta)
    assert f[f"{arch}.attention.layer_norm_rms_epsilon"] == pytest.approx(config.rms_norm_eps)
    assert contents.tensors["token_embd.weight"].shape == (config.vocab_size, config.hidden_size)


def test_tokenizer_metadata_padded_to_vocab_size(tmp_path: Path, tok: EngineTokenizer) -> None:
    contents = read_gguf(export_gguf(tiny_model(tiny_config(vocab_size=600)), tok, tmp_path / "m.gguf"))
    f = contents.fields
    assert f["tokenizer.ggml.model"] == "gpt2"
    assert f["tokenizer.ggml.pre"] == "gpt-2"
    tokens, types = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.token_type"]
    assert len(tokens) == len(types) == 600
    assert tokens[: tok.vocab_size] == tok.tokens()
    assert tokens[512:] == [f"[PAD{i}]" for i in range(512, 600)]
    assert types[:3] == [3, 3, 3]  # CONTROL
    assert set(types[3:512]) == {1}  # NORMAL
    assert set(types[512:]) == {5}  # UNUSED
    assert f["tokenizer.ggml.merges"] == tok.merges()
    assert (f["tokenizer.ggml.bos_token_id"], f["tokenizer.ggml.eos_token_id"]) == (0, 1)
    assert f["tokenizer.ggml.padding_token_id"] == 2


def test_fault_gguf_vocab_unpadded(tmp_path: Path, tok: EngineTokenizer) -> None:
    with FAULTS.enabled("gguf_vocab_unpadded"):
        contents = read_gguf(export_gguf(tiny_model(tiny_config(vocab_size=600)), tok, tmp_path / "m.gguf"))
    assert len(contents.fields["tokenizer.ggml.tokens"]) == 512
    assert contents.tensors["token_embd.weight"].shape[0] == 600


@pytest.mark.parametrize("config", [tiny_config(), qwen2_tiny_config()], ids=["llama", "qwen2"])
def test_tensors_read_back_equal(tmp_path: Path, tok: EngineTokenizer, config) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(config)
    contents = read_gguf(export_gguf(model, tok, tmp_path / "m.gguf"))
    state = engine_state_from_gguf(contents, config)
    reference = model.state_dict()
    for name, tensor in state.items():
        assert torch.equal(tensor, reference[name]), name
    # The llama layout really is permuted on disk (and qwen2's is not).
    q_disk = contents.tensors["blk.0.attn_q.weight"]
    q_model = reference["model.layers.0.self_attn.q_proj.weight"].numpy()
    assert np.array_equal(q_disk, q_model) == (config.architecture == "qwen2")


def test_f16_export_keeps_norms_f32(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model()
    contents = read_gguf(export_gguf(model, tok, tmp_path / "m.gguf", dtype="f16"))
    assert contents.tensors["blk.0.ffn_up.weight"].dtype == np.float16
    assert contents.tensors["blk.0.attn_norm.weight"].dtype == np.float32
    assert contents.fields["general.file_type"] == 1
    back = engine_state_from_gguf(contents, model.config)
    ref = model.state_dict()["model.layers.0.mlp.up_proj.weight"]
    assert (back["model.layers.0.mlp.up_proj.weight"] - ref).abs().max() < 1e-3


def test_permute_roundtrip() -> None:
    w = np.arange(8 * 16 * 3, dtype=np.float32).reshape(8 * 16, 3)
    assert np.array_equal(unpermute_qk(permute_qk(w, 8), 8), w)
    assert not np.array_equal(permute_qk(w, 8), w)


def _interleaved_rope(x: np.ndarray, pos: int, theta: float) -> np.ndarray:
    """llama.cpp's LLAMA_ROPE_TYPE_NORM: rotate adjacent pairs (2i, 2i+1) of one head."""
    d = x.shape[-1]
    out = x.copy()
    for i in range(d // 2):
        angle = pos * theta ** (-2 * i / d)
        c, s = np.cos(angle), np.sin(angle)
        out[..., 2 * i] = x[..., 2 * i] * c - x[..., 2 * i + 1] * s
        out[..., 2 * i + 1] = x[..., 2 * i] * s + x[..., 2 * i + 1] * c
    return out


def test_permutation_makes_interleaved_rope_match_half_rotation() -> None:
    """What llama.cpp computes from the permuted weights equals the engine's q, up to that permutation."""
    heads, head_dim, hidden, theta, pos = 4, 16, 64, 10000.0, 7
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(heads * head_dim, hidden, generator=gen)
    x = torch.randn(hidden, generator=gen)
    q = (w @ x).view(heads, head_dim)
    cos, sin = rope_cos_sin(torch.tensor([[pos]]), head_dim, theta, torch.float32)
    engine_q = (q * cos[0, 0, 0] + rotate_half(q) * sin[0, 0, 0]).reshape(-1).numpy()
    permuted_w = permute_qk(w.numpy(), heads)
    cpp_q = _interleaved_rope((permuted_w @ x.numpy()).reshape(heads, head_dim), pos, theta).reshape(-1)
    expected = permute_qk(engine_q[:, None], heads)[:, 0]
    np.testing.assert_allclose(cpp_q, expected, atol=1e-4)
    # Scores are sums over a head's dims, so the shared permutation cancels in q·k.
    np.testing.assert_allclose(
        cpp_q.reshape(heads, head_dim) @ cpp_q.reshape(heads, head_dim).T,
        engine_q.reshape(heads, head_dim) @ engine_q.reshape(heads, head_dim).T,
        rtol=1e-4,
        atol=1e-3,
    )


def test_tensor_names() -> None:
    assert gguf_tensor_name("model.embed_tokens.weight") == "token_embd.weight"
    assert gguf_tensor_name("model.layers.3.self_attn.o_proj.weight") == "blk.3.attn_output.weight"
    assert gguf_tensor_name("model.layers.0.self_attn.k_proj.bias") == "blk.0.attn_k.bias"
    assert gguf_tensor_name("lm_head.weight") == "output.weight"
    with pytest.raises(ExportError, match="no GGUF name"):
        gguf_tensor_name("model.layers.0.mystery.weight")


def test_export_from_checkpoint_is_atomic(tmp_path: Path, tok: EngineTokenizer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ckpt = save_checkpoint(tmp_path / "m.safetensors", tiny_model(), tok)
    out = export_checkpoint_gguf(ckpt, tmp_path / "m.gguf")
    before = out.read_bytes()

    def boom(self, *a, **k):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr("gguf.GGUFWriter.write_tensors_to_file", boom)
    with pytest.raises(OSError, match="disk full"):
        export_checkpoint_gguf(ckpt, out)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf", "m.safetensors"]


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_eos_ids_become_eos_eot_and_eom(tmp_path: Path, tok: EngineTokenizer, count: int) -> None:
    from engine.gguf_import import import_gguf

    ids = (tok.eos_id, 7, 9, 11)[:count]
    model = tiny_model(tiny_config(eos_token_id=ids if count > 1 else ids[0]))
    if count == 4:
        with pytest.warns(GgufEosWarning, match="11"):
            path = export_gguf(model, tok, tmp_path / "m.gguf")
    else:
        path = export_gguf(model, tok, tmp_path / "m.gguf")
    assert import_gguf(path).config.eos_ids == ids[:3]


def test_bad_targets(tmp_path: Path, tok: EngineTokenizer) -> None:
    with pytest.raises(ExportError, match="is a directory"):
        export_gguf(tiny_model(), tok, tmp_path)
    with pytest.raises(ExportError, match="dtype must be"):
        export_gguf(tiny_model(), tok, tmp_path / "x.gguf", dtype="q4")  # type: ignore[arg-type]
    (tmp_path / "bad.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(ExportError, match="not a readable GGUF file"):
        read_gguf(tmp_path / "bad.gguf")


# --- llama.cpp itself (the `interop` nox session installs llama-cpp-python; skipped elsewhere) ---


def _train_briefly(config, tok: EngineTokenizer, steps: int = 150) -> torch.nn.Module:  # type: ignore[no-untyped-def]
    """A few hundred optimizer steps on stdlib text, so greedy choices are not near-ties."""
    from engine.corpus import default_corpus_files, read_corpus

    text = "".join(read_corpus(default_corpus_files(max_bytes=200_000)))
    data = torch.tensor(tok.encode(text), dtype=torch.long)
    model = tiny_model(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - 65, (8,), generator=gen)
        batch = torch.stack([data[s : s + 64] for s in starts.tolist()])
        loss = model(batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("config", [tiny_config(), qwen2_tiny_config()], ids=["llama", "qwen2"])
def test_llama_cpp_greedy_tokens_match_engine(tmp_path: Path, tok: EngineTokenizer, config) -> None:  # type: ignore[no-untyped-def]
    if not os.environ.get("PV_INTEROP"):
        pytest.skip("llama.cpp interop runs in `nox -s interop` (PV_INTEROP=1)")
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by `nox -s interop`")
    from engine.generate import generate

    model = _train_briefly(config, tok)
    path = export_gguf(model, tok, tmp_path / "m.gguf")  # type: ignore[arg-type]
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=128, logits_all=True, verbose=False, n_threads=2, seed=0)
    text = "def __init__(self, name):\n    self."
    prompt = tok.encode(text)
    assert llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) == prompt

    n_new = 16
    llm.reset()
    llm.eval(prompt)
    with torch.no_grad():
        ours = model(torch.tensor([prompt])).logits[0].numpy()
    theirs = np.asarray(llm.scores[: len(prompt)])
    assert np.abs(ours - theirs).max() < 5e-3, np.abs(ours - theirs).max()
    cpp_tokens = []
    for _ in range(n_new):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        cpp_tokens.append(nxt)
        llm.eval([nxt])
    engine_tokens = generate(model, torch.tensor([prompt]), max_new_tokens=n_new, eos_token_id=[]).new_tokens[0]  # type: ignore[arg-type]
    assert cpp_tokens == engine_tokens


@pytest.mark.parametrize("dtype", ["q8_0", "q4_0"])
def test_llama_cpp_reads_a_quantized_export_as_the_engine_reads_it_back(
    tmp_path: Path, tok: EngineTokenizer, dtype: str
) -> None:
    if not os.environ.get("PV_INTEROP"):
        pytest.skip("llama.cpp interop runs in `nox -s interop` (PV_INTEROP=1)")
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by `nox -s interop`")
    from engine.checkpoint import model_from_state
    from engine.gguf_layout import engine_state_from_gguf, read_gguf

    model = _train_briefly(tiny_config(), tok)
    path = export_gguf(model, tok, tmp_path / "m.gguf", dtype)  # type: ignore[arg-type]
    rebuilt = model_from_state(model.config, engine_state_from_gguf(read_gguf(path), model.config)).eval()
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=128, logits_all=True, verbose=False, n_threads=2, seed=0)
    prompt = tok.encode("def __init__(self, name):\n    self.")
    llm.reset()
    llm.eval(prompt)
    with torch.no_grad():
        ours = rebuilt(torch.tensor([prompt])).logits[0].numpy()
    theirs = np.asarray(llm.scores[: len(prompt)])
    # llama.cpp also rounds activations in its quantized matmuls: close logits (0.025 for Q8_0 and
    # 0.031 for Q4_0 measured, on logits up to 7.5) and the same next token at every position
    assert np.abs(ours - theirs).max() < 0.1
    assert float((ours.argmax(-1) == theirs.argmax(-1)).mean()) == 1.0


def test_checkpoint_export_writes_the_type_asked(tmp_path: Path) -> None:
    import gguf

    from engine.checkpoint import make_manifest, save_checkpoint
    from engine.gguf_export import export_checkpoint_gguf

    ckpt = save_checkpoint(tmp_path / "m.safetensors", tiny_model(), tiny_tokenizer(), make_manifest(step=0))

    def file_type(path: Path) -> int:
        return int(gguf.GGUFReader(str(path)).fields["general.file_type"].contents())

    assert file_type(export_checkpoint_gguf(ckpt, tmp_path / "a.gguf", "q8_0")) == gguf.LlamaFileType.MOSTLY_Q8_0
    with FAULTS.enabled("checkpoint_gguf_export_ignores_dtype"):
        assert file_type(export_checkpoint_gguf(ckpt, tmp_path / "b.gguf", "q8_0")) == gguf.LlamaFileType.ALL_F32
