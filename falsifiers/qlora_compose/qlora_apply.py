"""A QLoRA adapter is applied on the NF4 base its run recorded, not on the default one.

A QLoRA run records how it quantized its base (block size, double quantization) in its manifest.
``generate --adapter`` and ``engine.adapters.load_adapted`` must quantize the base the same way
before applying the adapter, or the adapter runs on other weights than it was trained on.  The
reference is built here without the engine's quantizer: each linear layer of the base that the
engine's documented rule quantizes (not ``lm_head``; an input width that is a multiple of the block
size) becomes a bitsandbytes ``Linear4bit`` with NF4 at the recorded settings, and PEFT's
``PeftModel.from_pretrained`` applies the adapter folder to it.  A run trained without double
quantization is the case that tells the recorded settings from the defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.adapters import find_adapter, load_adapted
from engine.checkpoint import load_checkpoint
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.training import _rows
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

PROMPT = "def f(x):"
NEW_TOKENS = 8
BLOCKSIZE = 64
SETTINGS = (
    "--steps", "2", "--save-every", "2", "--lr", "1e-2", "--rank", "4", "--batch-size", "2", "--seq-len", "32",
    "--warmup", "1", "--method", "qlora", "--no-double-quant",
)  # fmt: skip


def _nf4_base(checkpoint: Path) -> Any:
    """The checkpoint's model with every eligible linear layer in bitsandbytes' NF4, no double quantization."""
    # bitsandbytes loads only in the checkers that quantize (it probes the CPU and GPU on import)
    import bitsandbytes as bnb

    loaded = load_checkpoint(checkpoint)
    model = loaded.model
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if not isinstance(child, nn.Linear) or name == "lm_head" or child.in_features % BLOCKSIZE:
                continue
            layer: Any = bnb.nn.Linear4bit(
                child.in_features, child.out_features, bias=child.bias is not None, compute_dtype=torch.float32,
                compress_statistics=False, quant_type="nf4", device="meta",
            )  # fmt: skip
            layer.weight = bnb.nn.Params4bit(
                child.weight.detach().clone(), requires_grad=False, blocksize=BLOCKSIZE, compress_statistics=False,
                quant_type="nf4", module=layer,
            )  # fmt: skip
            if child.bias is not None:
                layer.bias = nn.Parameter(child.bias.detach().float().clone(), requires_grad=False)
            layer = layer.to("cpu")  # Params4bit quantizes on its first move
            # bitsandbytes' eval-mode AVX512-BF16 repack fails on these shapes; off, as the engine has it
            layer.support_avx512bf16_for_cpu = False
            setattr(parent, name, layer)
    return loaded


def _greedy(model: Any, ids: list[int], eos: tuple[int, ...]) -> tuple[list[int], torch.Tensor]:
    """New ids of an uncached greedy decode, and the first step's logits."""
    seq = list(ids)
    first: torch.Tensor | None = None
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            logits = model(torch.tensor([seq])).logits[0, -1].float()
            first = logits if first is None else first
            nxt = int(logits.argmax())
            seq.append(nxt)
            if nxt in eos:
                break
    assert first is not None
    return seq[len(ids) :], first


@checker(observes=["exit_codes_nonzero", "new_ids_differing", "logits_max_abs_diff"], ids=["FALSIFY-QLORA-007"])
def adapter_applied_on_its_recorded_base(pretrained_init: Path, tmp_path: Path) -> dict[str, Any]:
    """A QLoRA adapter trained without double quantization, applied by the command and by
    load_adapted, against PEFT on a bitsandbytes NF4 base quantized as the run recorded."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft import PeftModel

    work = fresh_dir(tmp_path, "qlora-apply-")
    data = work / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(0)), encoding="utf-8")
    run = cli_runner()
    trained = run("finetune", pretrained_init, work / "run", "--data", data, *SETTINGS)
    generated = run("generate", pretrained_init, "-p", PROMPT, "-n", NEW_TOKENS, "--adapter", work / "run", "--json")
    out: dict[str, Any] = {"exit_codes_nonzero": int(trained.exit_code != 0) + int(generated.exit_code != 0)}
    if out["exit_codes_nonzero"]:
        return {**out, "new_ids_differing": -1, "logits_max_abs_diff": float("inf")}
    adapter = find_adapter(work / "run")
    base = _nf4_base(pretrained_init)
    reference = PeftModel.from_pretrained(base.model, str(adapter.path)).eval()
    tok = base.tokenizer
    ids = tok.encode(PROMPT, add_bos=tok.add_bos_token)
    want, want_logits = _greedy(reference, ids, base.config.eos_ids)
    got = json.loads(generated.stdout)[0]["new_ids"]
    model, _ = load_adapted(pretrained_init, adapter)
    _, logits = _greedy(model, ids, base.config.eos_ids)
    out["new_ids_differing"] = int(got != want)
    out["logits_max_abs_diff"] = float((logits - want_logits).abs().max())
    return out
