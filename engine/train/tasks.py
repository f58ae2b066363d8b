"""The training tasks: pretraining a decoder from scratch or from an ``--init`` checkpoint, and
fine-tuning one (full, LoRA or QLoRA on an NF4 base) on instruction pairs.  Each is a
:class:`engine.train.loop.TrainingTask`; :func:`pretrain` and :func:`finetune` build one and hand
it to :func:`engine.train.loop.run_training`.

Imports inside functions: each task imports the engine modules it uses when it runs, so importing
engine.train (every command and contract fixture does) does not load engine.lora and peft (seconds)
or engine.quant and bitsandbytes, which only fine-tuning needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file
from torch import nn

from engine import distributed
from engine.errors import EngineError
from engine.faults import FAULTS
from engine.train.loop import TrainConfig, TrainResult, mean_loss, run_training
from engine.train.state import write_json_atomic

if TYPE_CHECKING:
    from engine.config import ModelConfig
    from engine.data import InstructionData, TokenData
    from engine.lora import LoraSettings
    from engine.quant import NF4Config
    from engine.tokenizer import EngineTokenizer


def architecture_differences(a: Any, b: Any) -> list[str]:
    """Every architecture key on which two configs differ, as ``key: a != b``."""
    from engine.config import ARCHITECTURE_KEYS

    da, db = a.to_dict(), b.to_dict()
    return [f"{k}: {da[k]!r} != {db[k]!r}" for k in ARCHITECTURE_KEYS if da[k] != db[k]]


class IncompatibleInitError(EngineError, ValueError):
    """An ``--init`` checkpoint whose architecture does not match the requested model."""


class WholeModelTask:
    """What a task that trains a whole model (not an adapter) shares: validation on ``data``'s
    held-out split, and each checkpoint a self-contained file (weights, tokenizer, manifest)
    recording the digest of the data it trained on.  Pretraining and distillation are such tasks."""

    model: nn.Module
    tokenizer: EngineTokenizer
    data: Any  # TokenData, or InstructionData for a distillation on instruction pairs
    cfg: TrainConfig
    device: torch.device

    def run_manifest(self) -> dict[str, Any]:
        """What this task adds to each checkpoint's manifest."""
        return {"data_digest": self.data.digest}

    def val_loss(self) -> float:
        if hasattr(self.data, "labels"):  # instruction pairs: prompt and padding are masked in the labels
            batches = self.data.val_batches(self.cfg.batch_size, self.cfg.eval_batches)
        else:  # a token stream is its own label
            batches = [
                (b, b) for b in self.data.val_batches(self.cfg.batch_size, self.cfg.seq_len, self.cfg.eval_batches)
            ]
        return mean_loss(self.model, batches, self.device)

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        from engine.checkpoint import save_checkpoint

        save_checkpoint(
            folder / "model.safetensors",
            self.model,  # type: ignore[arg-type]
            self.tokenizer,
            {**manifest, **self.run_manifest()},
        )

    def load(self, folder: Path) -> None:
        from engine.checkpoint import load_step_weights

        load_step_weights(self.model, folder / "model.safetensors")  # type: ignore[arg-type]


class PretrainTask(WholeModelTask):
    """Next-token prediction on token windows of :class:`engine.data.TokenData`."""

    def __init__(self, model: nn.Module, tokenizer: EngineTokenizer, data: TokenData, cfg: TrainConfig) -> None:
        self.model, self.tokenizer, self.data, self.cfg = model, tokenizer, data, cfg
        self.device = next(model.parameters()).device

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        ids = self.data.batch(step, self.cfg.batch_size, self.cfg.seq_len, self.cfg.seed).to(self.device)
        return self.model(ids, labels=ids).loss, int(ids.numel())


def pretrain(
    out_dir: str | os.PathLike[str],
    cfg: TrainConfig,
    *,
    config: ModelConfig | None = None,
    tokenizer: EngineTokenizer | None = None,
    data: TokenData | None = None,
    init: str | os.PathLike[str] | None = None,
    resume: bool = False,
    device: str | torch.device | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Pretrain from scratch (``config``) or from an ``init`` checkpoint.

    With ``init`` the checkpoint's architecture must equal ``config``'s (when given) on every
    architecture key; otherwise :class:`IncompatibleInitError` lists each difference.
    ``tokenizer``/``data`` default to the cached stdlib tokenizer and its tokenized corpus.
    """
    from engine.checkpoint import load_checkpoint
    from engine.data import tokenize_corpus
    from engine.device import resolve_device
    from engine.model import build_model
    from engine.tokenizer import cached_tokenizer

    dev = distributed.rank_device(resolve_device(device))
    if not FAULTS.active("pretrain_seed_ignored"):  # the defect: init from whatever the global RNG holds
        torch.manual_seed(cfg.seed)
    init_path = None
    if init is not None:
        loaded = load_checkpoint(Path(init), device=dev)
        if config is not None:
            diffs = architecture_differences(loaded.config, config)
            if FAULTS.active("init_architecture_unchecked"):  # the defect: the checkpoint's shape wins silently
                diffs = []  # pragma: no mutate
            if diffs:
                raise IncompatibleInitError(
                    f"--init {init} does not match the requested architecture: " + "; ".join(diffs)
                )
        config = loaded.config
        tokenizer = tokenizer or loaded.tokenizer
        # The fault's defect: the architecture is taken from the checkpoint, its weights are not.
        model = build_model(config, device=dev) if FAULTS.active("init_checkpoint_ignored") else loaded.model.to(dev)
        init_path = str(init)
    else:
        if config is None:
            raise ValueError("pretrain needs a model config or an --init checkpoint")
        tokenizer = tokenizer or cached_tokenizer(config.vocab_size)
        model = build_model(config, device=dev)
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"tokenizer has {tokenizer.vocab_size} tokens, model vocab_size is {config.vocab_size}")
    data = data if data is not None else tokenize_corpus(tokenizer)
    if FAULTS.active("pretrain_data_argument_ignored"):  # pragma: no mutate
        data = tokenize_corpus(tokenizer)  # pragma: no mutate -- the defect: the streams given are not trained on
    model.train()
    task = PretrainTask(model, tokenizer, data, cfg)
    result = run_training(
        task,
        cfg,
        out_dir,
        resume=resume,
        on_record=on_record,
        manifest={**(manifest or {}), "kind": "pretrain", "init": init_path},
    )
    result.extra["model"] = model
    return result


class FinetuneTask:
    """Supervised fine-tuning on instruction pairs: full weights or a (Q)LoRA adapter."""

    def __init__(
        self, model: nn.Module, tokenizer: Any, data: Any, cfg: TrainConfig, method: str, base_path: str | None
    ) -> None:
        self.model, self.tokenizer, self.data, self.cfg = model, tokenizer, data, cfg
        self.method, self.base_path = method, base_path
        self.device = next(p for p in model.parameters()).device

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        ids, labels = self.data.batch(step, self.cfg.batch_size, self.cfg.seed)
        ids, labels = ids.to(self.device), labels.to(self.device)
        return self.model(ids, labels=labels).loss, int((labels != -100).sum())

    def val_loss(self) -> float:
        return mean_loss(self.model, self.data.val_batches(self.cfg.batch_size, self.cfg.eval_batches), self.device)

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        from engine.checkpoint import save_checkpoint
        from engine.lora import save_adapter

        info = {**manifest, "method": self.method, "base": self.base_path, "data_digest": self.data.digest}
        if self.method == "full":
            save_checkpoint(folder / "model.safetensors", self.model, self.tokenizer, info)  # type: ignore[arg-type]
        else:
            save_adapter(self.model, folder / "adapter")  # type: ignore[arg-type]
            write_json_atomic(folder / "manifest.json", info)

    def load(self, folder: Path) -> None:
        from peft import set_peft_model_state_dict

        from engine.checkpoint import load_step_weights
        from engine.lora import ADAPTER_WEIGHTS

        if self.method == "full":
            load_step_weights(self.model, folder / "model.safetensors")  # type: ignore[arg-type]
        else:
            weights = load_file(str(folder / "adapter" / ADAPTER_WEIGHTS))  # copied into place on load
            if FAULTS.active("finetune_resume_adapter_not_loaded"):
                return  # the defect: the fresh adapter trains on  # pragma: no mutate
            set_peft_model_state_dict(self.model, weights)


def nf4_manifest(nf4: NF4Config | None, method: str) -> dict[str, Any]:
    """How a QLoRA run quantized its base, so the adapter is later applied to the same NF4 base."""
    if method != "qlora":
        return {}
    from engine.quant import NF4Config

    cfg = nf4 or NF4Config()
    return {"nf4": {"blocksize": cfg.blocksize, "double_quant": cfg.double_quant}}


def finetune(
    base: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    cfg: TrainConfig,
    *,
    method: str = "lora",
    lora: LoraSettings | None = None,
    nf4: NF4Config | None = None,
    data: InstructionData | None = None,
    resume: bool = False,
    device: str | torch.device | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Fine-tune the checkpoint ``base`` on instruction pairs with ``method`` full | lora | qlora."""
    from engine.checkpoint import base_identity, load_checkpoint
    from engine.data import extract_instruction_pairs, tokenize_pairs
    from engine.device import nf4_device, resolve_device
    from engine.lora import LoraSettings, apply_lora, prepare_qlora

    if method not in ("full", "lora", "qlora"):
        raise ValueError(f"unknown fine-tuning method {method!r}; expected full, lora or qlora")
    dev = distributed.rank_device(resolve_device(device))
    if method == "qlora":  # NF4 base and LoRA on one device: the CPU where bitsandbytes has no kernels
        dev = nf4_device(dev)
    torch.manual_seed(cfg.seed)
    loaded = load_checkpoint(Path(base), device=dev)
    identity = base_identity(loaded.model)  # before LoRA or NF4 touch it: the weights the adapter fits
    if data is None:
        data = tokenize_pairs(extract_instruction_pairs(), loaded.tokenizer, cfg.seq_len)
    model: nn.Module = loaded.model
    if method == "full":
        model.requires_grad_(True)
        if FAULTS.active("full_finetune_embeddings_frozen"):
            loaded.model.model.embed_tokens.requires_grad_(False)  # pragma: no mutate
    elif method == "lora":
        model = apply_lora(model, lora or LoraSettings())
    else:
        model = prepare_qlora(model, lora or LoraSettings(), nf4, device=dev)
    model.train()
    task = FinetuneTask(model, loaded.tokenizer, data, cfg, method, str(base))
    result = run_training(
        task,
        cfg,
        out_dir,
        resume=resume,
        on_record=on_record,
        manifest={  # FinetuneTask.save adds the method, the base's path and the data digest
            **(manifest or {}),
            "kind": "finetune",
            **(identity if method != "full" else {}),
            **nf4_manifest(nf4, method),
        },
    )
    result.extra["model"] = model
    return result
