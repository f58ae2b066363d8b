"""Training speed of the engine against ``transformers`` (+ PEFT + bitsandbytes), and the memory table.

In one process, on one device, from one set of weights:

1. pretraining tokens/s: the engine's ``DecoderLM`` against ``transformers``' ``LlamaForCausalLM``
   holding the same state dict, both in a plain loop (forward with labels, backward, grad clip,
   AdamW step) over the same batches;
2. QLoRA step time: the engine's ``prepare_qlora`` (NF4 + double quant, LoRA on q/v) against the
   standard recipe, ``from_pretrained(quantization_config=BitsAndBytesConfig(nf4, double quant))``
   then ``peft.get_peft_model`` with the same LoRA settings;
3. the memory table: fp16-base LoRA against NF4-base QLoRA (analytic and measured in a fresh
   process), and the same formulas on the Qwen2.5-7B shape.

Runs alternate (engine, transformers, engine, ...) and the best of ``--repeats`` is kept for wall
time and for process CPU time; CPU time is the steadier figure on a shared machine.  The first
step's losses of the two sides are printed to show they do the same work.

    python bench/train_speed.py [--preset small] [--batch 4] [--seq-len 64] [--steps 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import torch
from _figure import add_smoke, figure

from engine.quant import import_bnb

import_bnb()  # quiet bitsandbytes' optional-kernel warning before transformers/peft import it


from engine.config import preset  # noqa: E402
from engine.hf_interop import export_hf, hf_state_dict, to_hf_config  # noqa: E402
from engine.lora import LoraSettings, prepare_qlora  # noqa: E402
from engine.memory import MemoryEstimate, compare_lora_qlora, measure_method, memory_table, seven_b_report  # noqa: E402
from engine.model import build_model  # noqa: E402
from engine.tokenizer import cached_tokenizer  # noqa: E402
from pv.noise import cpu_seconds  # noqa: E402


@dataclass
class Best:
    wall_s: float
    cpu_s: float


def interleaved(runs: dict[str, Callable[[], None]], repeats: int) -> dict[str, Best]:
    for fn in runs.values():
        fn()  # warm-up: allocator, kernels, optimizer state creation, lazy imports
    best: dict[str, Best] = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            wall, cpu = time.perf_counter(), cpu_seconds()
            fn()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            b = best.get(name)
            best[name] = Best(wall, cpu) if b is None else Best(min(b.wall_s, wall), min(b.cpu_s, cpu))
    return best


def loop(model: Any, batches: list[torch.Tensor], kwargs_name: str) -> tuple[Callable[[], None], list[float]]:
    """A plain training loop over ``batches``; returns the runner and a list that records losses."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    losses: list[float] = []

    def run() -> None:
        for ids in batches:
            out = model(**{kwargs_name: ids, "labels": ids})
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(out.loss.detach()))

    return run, losses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4, help="training steps per timed repetition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave torch's default)")
    parser.add_argument("--skip-measured-memory", action="store_true")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    add_smoke(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.preset, args.steps, args.repeats, args.batch, args.seq_len = "tiny", 1, 1, 2, 16
        args.skip_measured_memory = True
    try:
        # the peers (PEFT, transformers) load only where they are timed
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig, LlamaConfig, LlamaForCausalLM
    except ImportError:
        print("transformers/peft are not installed (pip install -e '.[engine,test]')", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    config = preset(args.preset)
    if config.intermediate_size % 64:  # bitsandbytes' CPU NF4 kernel needs 64-aligned rows (see engine.quant)
        config = config.replace(intermediate_size=(config.intermediate_size + 63) // 64 * 64)
    if config.attention_bias:
        print("pick a llama-shaped preset (no attention bias) for the LlamaForCausalLM comparison", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    engine_model = build_model(config, device=dev)
    gen = torch.Generator().manual_seed(1)
    batches = [
        torch.randint(3, config.vocab_size, (args.batch, args.seq_len), generator=gen).to(dev)
        for _ in range(args.steps)
    ]
    tokens = args.steps * args.batch * args.seq_len
    figures: dict[str, Any] = {
        "preset": args.preset,
        "config": config.to_dict(),
        "device": str(dev),
        "batch": args.batch,
        "seq_len": args.seq_len,
        "steps": args.steps,
        "torch_threads": torch.get_num_threads(),
    }

    # --- 1. pretraining -----------------------------------------------------------------------
    hf: Any = LlamaForCausalLM(LlamaConfig(**to_hf_config(config)))
    hf = hf.to(dev)
    hf.load_state_dict({k: v.to(dev) for k, v in hf_state_dict(engine_model).items()}, strict=True)
    eng_pre = copy.deepcopy(engine_model).train()
    hf.train()
    run_e, loss_e = loop(eng_pre, batches, "input_ids")
    run_h, loss_h = loop(hf, batches, "input_ids")
    best = interleaved({"engine": run_e, "transformers": run_h}, args.repeats)
    pre = {
        "engine_tokens_per_s_wall": tokens / best["engine"].wall_s,
        "hf_tokens_per_s_wall": tokens / best["transformers"].wall_s,
        "engine_tokens_per_s_cpu": tokens / best["engine"].cpu_s,
        "hf_tokens_per_s_cpu": tokens / best["transformers"].cpu_s,
        "first_loss_engine": loss_e[0],
        "first_loss_hf": loss_h[0],
    }
    pre["ratio_wall"] = pre["engine_tokens_per_s_wall"] / pre["hf_tokens_per_s_wall"]
    pre["ratio_cpu"] = pre["engine_tokens_per_s_cpu"] / pre["hf_tokens_per_s_cpu"]
    figures["pretrain"] = pre
    del hf, eng_pre
    print(f"pretraining ({args.preset}, batch {args.batch} x {args.seq_len}, {args.steps} steps/run, {dev}):")
    print(
        f"  engine       {pre['engine_tokens_per_s_wall']:9.0f} tokens/s wall  "
        f"{pre['engine_tokens_per_s_cpu']:9.0f} tokens/s cpu"
    )
    print(
        f"  transformers {pre['hf_tokens_per_s_wall']:9.0f} tokens/s wall  "
        f"{pre['hf_tokens_per_s_cpu']:9.0f} tokens/s cpu"
    )
    print(
        f"  ratio engine/transformers: {pre['ratio_wall']:.2f}x wall, {pre['ratio_cpu']:.2f}x cpu"
        f"   (first-step loss {loss_e[0]:.6f} vs {loss_h[0]:.6f})"
    )

    # --- 2. QLoRA -------------------------------------------------------------------------------
    settings = LoraSettings(r=args.rank, alpha=2 * args.rank, targets=("q_proj", "v_proj"))
    eng_q = prepare_qlora(copy.deepcopy(engine_model), settings, device=dev).train()
    tok = cached_tokenizer(min(config.vocab_size, 2048))
    with tempfile.TemporaryDirectory() as folder:
        export_hf(engine_model, tok, folder)
        bnb_cfg = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.float32,
        )
        hf_q = AutoModelForCausalLM.from_pretrained(
            folder, quantization_config=bnb_cfg, dtype=torch.float32, device_map={"": str(dev)}
        )
    peft_q: Any = get_peft_model(
        hf_q,
        LoraConfig(
            r=settings.r, lora_alpha=int(settings.alpha), lora_dropout=0.0, target_modules=list(settings.targets)
        ),
    ).train()
    run_e, loss_e = loop(eng_q, batches, "input_ids")
    run_h, loss_h = loop(peft_q, batches, "input_ids")
    best = interleaved({"engine": run_e, "peft+bnb": run_h}, args.repeats)
    q = {
        "engine_step_s_wall": best["engine"].wall_s / args.steps,
        "hf_step_s_wall": best["peft+bnb"].wall_s / args.steps,
        "engine_step_s_cpu": best["engine"].cpu_s / args.steps,
        "hf_step_s_cpu": best["peft+bnb"].cpu_s / args.steps,
        "first_loss_engine": loss_e[0],
        "first_loss_hf": loss_h[0],
    }
    q["speedup_wall"] = q["hf_step_s_wall"] / q["engine_step_s_wall"]
    q["speedup_cpu"] = q["hf_step_s_cpu"] / q["engine_step_s_cpu"]
    figures["qlora"] = q
    del hf_q, peft_q, eng_q
    print(f"QLoRA step (NF4 + double quant, LoRA r={settings.r} on q_proj,v_proj):")
    print(f"  engine     {q['engine_step_s_wall'] * 1e3:8.1f} ms wall  {q['engine_step_s_cpu'] * 1e3:8.1f} ms cpu")
    print(f"  peft+bnb   {q['hf_step_s_wall'] * 1e3:8.1f} ms wall  {q['hf_step_s_cpu'] * 1e3:8.1f} ms cpu")
    print(
        f"  speed-up engine vs peft+bnb: {q['speedup_wall']:.2f}x wall, {q['speedup_cpu']:.2f}x cpu"
        f"   (first-step loss {loss_e[0]:.6f} vs {loss_h[0]:.6f})"
    )

    # --- 3. memory --------------------------------------------------------------------------------
    rows = compare_lora_qlora(config, settings)
    measured: dict[str, int] | None = None
    if not args.skip_measured_memory:
        lora_m = measure_method(
            config,
            "lora",
            lora=settings,
            base_dtype=torch.float16,
            device=str(dev),
            batch_size=args.batch,
            seq_len=args.seq_len,
            fresh_process=True,
        )
        qlora_m = measure_method(
            config,
            "qlora",
            lora=settings,
            device=str(dev),
            batch_size=args.batch,
            seq_len=args.seq_len,
            fresh_process=True,
        )
        measured = {
            rows[0].label: lora_m.model_bytes + lora_m.training_bytes,
            rows[1].label: qlora_m.model_bytes + qlora_m.training_bytes,
        }
        figures["memory_measured"] = {"lora_fp16": lora_m.to_dict(), "qlora_nf4": qlora_m.to_dict()}
    print(
        f"\nmemory, {args.preset} (measured = model + training-step growth, "
        f"{'RSS' if dev.type == 'cpu' else 'CUDA allocator'}):"
    )
    print(memory_table(rows, measured))
    report = seven_b_report(r=16)
    figures["memory_7b"] = report
    print(
        f"\nQwen2.5-7B shape, LoRA r=16 on q_proj,v_proj: {report['lora_params_square_formula']:,} params by "
        f"the layers*2*r*hidden*2 formula, {report['lora_params_real']:,} as PEFT builds them "
        f"(v_proj is 3584->512 under GQA)"
    )

    seven = [MemoryEstimate(**{k: v for k, v in row.items() if k != "total_bytes"}) for row in report["rows"]]
    print(memory_table(seven))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(figures, fh, indent=2, sort_keys=True, default=str)
    figure(f"pretraining engine/transformers {pre['ratio_wall']:.2f}x tokens/s wall, {pre['ratio_cpu']:.2f}x CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
