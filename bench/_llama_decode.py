"""Greedy decoding of several prompts at once in llama.cpp, through its own batch API.

llama-cpp-python's ``Llama`` decodes one sequence; the speed bench compares batch 4 too, so this
drives llama.cpp's C API (the package's low-level bindings): one context holding ``sequences``
sequences in one KV cache, every prompt's tokens in one ``llama_decode`` call, then one call per
step with each sequence's next token.  The logits are llama.cpp's own (Q x Q8 arithmetic on the
file's blocks); the tokens are their argmax, as the engine's greedy decoding takes.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

_QUIET: list[Any] = []  # the log callback: llama.cpp keeps its pointer for the process's life


def _bindings() -> ModuleType:
    # optional: llama-cpp-python is installed for the real-model contracts and this bench only
    import llama_cpp

    if not _QUIET:
        # llama.cpp logs every tensor it loads to stderr; the bench prints its own lines only
        _QUIET.append(llama_cpp.llama_log_callback(lambda level, text, data: None))
        llama_cpp.llama_log_set(_QUIET[0], ctypes.c_void_p(0))
    return llama_cpp


class LlamaBatchDecoder:
    """llama.cpp's greedy decoding of up to ``sequences`` prompts side by side, on the GGUF at
    ``path``; ``n_ctx`` covers every sequence's prompt and new tokens together (one shared cache)."""

    def __init__(self, path: Path, sequences: int, n_ctx: int, threads: int = 1) -> None:
        lib = _bindings()
        self._lib = lib
        lib.llama_backend_init()
        self._model = lib.llama_model_load_from_file(str(path).encode(), lib.llama_model_default_params())
        if not self._model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_ctx  # every prompt in one call
        params.n_seq_max = sequences
        params.kv_unified = True  # one cache of n_ctx cells for all sequences, not n_ctx / sequences each
        params.n_threads = params.n_threads_batch = threads
        params.no_perf = True
        self._ctx = lib.llama_init_from_model(self._model, params)
        if not self._ctx:
            raise RuntimeError(f"llama.cpp could not make a context of {n_ctx} tokens for {sequences} sequences")
        self.sequences, self.n_ctx = sequences, n_ctx
        self.vocab = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self._model)))
        self._batch = lib.llama_batch_init(n_ctx, 0, sequences)

    def set_threads(self, threads: int) -> None:
        self._lib.llama_set_n_threads(self._ctx, threads, threads)

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of ``(token, position, sequence, wants logits)`` entries."""
        batch = self._batch
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, int(logits)
        batch.n_tokens = len(entries)
        code = self._lib.llama_decode(self._ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode failed with {code} on a batch of {len(entries)} tokens")

    def _argmax(self, index: int) -> int:
        logits = np.ctypeslib.as_array(self._lib.llama_get_logits_ith(self._ctx, index), shape=(self.vocab,))
        return int(logits.argmax())

    def greedy(self, prompts: list[list[int]], new_tokens: int) -> list[list[int]]:
        """Each prompt's ``new_tokens`` greedy continuation, all sequences decoded together."""
        if not 0 < len(prompts) <= self.sequences:
            raise ValueError(f"{len(prompts)} prompts for a context of {self.sequences} sequences")
        if sum(len(p) for p in prompts) + len(prompts) * new_tokens > self.n_ctx:
            raise ValueError(f"{len(prompts)} prompts and {new_tokens} new tokens each overflow {self.n_ctx} cells")
        self._lib.llama_memory_clear(self._lib.llama_get_memory(self._ctx), True)
        entries = [(t, pos, s, pos == len(p) - 1) for s, p in enumerate(prompts) for pos, t in enumerate(p)]
        self._decode(entries)
        last = [i for i, entry in enumerate(entries) if entry[3]]
        out: list[list[int]] = [[self._argmax(i)] for i in last]
        for step in range(1, new_tokens):
            self._decode([(out[s][-1], len(p) + step - 1, s, True) for s, p in enumerate(prompts)])
            for s in range(len(prompts)):
                out[s].append(self._argmax(s))
        return out

    def close(self) -> None:
        lib = self._lib
        lib.llama_batch_free(self._batch)
        lib.llama_free(self._ctx)
        lib.llama_model_free(self._model)

    def __enter__(self) -> LlamaBatchDecoder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
