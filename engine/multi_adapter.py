"""Several LoRA adapters trained on one frozen base that is loaded (and optionally quantized) once.

Every adapter is a named PEFT adapter on the same ``PeftModel`` with its own data, its own AdamW
state and schedule, its own JSONL log and its own checkpoint folder.  Each adapter is the one a
one-adapter ``finetune`` of its data with the same settings and seed trains: the same
initialisation, batches and steps, and the same files, with the adapter's name added.  Which adapter takes the
next step is the scheduler's choice:

* ``round_robin``: one step each, in turn;
* ``synchronized``: every unfinished adapter steps once per tick (lockstep);
* ``lowest_val_first``: the unfinished adapter with the lowest latest validation loss steps
  next (ties by name), so the most promising adapter finishes first.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from peft import PeftModel
from torch import nn

from engine.atomic import atomic_dir
from engine.checkpoint import base_identity, load_checkpoint
from engine.data import read_examples, resolve_template, tokenize_pairs
from engine.device import nf4_device, resolve_device
from engine.faults import FAULTS
from engine.lora import LoraSettings, apply_lora, prepare_qlora, save_adapter
from engine.quant import NF4Config
from engine.safetensors_io import save_tensors
from engine.train import (
    LATEST_NAME,
    LOG_NAME,
    STATE_JSON,
    STATE_TENSORS,
    JsonlLog,
    NonFiniteLossError,
    TrainConfig,
    clip_grad_norm,
    lr_factor,
    make_optimizer,
    mean_loss,
    nf4_manifest,
    state_to_files,
    write_json_atomic,
)

Schedule = Literal["round_robin", "synchronized", "lowest_val_first"]
SCHEDULES: tuple[str, ...] = ("round_robin", "synchronized", "lowest_val_first")


@dataclass
class AdapterJob:
    """One adapter: its name, data (engine.data.InstructionData), LoRA settings and output folder."""

    name: str
    data: Any
    out_dir: Path
    settings: LoraSettings = field(default_factory=LoraSettings)
    manifest: dict[str, Any] = field(default_factory=dict)  # written with each checkpoint (method, base)


@dataclass
class AdapterState:
    job: AdapterJob
    params: list[nn.Parameter]
    names: list[str]
    optimizer: torch.optim.AdamW
    scheduler: torch.optim.lr_scheduler.LambdaLR
    log: JsonlLog
    step: int = 0
    losses: list[float] = field(default_factory=list)
    val_losses: dict[int, float] = field(default_factory=dict)
    checkpoint: Path | None = None
    started: float = field(default_factory=time.perf_counter)  # the log's elapsed_s counts from here

    @property
    def latest_val(self) -> float:
        return self.val_losses[max(self.val_losses)] if self.val_losses else math.inf


@dataclass
class MultiAdapterResult:
    model: PeftModel
    order: list[str]  # which adapter took each step, in order
    adapters: dict[str, AdapterState]


def _adapter_params(model: nn.Module, name: str) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if ".lora_" in n and f".{name}." in n]


def _share_with_first(model: PeftModel, first: str, name: str) -> None:
    # The fault's defect: the new adapter's matrices are views of the first adapter's storage
    # (distinct Parameter objects, so both optimizers still see them, writing the same memory).
    for module in model.modules():  # pragma: no mutate
        for attr in ("lora_A", "lora_B"):  # pragma: no mutate
            table = getattr(module, attr, None)  # pragma: no mutate
            if isinstance(table, nn.ModuleDict) and first in table and name in table:  # pragma: no mutate
                table[name].weight.data = table[first].weight.data  # pragma: no mutate


def build_multi_adapter_model(
    base: nn.Module,
    jobs: Sequence[AdapterJob],
    *,
    quantize: bool = False,
    nf4: NF4Config | None = None,
    seed: int = 0,
) -> PeftModel:
    """Wrap ``base`` once and add one adapter per job (NF4 first when ``quantize``)."""
    if not jobs:
        raise ValueError("no adapters to train")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"adapter names must be unique: {names}")
    seeded = not FAULTS.active("multi_adapter_seed_ignored")  # the defect: the global RNG decides
    if seeded:
        torch.manual_seed(seed)
    # The fault's defect: every further adapter is given its own (frozen) copy of the base.
    copies = (
        [copy.deepcopy(base).requires_grad_(False) for _ in jobs[1:]]  # pragma: no mutate
        if FAULTS.active("base_copied_per_adapter")  # pragma: no mutate
        else []
    )
    first = jobs[0]
    model = (
        prepare_qlora(base, first.settings, nf4, first.name)
        if quantize
        else apply_lora(base, first.settings, first.name)
    )
    for job in jobs[1:]:
        if seeded:  # each adapter starts where a one-adapter run with this seed starts
            torch.manual_seed(seed)
        model.add_adapter(job.name, job.settings.peft_config())
        if FAULTS.active("adapter_shared_state"):
            _share_with_first(model, first.name, job.name)  # pragma: no mutate
    # PEFT's add_adapter (autocast_adapter_dtype, its default) creates the adapter's weights in fp32
    if copies:  # pragma: no mutate
        model.add_module("base_copies", nn.ModuleList(copies))  # pragma: no mutate
    return model


def _activate(model: PeftModel, name: str) -> None:
    model.set_adapter(name)
    for n, p in model.named_parameters():
        if ".lora_" in n:
            p.requires_grad_(f".{name}." in n)


def _save(model: PeftModel, state: AdapterState, cfg: TrainConfig) -> Path:
    out = state.job.out_dir
    name = f"step-{state.step:06d}"
    final = out / name
    with atomic_dir(final) as tmp:
        save_adapter(model, tmp / "adapter", state.job.name)
        tensors, meta = state_to_files(state.optimizer, state.scheduler, state.names)
        save_tensors(tensors, str(tmp / STATE_TENSORS), metadata={"format": "pv-engine-train-state"})
        meta.update(
            {
                "step": state.step,
                "config": cfg.to_dict(),
                "data_position": {"seed": cfg.seed, "step": state.step, "samples": state.step * cfg.batch_size},
                "adapter": state.job.name,
                "data_digest": state.job.data.digest,
            }
        )
        write_json_atomic(tmp / STATE_JSON, meta)
        if state.job.manifest:
            # what a one-adapter run's step manifest records, so each adapter says how it was trained
            record = {
                **state.job.manifest,
                "step": state.step,
                "seed": cfg.seed,
                "train_config": cfg.to_dict(),
                "data_digest": state.job.data.digest,
            }
            if FAULTS.active("multi_adapter_manifest_unrecorded"):  # the defect: data, seed and settings left out
                record = {**state.job.manifest, "step": state.step}  # pragma: no mutate
            write_json_atomic(tmp / "manifest.json", record)
    write_json_atomic(out / LATEST_NAME, {"folder": name, "step": state.step})
    return final


def _val(model: PeftModel, state: AdapterState, cfg: TrainConfig, device: torch.device) -> float:
    _activate(model, state.job.name)
    value = mean_loss(model, state.job.data.val_batches(cfg.batch_size, cfg.eval_batches), device)
    model.train()
    return value


def _one_step(model: PeftModel, state: AdapterState, cfg: TrainConfig, device: torch.device) -> None:
    _activate(model, state.job.name)
    model.train()
    ids, labels = state.job.data.batch(state.step, cfg.batch_size, cfg.seed)
    ids, labels = ids.to(device), labels.to(device)
    loss = model(ids, labels=labels).loss
    value = float(loss.detach())
    last = str(state.checkpoint) if state.checkpoint else None
    if FAULTS.active("multi_adapter_stop_forgets_checkpoint"):  # the defect: a stop's record names no checkpoint
        last = None  # pragma: no mutate
    if not math.isfinite(value):
        state.log.write(
            {"kind": "nonfinite", "step": state.step, "what": "loss", "value": str(value), "last_checkpoint": last}
        )
        raise NonFiniteLossError(state.step, f"adapter {state.job.name!r} loss", value, state.checkpoint)
    loss.backward()
    grad_norm = clip_grad_norm(state.params, cfg.grad_clip)  # as a one-adapter run measures it
    if not math.isfinite(
        grad_norm
    ):  # the step would write non-finite weights: stop before it, as a one-adapter run does
        # the defect: gradients zeroed, not freed
        if FAULTS.active("multi_adapter_grad_stop_keeps_gradients"):  # pragma: no mutate
            state.optimizer.zero_grad(set_to_none=False)  # pragma: no mutate
        else:
            state.optimizer.zero_grad(set_to_none=True)
        record = {"kind": "nonfinite", "step": state.step, "what": "grad_norm", "value": str(grad_norm)}
        state.log.write({**record, "last_checkpoint": last})
        raise NonFiniteLossError(state.step, f"adapter {state.job.name!r} gradient norm", grad_norm, state.checkpoint)
    lr = state.optimizer.param_groups[0]["lr"]
    state.optimizer.step()
    state.scheduler.step()
    state.optimizer.zero_grad(set_to_none=True)
    if state.step == 0:
        state.log.write({"kind": "step0", "step": 0, "loss": value})
    state.log.write(
        {
            "kind": "train",
            "step": state.step,
            "loss": value,
            "lr": lr,
            "grad_norm": grad_norm,
            "tokens": int((labels != -100).sum()),  # the tokens this step learned from
            "elapsed_s": round(time.perf_counter() - state.started, 4),
        }
    )
    state.losses.append(value)
    state.step += 1


def train_adapters(
    base: nn.Module,
    jobs: Sequence[AdapterJob],
    cfg: TrainConfig,
    *,
    schedule: Schedule = "round_robin",
    quantize: bool = False,
    nf4: NF4Config | None = None,
) -> MultiAdapterResult:
    """Train every job's adapter for ``cfg.steps`` steps on the one ``base``, in ``schedule`` order."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
    device = next(base.parameters()).device
    model = build_multi_adapter_model(base, jobs, quantize=quantize, nf4=nf4, seed=cfg.seed)
    # The fault's defect: checkpoints are written from a copy taken before training (stale weights).
    saved_from = copy.deepcopy(model) if FAULTS.active("adapter_save_stale") else model
    states: dict[str, AdapterState] = {}
    for job in jobs:
        job.out_dir.mkdir(parents=True, exist_ok=True)
        named = _adapter_params(model, job.name)
        optimizer = make_optimizer([p for _, p in named], cfg)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, cfg))
        log = JsonlLog(job.out_dir / LOG_NAME, append=False)
        params = [p for _, p in named]
        log.write(
            {
                "kind": "start",
                "step": 0,
                "resume": False,
                "config": cfg.to_dict(),
                "trainable_params": sum(p.numel() for p in params),
            }
        )
        states[job.name] = AdapterState(job, params, [n for n, _ in named], optimizer, scheduler, log)
    order: list[str] = []
    try:
        if schedule == "lowest_val_first":
            for st in states.values():
                st.val_losses[0] = _val(model, st, cfg, device)
                st.log.write({"kind": "val", "step": 0, "val_loss": st.val_losses[0]})
        turn = 0
        while any(st.step < cfg.steps for st in states.values()):
            pending = [st for st in states.values() if st.step < cfg.steps]
            if schedule == "synchronized":
                tick = pending
            elif schedule == "round_robin":  # every adapter runs cfg.steps, so the next in turn is pending
                tick = [states[jobs[turn % len(jobs)].name]]
                turn += 1
            else:
                tick = [min(pending, key=lambda st: (st.latest_val, st.job.name))]
            for st in tick:
                _one_step(model, st, cfg, device)
                order.append(st.job.name)
                done = st.step
                if (cfg.eval_every and done % cfg.eval_every == 0) or done == cfg.steps:
                    st.val_losses[done] = _val(model, st, cfg, device)
                    st.log.write({"kind": "val", "step": done, "val_loss": st.val_losses[done]})
                if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
                    st.checkpoint = _save(saved_from, st, cfg)
                    st.log.write({"kind": "checkpoint", "step": done, "path": str(st.checkpoint)})
    finally:
        for st in states.values():
            st.log.close()
    return MultiAdapterResult(model, order, states)


def finetune_adapters(
    base: str | Path,
    runs: Sequence[tuple[Path, Path]],
    cfg: TrainConfig,
    *,
    method: Literal["lora", "qlora"] = "lora",
    settings: LoraSettings | None = None,
    schedule: Schedule = "round_robin",
    nf4: NF4Config | None = None,
    device: str | None = None,
    manifest: Mapping[str, Any] | None = None,
    template: str = "auto",
) -> MultiAdapterResult:
    """One adapter per ``(instruction JSONL, adapter folder)`` in ``runs``, all on the checkpoint
    ``base`` loaded once (and for ``qlora`` quantized once): each adapter's data is tokenized with the
    base's tokenizer in the chat ``template`` resolved for it, and its folder's manifest records the
    base's identity (its weights before any adapter or NF4 touched them) and the adapter's name."""
    if method not in ("lora", "qlora"):
        raise ValueError(f"adapters train with lora or qlora, not {method!r}")
    nf4 = nf4 or NF4Config()
    dev = resolve_device(device)
    loaded = load_checkpoint(Path(base), device=nf4_device(dev) if method == "qlora" else dev)
    identity = base_identity(loaded.model)  # before any adapter or NF4 touches the base
    chosen = resolve_template(template, loaded.tokenizer)

    def job(data_path: Path, out_dir: Path) -> AdapterJob:
        used = "docstring" if FAULTS.active("multi_adapter_template_ignored") else chosen  # pragma: no mutate
        pairs = tokenize_pairs(read_examples(data_path), loaded.tokenizer, cfg.seq_len, template=used)
        record = {
            **(manifest or {}),
            "kind": "finetune",
            "method": method,
            "base": str(base),
            **identity,
            "template": chosen,
            "adapter": out_dir.name,
            **nf4_manifest(nf4, method),
        }
        return AdapterJob(out_dir.name, pairs, out_dir, settings or LoraSettings(), record)

    jobs = [job(d, o) for d, o in runs]
    return train_adapters(loaded.model, jobs, cfg, schedule=schedule, quantize=method == "qlora", nf4=nf4)
