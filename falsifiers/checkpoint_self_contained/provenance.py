"""Which runtime wrote a checkpoint: the manifest's ``versions`` against the running interpreter.

A checkpoint that behaves differently on another machine is first asked which Python, torch,
safetensors and tokenizers wrote it.  The reference is the running interpreter as the packaging
metadata names it (``importlib.metadata``, ``platform``), not the modules' own ``__version__``.
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import version
from pathlib import Path
from typing import Any

from safetensors import safe_open

from falsifiers.shared.cli import cli_runner
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PACKAGES = ("torch", "safetensors", "tokenizers")


@checker(observes=["checkpoints", "exit_codes_nonzero", "versions_differing"], ids=["FALSIFY-CKPT-007"])
def checkpoints_name_their_runtime(tmp_path: Path) -> dict[str, Any]:
    """``pretrain`` (tiny preset, 2 steps), a full ``finetune`` of its checkpoint (2 steps), and an
    ``import`` of its Hugging Face export, all through ``python -m engine``: each checkpoint's
    manifest names the runtime running them."""

    work = fresh_dir(tmp_path, "provenance-")
    cli = cli_runner()
    want = {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}
    pairs = work / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"prompt": f"Say {i}.", "response": str(i)}) + "\n" for i in range(8)))
    common = ["--steps", 2, "--batch-size", 2, "--seq-len", 32, "--eval-every", 0, "--save-every", 2, "--device", "cpu"]
    trained = work / "pretrain" / "step-000002" / "model.safetensors"
    requests = [
        ("pretrain", work / "pretrain", "--preset", "tiny", *common),
        ("finetune", trained, work / "full", "--method", "full"),
        ("import", work / "exported", work / "imported.safetensors"),  # an HF folder the engine wrote
    ]
    out = {"checkpoints": 0, "exit_codes_nonzero": 0, "versions_differing": 0}
    for args in requests:
        extra = ["--data", pairs, *common] if args[0] == "finetune" else []
        if args[0] == "import":
            cli("export", trained, "-f", "hf", "-o", work / "exported")
        result = cli(*args, *extra)
        if result.exit_code != 0:
            out["exit_codes_nonzero"] += 1
            continue
        checkpoint = Path(json.loads(result.stdout)["checkpoint"])
        checkpoint = checkpoint if checkpoint.suffix == ".safetensors" else checkpoint / "model.safetensors"
        with safe_open(str(checkpoint), framework="pt") as fh:
            manifest = json.loads(fh.metadata()["manifest"])
        out["checkpoints"] += 1
        out["versions_differing"] += manifest.get("versions") != want
    return out
