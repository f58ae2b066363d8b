"""Shared pieces of the training checkers: fresh work folders, a fine-tune that reports instead of
raising on a non-finite step, base-tensor comparisons, and the loss-curve evidence files.

Nothing here is a checker; the checkers in ``lora``, ``qlora``, ``memory``, ``eval_mode``,
``pretrain``, ``distill`` and ``multi_adapter`` call these helpers inside their own call, so the
engine code a mutant breaks always runs while its fault is on.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.data import InstructionData, tokenize_corpus
from engine.lora import LoraSettings
from engine.tokenizer import EngineTokenizer
from engine.train import LOG_NAME, NonFiniteLossError, TrainConfig, TrainResult, finetune

PEFT_PREFIX = "base_model.model."


def instruction_subset(data: InstructionData, rows: int) -> InstructionData:
    """The first ``rows`` training rows of ``data`` (validation kept): a small fixed set."""
    if not 1 <= rows <= data.input_ids.size(0):
        raise ValueError(f"rows must be in [1, {data.input_ids.size(0)}], got {rows}")
    return InstructionData(
        data.input_ids[:rows], data.labels[:rows], data.val_input_ids, data.val_labels, f"{data.digest}[:{rows}]"
    )


@dataclass
class Run:
    """A training run as the checkers see it: the records the loop emitted, however it ended."""

    result: TrainResult | None
    records: list[dict[str, Any]] = field(default_factory=list)
    stopped: NonFiniteLossError | None = None

    @property
    def losses(self) -> list[float]:
        return [float(r["loss"]) for r in self.records if r.get("kind") == "train"]

    @property
    def step0_loss(self) -> float:
        found = [float(r["loss"]) for r in self.records if r.get("kind") == "step0"]
        return found[0] if found else float("nan")

    @property
    def nonfinite_steps(self) -> int:
        return sum(1 for r in self.records if r.get("kind") == "nonfinite")

    @property
    def model(self) -> Any:
        return self.result.extra["model"] if self.result is not None else None

    def loss_trend(self, window: int) -> dict[str, Any]:
        """The observations of a "loss decreases, stays finite" claim: the mean loss of the first
        and last ``window`` steps, the non-finite steps and the steps run."""
        losses = self.losses
        return {
            "loss_first": window_mean(losses, window, last=False),
            "loss_last": window_mean(losses, window, last=True),
            "nonfinite_steps": self.nonfinite_steps,
            "steps_run": len(losses),
        }


def run_finetune(
    base: Path,
    out_dir: Path,
    cfg: TrainConfig,
    *,
    method: str,
    lora: LoraSettings,
    data: InstructionData,
) -> Run:
    """``engine.train.finetune`` on CPU; a NaN/Inf stop is recorded in the run, not raised."""
    records: list[dict[str, Any]] = []
    try:
        result = finetune(
            base, out_dir, cfg, method=method, lora=lora, data=data, device="cpu", on_record=records.append
        )
    except NonFiniteLossError as exc:
        return Run(None, records, exc)
    return Run(result, records)


def run_log(folder: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The records of ``folder``'s log.jsonl, read as JSON lines here (only ``kind``'s when given)."""
    records = [json.loads(line) for line in (folder / LOG_NAME).read_text(encoding="utf-8").splitlines()]
    return [r for r in records if kind is None or r.get("kind") == kind]


def window_mean(values: Sequence[float], n: int, *, last: bool) -> float:
    """Mean of the first or last ``n`` values: single steps are noisy when batches differ."""
    if not values:
        return float("nan")
    part = values[-n:] if last else values[:n]
    return float(sum(part) / len(part))


def strip_peft_name(name: str) -> str:
    """A wrapped model's parameter name as the bare model names it."""
    if name.startswith(PEFT_PREFIX):
        name = name[len(PEFT_PREFIX) :]
    return name.replace(".base_layer.", ".")


def base_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every non-LoRA tensor of ``model`` (parameters and buffers), cloned, under bare-model names."""
    return {strip_peft_name(k): v.detach().clone() for k, v in model.state_dict().items() if "lora_" not in k}


def _bits(t: torch.Tensor) -> torch.Tensor:
    # bit patterns, so that NaN == NaN and -0.0 != 0.0: "unchanged" means unchanged in memory
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)


def changed_tensors(before: Mapping[str, torch.Tensor], after: Mapping[str, torch.Tensor]) -> list[str]:
    """Names present in both whose tensors differ in any bit (or shape or dtype)."""
    changed = []
    for name in sorted(set(before) & set(after)):
        a, b = before[name], after[name]
        if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(_bits(a), _bits(b)):
            changed.append(name)
    return changed


def unique_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind ``tensors``: views and shared tensors count once."""
    seen: dict[tuple[str, int], int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[(str(t.device), storage.data_ptr())] = storage.nbytes()
    return sum(seen.values())


def module_tensors(model: nn.Module) -> list[torch.Tensor]:
    """Every parameter and buffer of ``model`` (shared ones repeated; :func:`unique_bytes` dedupes)."""
    return [p.data for p in model.parameters()] + list(model.buffers())


def write_loss_evidence(
    artifacts: Path | None, runs: Mapping[str, Run], title: str, *, log_dirs: Mapping[str, Path] | None = None
) -> None:
    """Write each run's step records (JSONL) and one loss-curve PNG into ``artifacts``."""
    if artifacts is None:
        return
    artifacts.mkdir(parents=True, exist_ok=True)
    for label, run in runs.items():
        path = artifacts / f"{label}.jsonl"
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in run.records), encoding="utf-8")
    for label, folder in (log_dirs or {}).items():
        if (folder / LOG_NAME).is_file():
            shutil.copyfile(folder / LOG_NAME, artifacts / f"{label}-{LOG_NAME}")
    plot_losses(artifacts / "loss.png", {k: r.losses for k, r in runs.items()}, title)


def plot_losses(path: Path, series: Mapping[str, Sequence[float]], title: str) -> None:
    # matplotlib loads only where a plot is drawn
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib loads only where a plot is drawn
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=80)
    try:
        for label, values in series.items():
            ax.plot(range(len(values)), list(values), label=label)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (nats)")
        ax.set_title(title)
        if series:
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, metadata={"Software": None})  # no version string: stable bytes
    finally:
        plt.close(fig)


def trained_adapter(
    pretrained_init: Path, data: InstructionData, out: Path, method: str = "lora", seed: int = 0
) -> Path:
    """The run folder of an adapter fine-tuned for 2 steps on the session's init (the engine's
    ``finetune``): something other than a fresh, all-zero B for the commands that read adapters."""
    cfg = TrainConfig(steps=2, batch_size=4, seq_len=64, lr=1e-2, eval_every=0, save_every=2, seed=seed)
    return Path(finetune(pretrained_init, out, cfg, method=method, data=data).out_dir)


WORDS = ("yes", "no", "maybe", "later", "now", "never", "soon", "again", "twice", "often")


def _rows(shift: int) -> list[dict[str, str]]:
    """120 instruction pairs (12 validation rows: more batches than eval_batches' 4)."""
    return [
        {"prompt": f"say {WORDS[(i + shift) % len(WORDS)]} {i}", "response": f"return '{WORDS[i % len(WORDS)]}'"}
        for i in range(120)
    ]


TEXT = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\nprint(mean([1, 2, 3]))\n" * 40


def own_streams(engine_tokenizer: EngineTokenizer, work: Path) -> Any:
    """``TEXT`` written into ``work`` and tokenized as a pretraining corpus (a quarter validation)."""

    (work / "text.py").write_text(TEXT, encoding="utf-8")
    return tokenize_corpus(engine_tokenizer, [work / "text.py"], val_fraction=0.25)


def _log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
