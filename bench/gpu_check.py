"""Run the engine's QLoRA and distillation paths on a CUDA GPU and print what was measured.

The same code as on CPU (device argument, no ``.cpu()`` assumptions); on a machine without CUDA
it prints ``no CUDA`` and exits 0.  Measured: NF4 layer count and quant type, QLoRA trainable set,
loss before/after, frozen base unchanged, step time, ``torch.cuda.max_memory_allocated``;
distillation from an NF4 teacher (still NF4 afterwards, no teacher gradients), its loss and step
time; the GPU's memory class.

    python bench/gpu_check.py [--preset small] [--steps 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import torch
from _figure import add_smoke, figure

from engine.checkpoint import save_checkpoint
from engine.config import preset
from engine.device import gpu_memory_class, resolve_device
from engine.distill import distill
from engine.lora import (
    LoraSettings,
    base_parameters,
    lora_parameter_names,
    prepare_qlora,
    trainable_parameter_names,
)
from engine.model import build_model
from engine.quant import import_bnb, nf4_layers, quant_type_of
from engine.tokenizer import cached_tokenizer
from engine.train import TrainConfig


def _sync() -> None:
    torch.cuda.synchronize()


def qlora_check(preset_name: str, steps: int, device: torch.device) -> dict[str, Any]:
    torch.manual_seed(0)
    config = preset(preset_name)
    model = prepare_qlora(
        build_model(config, device=device), LoraSettings(r=8, targets=("q_proj", "v_proj")), device=device
    )
    base_before = base_parameters(model)
    layers = list(nf4_layers(model))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(3, config.vocab_size, (8, 128), generator=gen).to(device)
    torch.cuda.reset_peak_memory_stats(device)
    losses, times = [], []
    model.train()
    for _ in range(steps):
        _sync()
        t0 = time.perf_counter()
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    model.eval()
    with torch.no_grad():
        model(ids)  # an eval forward: on GPU no repack exists, training must still work after it
    model.train()
    loss = model(ids, labels=ids).loss
    loss.backward()
    lora_grads = [p.grad for p in params]
    base_after = base_parameters(model)
    return {
        "nf4_layers": len(layers),
        "quant_types": sorted({quant_type_of(layer) for _, layer in layers}),
        "trainable_is_lora_only": trainable_parameter_names(model) == lora_parameter_names(model),
        "lora_dtypes": sorted({str(p.dtype) for p in params}),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "base_unchanged": all(torch.equal(base_before[k], base_after[k]) for k in base_before),
        "grads_after_eval_forward": all(g is not None and bool(g.abs().sum() > 0) for g in lora_grads),
        "step_ms_median": sorted(times)[len(times) // 2] * 1e3,
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(device),
    }


def distill_check(preset_name: str, steps: int, device: torch.device) -> dict[str, Any]:
    config = preset(preset_name)
    tok = cached_tokenizer(min(config.vocab_size, 2048))
    torch.manual_seed(0)
    teacher = build_model(config)
    student_config = config.replace(num_hidden_layers=max(1, config.num_hidden_layers // 2))
    with tempfile.TemporaryDirectory() as folder:
        teacher_path = Path(folder) / "teacher.safetensors"
        save_checkpoint(teacher_path, teacher, tok)
        cfg = TrainConfig(steps=steps, batch_size=8, seq_len=128, lr=1e-3, warmup_steps=2, eval_batches=2)
        torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        result = distill(
            teacher_path, Path(folder) / "run", cfg, student_config=student_config, quantize_teacher=True, device=device
        )
        _sync()
        seconds = time.perf_counter() - t0
    t = result.extra["teacher"]
    return {
        "teacher_nf4_layers": len(list(nf4_layers(t))),
        "teacher_frozen": all(not p.requires_grad and p.grad is None for p in t.parameters()),
        "teacher_on": str(next(t.parameters()).device),
        "loss_first": result.losses[0],
        "loss_last": result.losses[-1],
        "kl_last": result.extra["kl"],
        "ce_last": result.extra["ce"],
        "tokens_per_s": result.tokens_per_second,
        "wall_s": seconds,
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(device),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", dest="json_out", default=None)
    add_smoke(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.preset, args.steps = "tiny", 2
    if not torch.cuda.is_available():
        print("no CUDA: torch sees no GPU on this machine; nothing to check")
        figure("not run: no CUDA")
        return 0

    import_bnb()
    device = resolve_device("cuda")
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "memory_class": gpu_memory_class().to_dict(),
    }
    failures = []
    for name, check in (("qlora", qlora_check), ("distill", distill_check)):
        try:
            report[name] = check(args.preset, args.steps, device)
        except Exception as exc:  # report every path, even when one fails
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
            failures.append(name)
    text = json.dumps(report, indent=2, sort_keys=True, default=str)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
        figure(f"failed: {', '.join(failures)}")
        return 1
    figure(f"qlora and distill ran on {report['device']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
