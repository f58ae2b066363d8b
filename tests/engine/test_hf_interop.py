from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.checkpoint import load_checkpoint, make_manifest, save_checkpoint
from engine.config import ModelConfig
from engine.errors import ExportError
from engine.faults import FAULTS
from engine.hf_interop import (
    HF_FILES,
    export_hf,
    from_hf_config,
    import_hf,
    to_hf_config,
)
from engine.model import DecoderLM
from engine.tokenizer import EngineTokenizer
from tests.engine.core_helpers import qwen2_tiny_config, tiny_config, tiny_model, tiny_tokenizer

transformers = pytest.importorskip("transformers")

CONFIGS = {
    "llama": tiny_config(),
    "llama-tied-theta": tiny_config(tie_word_embeddings=True, rope_theta=5000.0, rms_norm_eps=1e-5),
    "qwen2-bias": qwen2_tiny_config(),
    "qwen2-untied": qwen2_tiny_config(tie_word_embeddings=False, rope_theta=1e6),
}


@pytest.fixture(scope="module")
def tok() -> EngineTokenizer:
    return tiny_tokenizer()


def _hf_logits(folder: Path, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        return hf(input_ids=ids, attention_mask=mask).logits


@pytest.mark.parametrize("name", list(CONFIGS))
def test_transformers_loads_export_with_matching_logits(tmp_path: Path, tok: EngineTokenizer, name: str) -> None:
    config = CONFIGS[name]
    model = tiny_model(config, std=0.2)
    export_hf(model, tok, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(HF_FILES)
    hf_cfg = json.loads((tmp_path / "config.json").read_text())
    expected = "Qwen2ForCausalLM" if config.attention_bias else "LlamaForCausalLM"
    assert hf_cfg["architectures"] == [expected]
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    assert type(hf).__name__ == expected
    ids = torch.randint(0, 512, (2, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = model(ids).logits, hf(ids).logits
    assert (ours - theirs).abs().max().item() <= 1e-4
    assert ours.abs().max().item() > 1.0  # the comparison is not between near-zero tensors


def test_left_padded_logits_match_transformers(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(std=0.2)
    export_hf(model, tok, tmp_path)
    ids = torch.randint(3, 512, (2, 10), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0
    with torch.no_grad():
        ours = model(ids, attention_mask=mask).logits
    theirs = _hf_logits(tmp_path, ids, mask)
    # Padded positions are meaningless on both sides; the real ones must agree.
    assert (ours[0] - theirs[0]).abs().max().item() <= 1e-4
    assert (ours[1, 4:] - theirs[1, 4:]).abs().max().item() <= 1e-4


def test_transformers_tokenizer_matches_engine(tmp_path: Path, tok: EngineTokenizer) -> None:
    export_hf(tiny_model(), tok, tmp_path)
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    for text in ["def f(x):\n    return x * 2\n", "héllo wörld 🚀", "  spaces  "]:
        assert hf_tok(text)["input_ids"] == tok.encode_prompt(text)  # BOS first, as the engine starts a prompt
        assert hf_tok(text, add_special_tokens=False)["input_ids"] == tok.encode(text)
        assert hf_tok.decode(tok.encode(text)) == text
    assert (hf_tok.bos_token_id, hf_tok.eos_token_id, hf_tok.pad_token_id) == (0, 1, 2)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_import_roundtrip_is_exact(tmp_path: Path, tok: EngineTokenizer, name: str) -> None:
    model = tiny_model(CONFIGS[name], std=0.2)
    export_hf(model, tok, tmp_path)
    loaded = import_hf(tmp_path)
    assert loaded.tokenizer == tok
    assert loaded.config.replace(bos_token_id=None, eos_token_id=None, pad_token_id=None) == model.config
    ids = torch.randint(0, 512, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, model(ids).logits)
    if model.config.tie_word_embeddings:
        assert loaded.model.lm_head.weight is loaded.model.model.embed_tokens.weight


def test_qwen2_label_without_bias_exports_as_llama(tmp_path: Path, tok: EngineTokenizer) -> None:
    config = tiny_config(architecture="qwen2")
    export_hf(tiny_model(config), tok, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "llama"
    assert import_hf(tmp_path).config.architecture == "llama"


def test_export_from_checkpoint_and_fp16(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(std=0.2)
    ckpt = save_checkpoint(tmp_path / "m.safetensors", model, tok, make_manifest(step=1))
    loaded = load_checkpoint(ckpt)
    out = export_hf(loaded.model, loaded.tokenizer, tmp_path / "hf", dtype=torch.float16)
    weights = load_file(str(out / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float16}
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "float16"
    assert import_hf(out, dtype=torch.float32).model.lm_head.weight.dtype == torch.float32


def test_hf_config_dict_roundtrip() -> None:
    for config in CONFIGS.values():
        back = from_hf_config(to_hf_config(config))
        expected = config.replace(architecture="qwen2" if config.attention_bias else "llama")
        assert back == expected


@pytest.mark.parametrize(("model_type", "context"), [("llama", 2048), ("qwen2", 32768)])
def test_a_missing_context_length_is_the_family_default(model_type: str, context: int) -> None:
    hf = to_hf_config(CONFIGS["llama" if model_type == "llama" else "qwen2-bias"])
    del hf["max_position_embeddings"]
    assert from_hf_config(hf).max_position_embeddings == context


@pytest.mark.parametrize(("eos", "expected"), [([6], (6,)), ([6, 1], (6, 1)), (6, 6)])
def test_config_eos_ids_as_transformers_reads_them(eos: object, expected: object) -> None:
    hf = {**to_hf_config(CONFIGS["llama"]), "eos_token_id": eos}
    config = from_hf_config(hf)
    assert config.eos_token_id == expected  # a list of one id is kept as a list, not dropped
    assert to_hf_config(config)["eos_token_id"] == eos  # and written back as it was read


def test_reads_transformers_own_config(tmp_path: Path) -> None:
    hf = transformers.Qwen2Config(
        vocab_size=300,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=1,
        intermediate_size=64,
        rope_theta=12345.0,
    ).to_dict()
    config = from_hf_config(hf)
    assert (config.architecture, config.attention_bias, config.rope_theta, config.num_key_value_heads) == (
        "qwen2",
        True,
        12345.0,
        1,
    )


def test_fault_transposed_qk_breaks_logits(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(std=0.2)
    with FAULTS.enabled("hf_export_transposed_qk"):
        export_hf(model, tok, tmp_path)
    ids = torch.randint(0, 512, (1, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        diff = (model(ids).logits - _hf_logits(tmp_path, ids)).abs().max().item()
    assert diff > 1e-2


def test_fault_swaps_qk_when_shapes_match(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(tiny_config(num_key_value_heads=4), std=0.2)
    with FAULTS.enabled("hf_export_transposed_qk"):
        export_hf(model, tok, tmp_path)
    weights = load_file(str(tmp_path / "model.safetensors"))
    attn = model.model.layers[0].self_attn
    assert torch.equal(weights["model.layers.0.self_attn.q_proj.weight"], attn.k_proj.weight.detach())


# --- bad input -------------------------------------------------------------------------------


def _exported(tmp_path: Path, tok: EngineTokenizer, config: ModelConfig | None = None) -> Path:
    export_hf(tiny_model(config), tok, tmp_path / "hf")
    return tmp_path / "hf"


def _edit_config(folder: Path, **changes: object) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_type": "gpt2"}, "unknown architecture `gpt2`"),
        ({"hidden_act": "gelu"}, "hidden_act 'gelu' is not supported"),
        ({"attention_bias": True}, "Llama attention_bias/mlp_bias"),
        ({"head_dim": 8}, "head_dim 8 != hidden_size / num_attention_heads = 16"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}, "rope scaling"),
        ({"num_key_value_heads": 3}, "config.json is inconsistent"),
        ({"hidden_size": "wide"}, "malformed value"),
    ],
)
def test_import_rejects_unsupported_configs(
    tmp_path: Path,
    tok: EngineTokenizer,
    changes: dict,
    message: str,  # type: ignore[type-arg]
) -> None:
    folder = _exported(tmp_path, tok)
    _edit_config(folder, **changes)
    with pytest.raises(ExportError, match=message):
        import_hf(folder)


def test_import_missing_pieces(tmp_path: Path, tok: EngineTokenizer) -> None:
    with pytest.raises(ExportError, match="not a directory"):
        import_hf(tmp_path / "nope")
    folder = _exported(tmp_path, tok)
    cfg = json.loads((folder / "config.json").read_text())
    del cfg["vocab_size"]
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ExportError, match=r"config\.json lacks `vocab_size`"):
        import_hf(folder)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ExportError, match="not valid JSON"):
        import_hf(folder)
    (folder / "config.json").unlink()
    with pytest.raises(ExportError, match=r"no config\.json"):
        import_hf(folder)


def test_import_weight_problems(tmp_path: Path, tok: EngineTokenizer) -> None:
    folder = _exported(tmp_path, tok)
    weights = load_file(str(folder / "model.safetensors"))
    name = "model.layers.1.mlp.up_proj.weight"
    save_file({**weights, name: torch.zeros(64, 64)}, str(folder / "model.safetensors"))
    with pytest.raises(ExportError, match=rf"tensor `{name}` has shape \[64, 64\], expected \[176, 64\]"):
        import_hf(folder)
    del weights["model.norm.weight"]
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(ExportError, match=r"missing tensor `model.norm\.weight`"):
        import_hf(folder)
    (folder / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ExportError, match=r"truncated \(7 bytes"):
        import_hf(folder)
    (folder / "model.safetensors").write_text(json.dumps({"a JSON file": "named .safetensors"}))
    with pytest.raises(ExportError, match="not a safetensors file"):
        import_hf(folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"x")
    with pytest.raises(ExportError, match="pickle"):
        import_hf(folder)


def test_import_without_tokenizer(tmp_path: Path, tok: EngineTokenizer) -> None:
    folder = _exported(tmp_path, tok)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ExportError, match=r"no tokenizer\.json"):
        import_hf(folder)


def test_import_sharded_weights(tmp_path: Path, tok: EngineTokenizer) -> None:
    model = tiny_model(std=0.2)
    folder = tmp_path / "hf"
    export_hf(model, tok, folder)
    weights = load_file(str(folder / "model.safetensors"))
    names = sorted(weights)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for shard, members in shards.items():
        save_file({n: weights[n] for n in members}, str(folder / shard))
        weight_map.update(dict.fromkeys(members, shard))
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    ids = torch.tensor([[4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(import_hf(folder).model(ids).logits, model(ids).logits)


def test_export_refuses_file_target(tmp_path: Path, tok: EngineTokenizer) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(ExportError, match="not a directory"):
        export_hf(tiny_model(), tok, target)


def test_model_is_untouched_by_export(tmp_path: Path, tok: EngineTokenizer) -> None:
    model: DecoderLM = tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with FAULTS.enabled("hf_export_transposed_qk"):
        export_hf(model, tok, tmp_path)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def _set_eos(folder: Path, value: object, files: tuple[str, ...] = ("config.json", "generation_config.json")) -> None:
    for name in files:
        data = json.loads((folder / name).read_text())
        data["eos_token_id"] = value
        (folder / name).write_text(json.dumps(data))


def test_a_list_of_eos_ids_is_kept_and_generation_config_governs(tmp_path: Path, tok: EngineTokenizer) -> None:
    export_hf(tiny_model(), tok, tmp_path)
    _set_eos(tmp_path, [tok.eos_id, 7], ("config.json",))
    assert import_hf(tmp_path).config.eos_ids == (tok.eos_id,)  # generation_config.json still says one id
    _set_eos(tmp_path, [tok.eos_id, 7, 9], ("generation_config.json",))
    loaded = import_hf(tmp_path)
    assert loaded.config.eos_token_id == (tok.eos_id, 7, 9)
    ckpt = save_checkpoint(tmp_path / "m.safetensors", loaded.model, loaded.tokenizer, make_manifest(step=0))

    assert load_checkpoint(ckpt).config.eos_ids == (tok.eos_id, 7, 9)
    with FAULTS.enabled("hf_import_eos_list_dropped"):
        assert import_hf(tmp_path).config.eos_ids == (tok.eos_id,)


@pytest.mark.parametrize(
    ("value", "message"),
    [([], "non-empty list"), (["2"], "non-empty list"), ([2, 100_000], "outside the vocabulary")],
)
def test_a_bad_eos_list_is_named(tmp_path: Path, tok: EngineTokenizer, value: object, message: str) -> None:
    export_hf(tiny_model(), tok, tmp_path)
    _set_eos(tmp_path, value)
    with pytest.raises(ExportError, match=message):
        import_hf(tmp_path)


def test_an_unsupported_rope_setting_is_named_as_unsupported(tmp_path: Path, tok: EngineTokenizer) -> None:
    folder = _exported(tmp_path, tok)
    data = json.loads((folder / "config.json").read_text())
    data["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}
    (folder / "config.json").write_text(json.dumps(data))
    with pytest.raises(ExportError) as err:
        import_hf(folder)
    assert "is not supported by the engine" in str(err.value) and "malformed" not in str(err.value)


def test_chat_template_and_bos_rule_reach_transformers_and_come_back(tmp_path: Path) -> None:
    from engine.faults import FAULTS
    from engine.hf_interop import import_hf
    from tests.engine.chat_helpers import CHATML, chat_tokenizer

    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    for add_bos in (False, True):
        tok = chat_tokenizer(add_bos_token=add_bos)
        folder = export_hf(tiny_model(tiny_config(vocab_size=tok.vocab_size)), tok, tmp_path / f"bos-{add_bos}")
        hf_tok = transformers.AutoTokenizer.from_pretrained(folder)
        assert hf_tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) == tok.backend.decode(
            tok.apply_chat_template(messages), skip_special_tokens=False
        )
        assert hf_tok("hi")["input_ids"] == tok.encode_prompt("hi")
        back = import_hf(folder).tokenizer
        assert (back.chat_template, back.add_bos_token) == (CHATML, add_bos)
        assert back.encode_prompt("hi") == tok.encode_prompt("hi")
    with FAULTS.enabled("hf_export_bos_rule_dropped"):
        folder = export_hf(tiny_model(), tiny_tokenizer(), tmp_path / "dropped")
    assert transformers.AutoTokenizer.from_pretrained(folder)("hi")["input_ids"] != tiny_tokenizer().encode_prompt("hi")


def test_a_stand_in_bos_is_not_exported_as_one(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    base = tiny_tokenizer()
    # a Qwen2-like tokenizer: no BOS of its own, so the EOS stands in and nothing adds it
    tok = EngineTokenizer(
        Tokenizer.from_str(base.hf_json()), base.eos_token, base.eos_token, base.pad_token, add_bos_token=False
    )
    folder = export_hf(tiny_model(), tok, tmp_path / "qwen-like")
    assert json.loads((folder / "tokenizer_config.json").read_text())["bos_token"] is None
    assert json.loads((folder / "special_tokens_map.json").read_text())["bos_token"] is None
    assert json.loads((folder / "config.json").read_text())["bos_token_id"] is None
    hf_tok = transformers.AutoTokenizer.from_pretrained(folder)
    assert hf_tok.bos_token is None and hf_tok("hi")["input_ids"] == tok.encode("hi")
