"""Errors the engine raises for bad input: each names the problem, never a deep torch traceback."""

from __future__ import annotations


class EngineError(Exception):
    """Base of the engine's user-facing errors (the CLI turns them into exit code 2)."""


class TokenizerError(EngineError, ValueError):
    """A tokenizer document or vocabulary is unusable."""


class CheckpointError(EngineError, ValueError):
    """A checkpoint file is missing, truncated, corrupt, of the wrong type, or inconsistent."""


class GenerationError(EngineError, ValueError):
    """Generation arguments are invalid (a prompt longer than the context window, a bad top_p …)."""


class ExportError(EngineError, ValueError):
    """An export (Hugging Face folder, GGUF) cannot be written or an import cannot be read."""
