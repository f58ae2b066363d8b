"""Errors the engine raises for bad input: each names the problem, never a deep torch traceback."""

from __future__ import annotations

from pathlib import Path

from engine.faults import FAULTS


class EngineError(Exception):
    """Base of the engine's user-facing errors (the CLI turns them into exit code 2)."""


class TokenizerError(EngineError, ValueError):
    """A tokenizer document or vocabulary is unusable."""


class CheckpointError(EngineError, ValueError):
    """A checkpoint file is missing, truncated, corrupt, of the wrong type, or inconsistent."""


class GenerationError(EngineError, ValueError):
    """Generation arguments are invalid (a prompt longer than the context window, a bad top_p …)."""


class BlocksError(EngineError, ValueError):
    """A model that runs a GGUF file's quantized blocks was asked for float weights it does not hold."""


class ExportError(EngineError, ValueError):
    """An export (Hugging Face folder, GGUF) cannot be written or an import cannot be read."""


class NonFiniteLossError(EngineError, FloatingPointError):
    """Training stopped at a NaN/Inf loss or gradient; the last good checkpoint is kept."""

    def __init__(self, step: int, what: str, value: float, last_checkpoint: Path | None) -> None:
        self.step, self.what, self.value, self.last_checkpoint = step, what, value, last_checkpoint
        kept = f"last good checkpoint kept at {last_checkpoint}" if last_checkpoint else "no checkpoint was written yet"
        if FAULTS.active("nonfinite_stop_message_without_step"):  # the defect: the stop names no step
            super().__init__(f"{what} is {value}; training stopped before the update ({kept})")  # pragma: no mutate
            return  # pragma: no mutate
        super().__init__(f"step {step}: {what} is {value}; training stopped before the update ({kept})")
