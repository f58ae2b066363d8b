"""What a GGUF export writes beside the weights' values, and what it refuses, word for word.

FALSIFY-EXPORT-008 reads the architecture and tokenizer keys, and FALSIFY-EXPORT-014 the EOS
keys.  This reads the rest a user meets: the model's name in ``general.name`` (gguf-py's own
reader), an fp16 or bf16 checkpoint written at ``f32`` (every tensor F32 and equal to the file of
the same model upcast first, as ``f32`` promises), the warning for EOS ids beyond the three keys
GGUF has (its text; not the line it points at, which mutation testing's dispatch frames move), and
the refusals of a dtype, a
folder for a path, a tokenizer whose pre-tokenizer llama.cpp does not know, a vocabulary larger
than the model's, and parameter names llama.cpp has no name for.
"""

from __future__ import annotations

import warnings
from functools import partial
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch
from tokenizers import Tokenizer, pre_tokenizers

from engine.errors import ExportError
from engine.gguf_export import GgufEosWarning, export_gguf, gguf_vocab
from engine.gguf_layout import gguf_tensor_name
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

EXTRA_EOS = 2  # EOS ids beyond the three GGUF keys


def _tensors(path: Path) -> dict[str, tuple[str, np.ndarray]]:
    reader = gguf.GGUFReader(str(path))
    return {t.name: (t.tensor_type.name, np.array(t.data)) for t in reader.tensors}


def _name(path: Path) -> Any:
    field = gguf.GGUFReader(str(path)).get_field("general.name")
    return None if field is None else field.contents()


@checker(
    observes=[
        "names",
        "half_files",
        "half_tensor_types",
        "half_tensors_differing",
        "warnings_as_written",
        "refusals_differing",
        "files_left",
    ],
    ids=["FALSIFY-EXPORT-016"],
)
def gguf_export_edges(tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any) -> dict[str, Any]:
    """A tiny Llama exported at f32 as it is, in fp16 and in bf16, and upcast from each; the same
    model naming two EOS ids more than GGUF has keys for; six requests export must refuse."""
    work = fresh_dir(tmp_path, "gguf-edges-")
    model = tiny_model_factory(0).eval()
    out: dict[str, Any] = {"names": [], "half_files": 0, "half_tensor_types": [], "half_tensors_differing": []}
    path = export_gguf(model, engine_tokenizer, work / "f32.gguf")
    out["names"].append(_name(path))
    for dtype in (torch.float16, torch.bfloat16):
        half = tiny_model_factory(0).to(dtype).eval()
        label = str(dtype).removeprefix("torch.")
        try:
            written = export_gguf(half, engine_tokenizer, work / f"{label}.gguf", "f32")
        except (TypeError, ValueError) as exc:  # numpy has no bfloat16: what a file kept half would meet
            out["half_tensors_differing"].append(f"{label}: not written: {exc}")
            continue
        upcast = export_gguf(half.float(), engine_tokenizer, work / f"{label}-upcast.gguf", "f32")
        out["names"].append(_name(written))
        got, want = _tensors(written), _tensors(upcast)
        out["half_files"] += 1
        out["half_tensor_types"] = sorted({*out["half_tensor_types"], *(t for t, _ in got.values())})
        out["half_tensors_differing"] += [
            f"{label}:{n}"
            for n in sorted(got.keys() | want.keys())
            if n not in got or n not in want or not np.array_equal(got[n][1], want[n][1])
        ]

    eos = [engine_tokenizer.eos_id, *range(3, 6 + EXTRA_EOS - 1)]
    model.config = model.config.replace(eos_token_id=tuple(eos))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_gguf(model, engine_tokenizer, work / "eos.gguf")
    warned = [w for w in caught if issubclass(w.category, GgufEosWarning)]
    out["warnings_as_written"] = [
        str(w.message) == f"GGUF has three end-of-generation keys (eos, eot, eom): {eos[3:]} of the model's EOS ids "
        f"{eos} are not written, and llama.cpp will not stop on them"
        for w in warned
    ]

    other_pre = Tokenizer.from_str(engine_tokenizer.hf_json())
    other_pre.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    known = "default, gpt-2, llama-bpe, llama3, qwen2, smollm"
    folder = fresh_dir(tmp_path, "gguf-edges-folder-")
    before = sorted(p.name for p in work.iterdir())
    out["refusals_differing"] = refusals_differing(
        [
            (
                partial(export_gguf, model, engine_tokenizer, work / "bf16-file.gguf", "bf16"),  # type: ignore[arg-type]
                ExportError,
                "GGUF dtype must be one of f32, f16, q8_0, q4_0, got 'bf16'",
            ),
            (
                partial(export_gguf, model, engine_tokenizer, folder),
                ExportError,
                f"{folder} is a directory; give a .gguf file path",
            ),
            (
                partial(export_gguf, model, engine_tokenizer.with_backend(other_pre), work / "pre.gguf"),
                ExportError,
                f"the tokenizer's pre-tokenizer has no llama.cpp equivalent (known: {known}); "
                "llama.cpp would give other token ids",
            ),
            (
                partial(gguf_vocab, engine_tokenizer, engine_tokenizer.vocab_size - 1),
                ExportError,
                f"tokenizer has {engine_tokenizer.vocab_size} tokens but vocab_size is "
                f"{engine_tokenizer.vocab_size - 1}",
            ),
            *(
                (partial(gguf_tensor_name, name), ExportError, f"no GGUF name for tensor `{name}`")
                for name in ("decoder.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.router.weight")
            ),
        ]
    )
    out["files_left"] = sorted({p.name for p in work.iterdir()} - set(before)) + sorted(
        p.name for p in folder.iterdir()
    )
    return out
