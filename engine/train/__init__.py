"""Training: the loop (:mod:`engine.train.loop`), its state on disk (:mod:`engine.train.state`)
and the tasks it runs (:mod:`engine.train.tasks`), pretraining and fine-tuning; distillation plugs
its own task into the same loop (:mod:`engine.distill`).

What differs between the tasks (the model, where a batch comes from, how the loss is computed,
what a checkpoint holds) is a :class:`TrainingTask`; the loop owns the rest: AdamW, linear warm-up
then cosine decay, gradient clipping, periodic validation loss, a checkpoint folder every N steps,
a JSONL log, the NaN/Inf guard and resume.  The names below are the package's public interface.
"""

from __future__ import annotations

from engine.train.loop import (
    NonFiniteLossError,
    TrainConfig,
    TrainingTask,
    TrainResult,
    clip_grad_norm,
    lr_factor,
    make_optimizer,
    mean_loss,
    nan_fault_step,
    run_training,
    save_training_checkpoint,
    trainable_named_parameters,
)
from engine.train.state import (
    LATEST_NAME,
    LOG_NAME,
    STATE_JSON,
    STATE_TENSORS,
    JsonlLog,
    ResumeError,
    latest_checkpoint,
    read_log,
    state_from_files,
    state_to_files,
    write_json_atomic,
)
from engine.train.tasks import (
    FinetuneTask,
    IncompatibleInitError,
    PretrainTask,
    WholeModelTask,
    architecture_differences,
    finetune,
    nf4_manifest,
    pretrain,
)

__all__ = [
    "LATEST_NAME",
    "LOG_NAME",
    "STATE_JSON",
    "STATE_TENSORS",
    "FinetuneTask",
    "IncompatibleInitError",
    "JsonlLog",
    "NonFiniteLossError",
    "PretrainTask",
    "ResumeError",
    "TrainConfig",
    "TrainResult",
    "TrainingTask",
    "WholeModelTask",
    "architecture_differences",
    "clip_grad_norm",
    "finetune",
    "latest_checkpoint",
    "lr_factor",
    "make_optimizer",
    "mean_loss",
    "nan_fault_step",
    "nf4_manifest",
    "pretrain",
    "read_log",
    "run_training",
    "save_training_checkpoint",
    "state_from_files",
    "state_to_files",
    "trainable_named_parameters",
    "write_json_atomic",
]
