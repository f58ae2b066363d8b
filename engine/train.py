"""The training loop shared by pretraining, fine-tuning and distillation.

What differs between them (the model, where a batch comes from, how the loss is computed, what a
checkpoint holds) is a :class:`TrainingTask`; the loop owns the rest: AdamW, linear warm-up then
cosine decay, gradient clipping, periodic validation loss, a checkpoint folder every N steps, a
JSONL log, the NaN/Inf guard and resume.

A checkpoint folder ``step-000120/`` holds the task's weights plus ``train_state.safetensors``
(optimizer moments, RNG states) and ``train_state.json`` (step, scheduler, parameter names,
data position, config).  Nothing is pickled.  Batches are a pure function of ``(seed, step)``
(engine.data), so restoring those files continues the exact loss trajectory.  ``latest.json``
names the newest complete folder; a run stopped by a non-finite loss never replaces it.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from engine import distributed
from engine.atomic import atomic_dir, write_atomic
from engine.errors import EngineError
from engine.faults import FAULTS

LOG_NAME = "log.jsonl"
LATEST_NAME = "latest.json"
STATE_TENSORS = "train_state.safetensors"
STATE_JSON = "train_state.json"


class NonFiniteLossError(EngineError, FloatingPointError):
    """Training stopped at a NaN/Inf loss or gradient; the last good checkpoint is kept."""

    def __init__(self, step: int, what: str, value: float, last_checkpoint: Path | None) -> None:
        self.step, self.what, self.value, self.last_checkpoint = step, what, value, last_checkpoint
        kept = f"last good checkpoint kept at {last_checkpoint}" if last_checkpoint else "no checkpoint was written yet"
        super().__init__(f"step {step}: {what} is {value}; training stopped before the update ({kept})")


class ResumeError(EngineError, ValueError):
    """A checkpoint folder that cannot continue this run."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 100
    batch_size: int = 8
    seq_len: int = 64
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 10
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    eval_every: int = 0  # 0: only at the end
    eval_batches: int = 4
    save_every: int = 0  # 0: only at the end
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.seq_len < 2:
            raise ValueError("steps and batch_size must be >= 1 and seq_len >= 2")
        if self.warmup_steps < 0 or not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError("warmup_steps must be >= 0 and min_lr_ratio in [0, 1]")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lr_factor(step: int, cfg: TrainConfig) -> float:
    """Multiplier on ``cfg.lr`` for the update at ``step`` (0-based): linear warm-up, then cosine."""
    if step < cfg.warmup_steps and not FAULTS.active("warmup_skipped"):
        return (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def nan_fault_step(cfg: TrainConfig) -> int:
    """The step whose loss the ``nan_in_step`` fault poisons: the middle of the run."""
    return max(1, cfg.steps // 2)


class TrainingTask(Protocol):
    """What a kind of training plugs into the loop."""

    model: nn.Module

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        """Loss of training batch ``step`` (with the graph) and how many tokens it covered."""
        ...

    def val_loss(self) -> float: ...

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Write the trainable weights (and whatever is needed to rebuild them) into ``folder``."""
        ...

    def load(self, folder: Path) -> None:
        """Restore the weights ``save`` wrote."""
        ...


@dataclass
class TrainResult:
    out_dir: Path
    step0_loss: float
    losses: list[float]
    val_losses: dict[int, float]
    checkpoint: Path | None
    tokens: int
    seconds: float
    start_step: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def trainable_named_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def make_optimizer(params: list[nn.Parameter], cfg: TrainConfig) -> torch.optim.AdamW:
    if not params:
        raise ValueError("nothing to train: the model has no parameter with requires_grad")
    return torch.optim.AdamW(
        params, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, weight_decay=cfg.weight_decay
    )


# --- train state (de)serialisation: safetensors + JSON -----------------------------------------


def state_to_files(
    optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LambdaLR, names: list[str]
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for idx, entry in sd["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{idx}.{key}"] = value.detach().to("cpu").contiguous()
            else:
                scalars.setdefault(str(idx), {})[key] = value
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = s
    meta = {
        "param_names": names,
        "param_groups": sd["param_groups"],
        "optim_scalars": scalars,
        "scheduler": scheduler.state_dict(),
    }
    return tensors, meta


def state_from_files(
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LambdaLR,
    names: list[str],
    tensors: Mapping[str, torch.Tensor],
    meta: Mapping[str, Any],
    device: torch.device,
) -> None:
    if list(meta["param_names"]) != names:
        theirs, ours = set(meta["param_names"]), set(names)
        raise ResumeError(
            "the checkpoint trained a different parameter set: "
            f"only in checkpoint {sorted(theirs - ours)[:3]}, only in this run {sorted(ours - theirs)[:3]}"
        )
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value if name == "step" else value.to(device)
    for idx, extra in meta.get("optim_scalars", {}).items():
        state.setdefault(int(idx), {}).update(extra)
    groups = [dict(g) for g in meta["param_groups"]]
    for g in groups:
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    optimizer.load_state_dict({"state": state, "param_groups": groups})
    scheduler.load_state_dict(dict(meta["scheduler"]))
    torch.set_rng_state(tensors["rng.cpu"])
    cuda_states = [tensors[k] for k in sorted(k for k in tensors if k.startswith("rng.cuda."))]
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states[: torch.cuda.device_count()])


def latest_checkpoint(out_dir: str | os.PathLike[str]) -> Path | None:
    pointer = Path(out_dir) / LATEST_NAME
    if not pointer.is_file():
        return None
    folder = Path(out_dir) / json.loads(pointer.read_text())["folder"]
    return folder if (folder / STATE_JSON).is_file() else None


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


class JsonlLog:
    def __init__(self, path: Path, *, append: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh = open(path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


# --- the loop ------------------------------------------------------------------------------


def run_training(
    task: TrainingTask,
    cfg: TrainConfig,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = False,
    manifest: Mapping[str, Any] | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train ``task.model`` for ``cfg.steps`` updates; checkpoints and ``log.jsonl`` go to ``out_dir``.

    Under ``torchrun`` (engine.distributed) each rank trains on its shard of every global batch of
    ``cfg.batch_size`` through DDP, and only rank 0 writes the log and checkpoints.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = next(task.model.parameters()).device
    ctx = distributed.setup(device)
    named = trainable_named_parameters(task.model)
    names = [n for n, _ in named]
    optimizer = make_optimizer([p for _, p in named], cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, cfg))
    start = 0
    last_good: Path | None = None
    if resume:
        folder = latest_checkpoint(out)
        if folder is None:
            raise ResumeError(f"--resume: {out} holds no complete checkpoint ({LATEST_NAME} missing)")
        meta = json.loads((folder / STATE_JSON).read_text())
        if meta["config"] != json.loads(json.dumps(cfg.to_dict())):
            diff = sorted(k for k in cfg.to_dict() if meta["config"].get(k) != cfg.to_dict()[k])
            raise ResumeError(f"--resume with a different training config ({', '.join(diff)}); same config needed")
        task.load(folder)
        if not FAULTS.active("resume_optimizer_state_dropped"):  # the defect: AdamW restarts from zero moments
            state_from_files(optimizer, scheduler, names, load_file(str(folder / STATE_TENSORS)), meta, device)
        start = int(meta["step"])
        last_good = folder
    else:
        torch.manual_seed(cfg.seed)
    wrapped = ctx.wrap(task.model)
    unsharded = distributed.shard_task(task, ctx)
    log = JsonlLog(out / LOG_NAME, append=resume) if ctx.is_main else None

    def emit(record: dict[str, Any]) -> None:
        if log is None:
            return
        log.write(record)
        if on_record is not None:
            on_record(record)

    losses: list[float] = []
    val_losses: dict[int, float] = {}
    tokens_total = 0
    step0 = float("nan")
    emit(
        {
            "kind": "start",
            "step": start,
            "resume": resume,
            "config": cfg.to_dict(),
            "trainable_params": sum(p.numel() for _, p in named),
        }
    )
    task.model.train()
    t0 = time.perf_counter()
    try:
        for step in range(start, cfg.steps):
            with ctx.forward_through(task, wrapped):
                loss, tokens = task.loss(step)
            if FAULTS.active("nan_in_step") and step == nan_fault_step(cfg):
                loss = loss * float("nan")
            loss, value, tokens = ctx.global_loss(loss, tokens)
            if step == 0:
                step0 = value
                emit({"kind": "step0", "step": 0, "loss": value})
            if not math.isfinite(value):
                emit(
                    {
                        "kind": "nonfinite",
                        "step": step,
                        "what": "loss",
                        "value": str(value),
                        "last_checkpoint": str(last_good) if last_good else None,
                    }
                )
                kept = None if FAULTS.active("nan_stop_forgets_checkpoint") else last_good
                raise NonFiniteLossError(step, "the loss", value, kept)
            loss.backward()
            params = [p for _, p in named]
            if cfg.grad_clip > 0:
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip))
            else:
                grad_norm = float(
                    torch.linalg.vector_norm(
                        torch.stack([p.grad.detach().float().norm() for p in params if p.grad is not None])
                    )
                )
            if not math.isfinite(grad_norm):
                optimizer.zero_grad(set_to_none=True)
                emit(
                    {
                        "kind": "nonfinite",
                        "step": step,
                        "what": "grad_norm",
                        "value": str(grad_norm),
                        "last_checkpoint": str(last_good) if last_good else None,
                    }
                )
                raise NonFiniteLossError(step, "the gradient norm", grad_norm, last_good)
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(value)
            tokens_total += tokens
            done = step + 1
            emit(
                {
                    "kind": "train",
                    "step": step,
                    "loss": value,
                    "lr": lr,
                    "grad_norm": grad_norm,
                    "tokens": tokens,
                    "elapsed_s": round(time.perf_counter() - t0, 4),
                }
            )
            if (cfg.eval_every and done % cfg.eval_every == 0) or done == cfg.steps:
                val = task.val_loss()
                task.model.train()
                val_losses[done] = val
                emit({"kind": "val", "step": done, "val_loss": val})
            if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
                if ctx.is_main:
                    last_good = save_training_checkpoint(task, out, done, cfg, optimizer, scheduler, names, manifest)
                else:
                    last_good = out / f"step-{done:06d}"
                ctx.barrier()  # no rank goes on before the checkpoint exists
                emit({"kind": "checkpoint", "step": done, "path": str(last_good)})
    finally:
        if log is not None:
            log.close()
        distributed.unshard_task(task, unsharded, ctx)
        ctx.close()
    seconds = time.perf_counter() - t0
    return TrainResult(out, step0, losses, val_losses, last_good, tokens_total, seconds, start)


def save_training_checkpoint(
    task: TrainingTask,
    out: Path,
    step: int,
    cfg: TrainConfig,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LambdaLR,
    names: list[str],
    manifest: Mapping[str, Any] | None,
) -> Path:
    """Write ``out/step-NNNNNN/`` atomically and point ``latest.json`` at it."""
    name = f"step-{step:06d}"
    final = out / name
    with atomic_dir(final) as tmp:
        info = {**dict(manifest or {}), "step": step, "seed": cfg.seed, "train_config": cfg.to_dict()}
        task.save(tmp, info)
        tensors, meta = state_to_files(optimizer, scheduler, names)
        save_file(tensors, str(tmp / STATE_TENSORS), metadata={"format": "pv-engine-train-state"})
        meta.update(
            {
                "step": step,
                "config": cfg.to_dict(),
                "data_position": {"seed": cfg.seed, "step": step, "samples": step * cfg.batch_size},
            }
        )
        write_json_atomic(tmp / STATE_JSON, meta)
    write_json_atomic(out / LATEST_NAME, {"folder": name, "step": step})
    return final


# --- pretraining and fine-tuning tasks -------------------------------------------------------


def mean_loss(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device) -> float:
    if not batches:
        raise ValueError("no validation batches: the validation split is shorter than one window")
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for ids, labels in batches:
            ids, labels = ids.to(device), labels.to(device)
            n = int((labels[:, 1:] != -100).sum())
            total += float(model(ids, labels=labels).loss) * n
            count += n
    return total / count


def architecture_differences(a: Any, b: Any) -> list[str]:
    """Every architecture key on which two configs differ, as ``key: a != b``."""
    from engine.config import ARCHITECTURE_KEYS

    da, db = a.to_dict(), b.to_dict()
    return [f"{k}: {da[k]!r} != {db[k]!r}" for k in ARCHITECTURE_KEYS if da[k] != db[k]]


class IncompatibleInitError(EngineError, ValueError):
    """An ``--init`` checkpoint whose architecture does not match the requested model."""


class PretrainTask:
    """Next-token prediction on token windows of :class:`engine.data.TokenData`."""

    def __init__(self, model: nn.Module, tokenizer: Any, data: Any, cfg: TrainConfig) -> None:
        self.model, self.tokenizer, self.data, self.cfg = model, tokenizer, data, cfg
        self.device = next(model.parameters()).device

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        ids = self.data.batch(step, self.cfg.batch_size, self.cfg.seq_len, self.cfg.seed).to(self.device)
        return self.model(ids, labels=ids).loss, int(ids.numel())

    def val_loss(self) -> float:
        batches = [(b, b) for b in self.data.val_batches(self.cfg.batch_size, self.cfg.seq_len, self.cfg.eval_batches)]
        return mean_loss(self.model, batches, self.device)

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        from engine.checkpoint import save_checkpoint

        save_checkpoint(
            folder / "model.safetensors",
            self.model,  # type: ignore[arg-type]
            self.tokenizer,
            {**manifest, "data_digest": self.data.digest},
        )

    def load(self, folder: Path) -> None:
        from engine.checkpoint import load_state

        state = load_state(folder / "model.safetensors")
        if getattr(self.model.config, "tie_word_embeddings", False):
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        self.model.load_state_dict({k: v.to(self.device) for k, v in state.items()})


def pretrain(
    out_dir: str | os.PathLike[str],
    cfg: TrainConfig,
    *,
    config: Any | None = None,
    tokenizer: Any | None = None,
    data: Any | None = None,
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

        from engine.checkpoint import load_state
        from engine.lora import ADAPTER_WEIGHTS

        if self.method == "full":
            state = load_state(folder / "model.safetensors")
            if getattr(self.model.config, "tie_word_embeddings", False):
                state["lm_head.weight"] = state["model.embed_tokens.weight"]
            self.model.load_state_dict({k: v.to(self.device) for k, v in state.items()})
        else:
            weights = load_file(str(folder / "adapter" / ADAPTER_WEIGHTS), device=str(self.device))
            set_peft_model_state_dict(self.model, weights)


def nf4_manifest(nf4: Any | None, method: str) -> dict[str, Any]:
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
    lora: Any | None = None,
    nf4: Any | None = None,
    data: Any | None = None,
    resume: bool = False,
    device: str | torch.device | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Fine-tune the checkpoint ``base`` on instruction pairs with ``method`` full | lora | qlora."""
    from engine.checkpoint import load_checkpoint
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
    if data is None:
        data = tokenize_pairs(extract_instruction_pairs(), loaded.tokenizer, cfg.seq_len)
    model: nn.Module = loaded.model
    if method == "full":
        model.requires_grad_(True)
        if FAULTS.active("full_finetune_embeddings_frozen"):
            loaded.model.model.embed_tokens.requires_grad_(False)
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
        manifest={
            **(manifest or {}),
            "kind": "finetune",
            "method": method,
            "base": str(base),
            **nf4_manifest(nf4, method),
        },
    )
    result.extra["model"] = model
    return result
