"""An import asked for a dtype gives the file's weights in that dtype.

``import_gguf`` and ``import_hf`` take ``dtype`` (None: the file's own, float32 here).  A tiny
llama and a tied qwen2 are exported as float32 GGUF and HF folders; each is imported with no
dtype, float16 and bfloat16.  Every parameter must be of the dtype asked for and equal the float32
import's parameter cast to it (``Tensor.to``, the reference), and the tied head must still be the
embedding.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import LoadedCheckpoint
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.hf_interop import export_hf, import_hf
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.realistic_models import realistic_model
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

DTYPES = (torch.float16, torch.bfloat16)


@checker(
    observes=["imports", "plain_dtypes", "wrong_dtype", "values_differing", "heads_untied"],
    ids=["FALSIFY-IO-017"],
)
def imports_in_the_dtype_asked(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any
) -> dict[str, Any]:
    """GGUF (f32) and HF exports of a llama and a tied qwen2, imported with no dtype, float16 and bfloat16."""

    work = fresh_dir(tmp_path, "import-dtype-")
    out: dict[str, Any] = {"imports": 0, "plain_dtypes": set(), "wrong_dtype": 0, "values_differing": 0}
    out["heads_untied"] = 0
    for name in ("llama", "qwen2"):
        model = realistic_model(tiny_model_factory, 0, name)
        files: dict[str, tuple[Path, Callable[..., LoadedCheckpoint]]] = {
            "gguf": (export_gguf(model, engine_tokenizer, work / f"{name}.gguf", "f32"), import_gguf),
            "hf": (export_hf(model, engine_tokenizer, work / f"{name}-hf"), import_hf),
        }
        for path, load in files.values():
            plain = dict(load(path).model.named_parameters())
            out["plain_dtypes"] |= {str(p.dtype) for p in plain.values()}
            for dtype in DTYPES:
                imported = load(path, dtype=dtype).model
                out["imports"] += 1
                params = dict(imported.named_parameters())
                out["wrong_dtype"] += sum(p.dtype != dtype for p in params.values())
                out["values_differing"] += sum(
                    not torch.equal(p.detach(), plain[k].detach().to(dtype)) for k, p in params.items()
                )
                if imported.config.tie_word_embeddings:
                    out["heads_untied"] += imported.lm_head.weight is not imported.model.embed_tokens.weight
    out["plain_dtypes"] = sorted(out["plain_dtypes"])
    return out
