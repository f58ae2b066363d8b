"""What ``python -m engine bench`` reports, against what the bricks did and formulas written out here.

The bench's times vary from run to run, but everything around them does not: which bricks ran
and how many repetitions, the rate each time implies (items per call over the median), the sizes a
brick ran at, the memory it planned for and the table printed from the JSON.  The commands run
through Typer's test runner exactly as ``python -m engine bench`` runs them; the parameter counts
and the memory of every brick are computed here from the architecture alone (no engine code).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

from engine.checkpoint import save_checkpoint
from engine.config import ModelConfig, preset
from engine.tokenizer import EngineTokenizer
from falsifiers.shared.cli import cli_runner
from falsifiers.shared.parameter_counts import lora_count, parameter_count, table_cells
from falsifiers.shared.realistic_models import variant_config
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

GIB = 2**30
BRICKS = ("lora_forward", "optimizer", "loss", "train_step", "ttft", "throughput", "batch")
LORA_BRICKS = ("lora_forward", "optimizer", "train_step")
BATCH_SIZES = (1, 2, 4, 8)  # the command's batch brick decodes at each of these
COMMON = (
    "preset",
    "hidden_size",
    "num_hidden_layers",
    "device",
    "batch_size",
    "seq_len",
    "qlora",
    "min_rep_s",
    "threads",
)


def bench_config(cfg: ModelConfig) -> ModelConfig:
    """The bricks round the MLP width up to a multiple of 64 (NF4 blocks on CPU)."""
    return cfg.replace(intermediate_size=-(-cfg.intermediate_size // 64) * 64)


def expected_memory(name: str, cfg: ModelConfig, batch: int, seq: int, new: int, r: int = 8) -> dict[str, float]:
    """The brick's planned memory in GiB by part (fp32 everywhere, a LoRA base held in fp32)."""
    params, lora = parameter_count(cfg), lora_count(cfg, r)
    parts: dict[str, float] = {}
    logits = batch * seq * cfg.vocab_size * 4
    if name in LORA_BRICKS:
        parts["weights"] = (params + lora) * 4 / GIB
        if name != "lora_forward":
            parts["gradients_and_adamw"] = 3 * lora * 4 / GIB  # a gradient and two AdamW moments
            parts["activations"] = batch * seq * cfg.hidden_size * cfg.num_hidden_layers * 16 * 4 / GIB
            parts["logits"] = 3 * logits / GIB
        else:
            parts["logits"] = logits / GIB
    elif name == "loss":
        parts["logits"] = 2 * logits / GIB
    else:
        rows = max(BATCH_SIZES) if name == "batch" else batch
        length = seq + (1 if name == "ttft" else new)
        head_dim = cfg.hidden_size // cfg.num_attention_heads
        parts["weights"] = params * 4 / GIB
        parts["kv_cache"] = 2 * cfg.num_hidden_layers * rows * length * cfg.num_key_value_heads * head_dim * 4 / GIB
        parts["logits"] = rows * seq * cfg.vocab_size * 4 / GIB
    parts["total"] = sum(parts.values())
    parts["parameters"] = float(params)
    return parts


def _close(a: Any, b: float, rel: float = 1e-9) -> bool:
    return isinstance(a, int | float) and math.isclose(float(a), b, rel_tol=rel, abs_tol=1e-15)


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by brick name."""
    return {cells[0]: cells for line in stdout.splitlines() if (cells := table_cells(line)) and cells[0] in BRICKS}


@checker(
    observes=[
        "exit_code",
        "bricks_reported",
        "fields_compared",
        "field_mismatches",
        "rates_compared",
        "rate_mismatches",
        "table_rows_matching",
        "threads_restored",
    ],
    ids=["FALSIFY-BREP-001"],
)
def bench_reports_what_ran(
    tmp_path: Path, batch_size: int = 2, seq_len: int = 8, new_tokens: int = 2, reps: int = 3, warmup: int = 1
) -> dict[str, Any]:
    """``bench --brick all --json`` on the tiny preset: every brick, its repetitions, rate, sizes and
    planned memory against the settings and formulas, the printed table against the JSON."""
    out = fresh_dir(tmp_path, "bench-")
    threads_before = torch.get_num_threads()
    result = cli_runner()(
        "bench", "--brick", "all", "--preset", "tiny", "--batch-size", batch_size, "--seq-len", seq_len,
        "--new-tokens", new_tokens, "--reps", reps, "--warmup", warmup, "--min-rep-ms", 1, "--threads", 1,
        "--device", "cpu", "--json", out / "bench.json",
    )  # fmt: skip
    (out / "stdout.txt").write_text(result.stdout)
    report: dict[str, Any] = {
        "exit_code": result.exit_code,
        "threads_restored": torch.get_num_threads() == threads_before,
    }
    if result.exit_code != 0:
        return report | {"bricks_reported": 0, "fields_compared": 0, "field_mismatches": 1}
    cfg = bench_config(preset("tiny"))
    records = json.loads((out / "bench.json").read_text())
    names = [r.get("name") for r in records]
    compared = mismatches = rates = rate_mismatches = 0
    lora = lora_count(cfg, 8)
    items: dict[str, tuple[float | None, str | None]] = {
        "lora_forward": (batch_size * seq_len, "tokens/s"),
        "optimizer": (lora, "params/s"),
        "loss": (batch_size * seq_len, "tokens/s"),
        "train_step": (batch_size * seq_len, "tokens/s"),
        "ttft": (None, None),
        "throughput": (batch_size * new_tokens, "new tokens/s"),
        "batch": (max(BATCH_SIZES) * new_tokens, "new tokens/s"),
    }
    for rec in records:
        name, extra = rec.get("name"), rec.get("extra", {})
        rows = max(BATCH_SIZES) if name == "batch" else batch_size
        memory = expected_memory(str(name), cfg, batch_size, seq_len, new_tokens)
        want: dict[str, Any] = {
            "reps": reps, "warmup": warmup, "not_run": None,
            "extra.preset": "tiny", "extra.hidden_size": cfg.hidden_size,
            "extra.num_hidden_layers": cfg.num_hidden_layers, "extra.device": "cpu", "extra.batch_size": rows,
            "extra.seq_len": seq_len, "extra.qlora": False, "extra.min_rep_s": 0.001, "extra.threads": 1,
            "extra.memory_gib": round(memory["total"], 4), "rate_unit": items[str(name)][1],
        }  # fmt: skip
        if name == "loss":
            want["extra.vocab_size"] = cfg.vocab_size
        if name == "ttft":
            want["extra.prompt_tokens"] = seq_len
        if name in ("throughput", "batch"):
            want["extra.new_tokens"] = new_tokens
        for key, value in want.items():
            got = extra.get(key[6:], "<missing>") if key.startswith("extra.") else rec.get(key, "<missing>")
            compared += 1
            same = got == value and type(got) is type(value)  # True is not 1
            mismatches += not (same or (key.endswith("gib") and _close(got, value)))
        times = [rec.get(k) for k in ("min_s", "median_s", "mean_s", "cv")]
        ok = all(isinstance(t, float) and t >= 0 for t in times)
        ok = ok and rec["min_s"] <= rec["median_s"] and rec["min_s"] <= rec["mean_s"] and rec["min_s"] > 0
        ok = ok and isinstance(rec.get("calls_per_rep"), int) and rec["calls_per_rep"] >= 1
        ok = ok and extra.get("shortest_rep_s", 0) >= 0.001 and isinstance(extra.get("cpu_cv"), float)
        compared += 1
        mismatches += not ok
        per_call, _ = items[str(name)]
        rates += 1
        if per_call is None:
            rate_mismatches += rec.get("rate") is not None
        else:
            rate_mismatches += not (ok and _close(rec.get("rate"), per_call / rec["median_s"]))
        if name == "batch":
            by = extra.get("by_batch", {})
            compared += 1
            mismatches += sorted(by) != sorted(str(b) for b in BATCH_SIZES)
            for b in BATCH_SIZES:
                entry = by.get(str(b), {})
                rates += 1
                rate_mismatches += not _close(
                    entry.get("tokens_per_s"), b * new_tokens / entry.get("median_s", math.nan)
                )
            compared += 2
            mismatches += not _close(
                extra.get("worst_cv"), max((v.get("cv", math.nan) for v in by.values()), default=-1)
            )
            mismatches += not _close(rec.get("median_s"), by.get(str(max(BATCH_SIZES)), {}).get("median_s", math.nan))
    table = _rows(result.stdout)
    matching = 0
    for rec in records:
        row = table.get(rec["name"], [])
        rate = rec.get("rate")
        cpu_cv = rec["extra"].get("cpu_cv")
        expected_row = [
            rec["name"], str(rec["calls_per_rep"]), f"{rec['min_s'] * 1e3:.3f}", f"{rec['median_s'] * 1e3:.3f}",
            f"{rec['cv'] * 100:.1f}", f"{cpu_cv * 100:.1f}" if cpu_cv is not None else "-",
            f"{rate:,.0f} {rec['rate_unit']}" if rate is not None else "-",
        ]  # fmt: skip
        matching += row == expected_row
    return report | {
        "bricks_reported": len(records) if names == list(BRICKS) else -len(records),
        "fields_compared": compared,
        "field_mismatches": mismatches,
        "rates_compared": rates,
        "rate_mismatches": rate_mismatches,
        "table_rows_matching": matching,
    }


@checker(
    observes=[
        "exit_code",
        "bricks_not_run",
        "parts_compared",
        "part_mismatches",
        "reasons_matching",
        "table_rows_matching",
    ],
    ids=["FALSIFY-BREP-002"],
)
def bench_plans_memory(
    tmp_path: Path, engine_tokenizer: EngineTokenizer, tiny_model_factory: Any, batch_size: int = 3, seq_len: int = 16
) -> dict[str, Any]:
    """``bench --brick all --max-memory-gib 0``, sized by the tiny preset and by a tied qwen2
    checkpoint: nothing is timed, and every brick reports its planned memory part by part, its
    parameters and FLOPs per token, the limit and the reason, as the formulas here give them."""

    out = fresh_dir(tmp_path, "bench-plan-")
    qwen2 = variant_config("qwen2", intermediate_size=100)
    save_checkpoint(out / "qwen2.safetensors", tiny_model_factory(0, config=qwen2), engine_tokenizer)
    report: dict[str, Any] = {"exit_code": 0, "bricks_not_run": 0, "parts_compared": 0, "part_mismatches": 0}
    report |= {"reasons_matching": 0, "table_rows_matching": 0}
    new_tokens = 16  # the command's default
    for label, cfg, source in (("tiny", preset("tiny"), []), ("checkpoint", qwen2, [out / "qwen2.safetensors"])):
        path = out / f"{label}.json"
        result = cli_runner()(
            "bench", *source, "--brick", "all", "--batch-size", batch_size, "--seq-len", seq_len,
            "--max-memory-gib", 0, "--device", "cpu", "--json", path,
        )  # fmt: skip
        (out / f"{label}.stdout.txt").write_text(result.stdout)
        report["exit_code"] = max(report["exit_code"], result.exit_code)
        if result.exit_code != 0:
            continue
        sized = bench_config(cfg)
        table = _rows(result.stdout)
        for rec in json.loads(path.read_text()):
            name, extra = rec["name"], rec["extra"]
            memory = expected_memory(name, sized, batch_size, seq_len, new_tokens)
            timed = [rec[k] for k in ("min_s", "median_s", "mean_s", "cv", "rate")]
            report["bricks_not_run"] += bool(rec["not_run"]) and rec["reps"] == 0 and timed == [None] * 5
            got = extra.get("memory_gib", {})
            report["parts_compared"] += len(memory) + 6
            report["part_mismatches"] += sorted(got) != sorted(memory)
            report["part_mismatches"] += sum(not _close(got.get(k), v) for k, v in memory.items())
            want = {
                "preset": label, "device": "cpu", "hidden_size": sized.hidden_size,
                "num_hidden_layers": sized.num_hidden_layers, "max_memory_gib": 0.0,
            }  # fmt: skip
            report["part_mismatches"] += sum(extra.get(k) != v for k, v in want.items())
            report["part_mismatches"] += not _close(extra.get("flops_per_token"), 2 * memory["parameters"])
            reason = (
                f"needs about {memory['total']:.1f} GiB, over the 0.0 GiB this run may use; computed on meta: "
                f"{memory['parameters']:.3g} parameters, {2 * memory['parameters']:.3g} FLOPs per token forward"
            )
            report["reasons_matching"] += rec["not_run"] == reason
            report["table_rows_matching"] += table.get(name) == [name, "-", "-", "-", "-", "-", f"not run: {reason}"]
    return report
