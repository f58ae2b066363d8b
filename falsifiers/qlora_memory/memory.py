"""QLoRA memory: NF4 weight bytes against fp16, the training footprint, and measured process memory.

What is counted (FALSIFY-QMEM-001): the linear layers the engine sets out to quantize, i.e. every
``nn.Linear`` of the bare model except those ``NF4Config.skip`` names (``lm_head``) and those the
engine reports in ``model.nf4_kept_full_precision`` (on CPU, layers whose input width is not a
multiple of the blocksize).  Each is charged the bytes it really holds after
``engine.quant.quantize_model`` (packed codes, absmax, the double-quantization constants and the
code tables for a 4-bit layer; the weight tensor for a layer left as it was) against 2 bytes per
weight in fp16.
Biases and the layers left out are the same in both setups and are not counted.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from engine.checkpoint import make_manifest, save_checkpoint
from engine.checkpoint_memory import formula, measure, measure_checkpoint
from engine.config import ModelConfig
from engine.config import preset as engine_preset
from engine.lora import LoraSettings, prepare_qlora
from engine.memory import (
    MemoryEstimate,
    Method,
    compare_lora_qlora,
    linear_shapes,
    measure_method,
    memory_table,
    nf4_bytes,
    seven_b_report,
    tensor_footprint,
)
from engine.model import build_model
from engine.quant import NF4_BLOCKSIZE, NF4AlignmentWarning, NF4Config, is_nf4_linear, quantize_model
from engine.train import TrainConfig, make_optimizer, trainable_named_parameters
from falsifiers.shared.parameter_counts import (
    attention_biases,
    embedding_parameters,
    layer_linears,
    lora_count,
    parameter_count,
    table_cells,
)
from falsifiers.shared.weight_bytes import linear_weight_bytes
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

FP16_BYTES = 2


@checker(
    observes=[
        "weight_ratio_measured",
        "weight_ratio_analytic",
        "counted_layers",
        "nf4_counted_layers",
        "kept_full_precision_layers",
    ],
    ids=["FALSIFY-QMEM-001"],
)
def weight_ratio(preset: str, analytic_preset: str, double_quant: bool = True) -> dict[str, Any]:
    """Measured (``preset``, quantized by the engine) and analytic (``analytic_preset``, on meta)
    NF4 bytes / fp16 bytes over the linear weights the engine quantizes."""
    config = NF4Config(double_quant=double_quant)
    model = build_model(engine_preset(preset))
    shapes = {s.name: s for s in linear_shapes(model)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        quantize_model(model, config)
    kept = set(getattr(model, "nf4_kept_full_precision", ()))
    counted = [n for n in shapes if n.rsplit(".", 1)[-1] not in config.skip and n not in kept]
    modules = dict(model.named_modules())
    measured = sum(linear_weight_bytes(modules[n]) for n in counted)
    fp16 = sum(shapes[n].out_features * shapes[n].in_features * FP16_BYTES for n in counted)

    meta = build_model(engine_preset(analytic_preset), device="meta")
    targets = [s for s in linear_shapes(meta) if s.name.rsplit(".", 1)[-1] not in config.skip]
    nf4_total = sum(nf4_bytes(s.out_features * s.in_features, NF4_BLOCKSIZE, double_quant) for s in targets)
    fp16_total = sum(s.out_features * s.in_features * FP16_BYTES for s in targets)
    return {
        "weight_ratio_measured": measured / fp16 if fp16 else float("nan"),
        "weight_ratio_analytic": nf4_total / fp16_total,
        "counted_layers": len(counted),
        "nf4_counted_layers": sum(1 for n in counted if is_nf4_linear(modules[n])),
        "kept_full_precision_layers": len(kept),
    }


@checker(observes=["lora_params", "grad_params", "optimizer_state_params"], ids=["FALSIFY-QMEM-002"])
def training_footprint(preset: str, rank: int, steps: int, seed: int = 0) -> dict[str, Any]:
    """Run ``steps`` QLoRA updates with the engine's optimizer over the parameters the engine's
    training loop would train, then count parameter elements with a gradient and elements held in
    AdamW's state (``exp_avg`` and ``exp_avg_sq``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NF4AlignmentWarning)
        model: Any = prepare_qlora(build_model(engine_preset(preset)), LoraSettings(r=rank, alpha=2.0 * rank))
    params = [p for _, p in trainable_named_parameters(model)]
    optimizer = make_optimizer(params, TrainConfig(steps=steps, lr=1e-3, seed=seed))
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        ids = torch.randint(0, model.config.vocab_size, (2, 16), generator=gen)
        optimizer.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()
        optimizer.step()
    lora = sum(p.numel() for n, p in model.named_parameters() if ".lora_A." in n or ".lora_B." in n)
    grads = sum(p.numel() for p in model.parameters() if p.grad is not None)
    state = sum(
        t.numel()
        for entry in optimizer.state.values()
        for key, t in entry.items()
        if key in ("exp_avg", "exp_avg_sq") and isinstance(t, torch.Tensor)
    )
    return {"lora_params": lora, "grad_params": grads, "optimizer_state_params": state}


@checker(
    observes=["qlora_tensor_bytes", "lora_tensor_bytes", "qlora_model_bytes", "lora_model_bytes"],
    ids=["FALSIFY-QMEM-003"],
)
def tensor_footprint_comparison(
    preset: str, rank: int, steps: int, lora_base_dtype: str = "fp32", seed: int = 0
) -> dict[str, Any]:
    """The tensor storages a run keeps alive (model build plus ``steps`` training steps, counted by
    ``engine.memory.tensor_footprint``): QLoRA on NF4 against LoRA on a ``lora_base_dtype`` base.
    Exact byte counts, the same on every run and every machine load."""
    config = engine_preset(preset)
    settings = LoraSettings(r=rank, alpha=2.0 * rank)
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    if lora_base_dtype not in dtypes:
        raise ValueError(f"lora_base_dtype must be one of {', '.join(dtypes)}, not {lora_base_dtype!r}")
    out = {}
    for method in ("qlora", "lora"):
        m = tensor_footprint(config, method, lora=settings, steps=steps, seed=seed, base_dtype=dtypes[lora_base_dtype])
        out[f"{method}_tensor_bytes"] = m.total_bytes
        out[f"{method}_model_bytes"] = m.model_bytes
    return out


FORMULA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# measured again in a fresh interpreter; its RSS readings differ from the in-process ones by nature
FRESH_SETUPS = (("llama", "lora", torch.float16), ("qwen2", "qlora", torch.float32))
CATEGORIES = ("base_weight_bytes", "trainable_params", "trainable_weight_bytes", "gradient_bytes", "optimizer_bytes")


@checker(
    observes=[
        "setups",
        "categories_compared",
        "categories_differing",
        "worst",
        "qlora_base_bytes",
        "fresh_fields_compared",
        "fresh_fields_differing",
    ],
    ids=["FALSIFY-QMEM-004"],
)
def formula_is_the_footprint(
    tmp_path: Any, engine_tokenizer: Any, tiny_model_factory: Any, rank: int = 4, intermediate_size: int = 192
) -> dict[str, Any]:
    """engine.memory.estimate (through engine.checkpoint_memory.formula) against the tensor storages
    two real training steps keep (engine.checkpoint_memory.measure), category by category, for a
    llama and a biased, tied qwen2 checkpoint: LoRA on an fp32 and an fp16 base, QLoRA on NF4 with
    double quantization.  The MLP is 192 wide so that every linear is quantized on CPU too (the
    engine keeps misaligned ones in full precision, which the formula does not model).  Two setups
    are measured again in a fresh interpreter (engine.checkpoint_memory.measure_checkpoint, as the
    real-model contract measures): every exact field must be the in-process one."""

    lora = LoraSettings(r=rank, alpha=2.0 * rank, targets=FORMULA_TARGETS)
    variants = {"llama": {}, "qwen2": {"architecture": "qwen2", "attention_bias": True, "tie_word_embeddings": True}}
    setups: tuple[tuple[Method, torch.dtype], ...] = (
        ("lora", torch.float32),
        ("lora", torch.float16),
        ("qlora", torch.float32),
        ("qlora", torch.float16),  # asked for an fp16 base: the rest is still held as loaded, fp32
    )
    out: dict[str, Any] = {"setups": 0, "categories_compared": 0, "categories_differing": 0, "worst": ""}
    out |= {"fresh_fields_compared": 0, "fresh_fields_differing": 0}
    worst = 0.0
    for name, overrides in variants.items():
        config = engine_preset("tiny", intermediate_size=intermediate_size, **overrides)
        folder = fresh_dir(tmp_path, f"formula-{name}-")
        path = save_checkpoint(folder / "model.safetensors", tiny_model_factory(0, config=config), engine_tokenizer,
                               make_manifest(step=0))  # fmt: skip
        for method, dtype in setups:
            measured = measure(path, method, lora, dtype, steps=2, batch_size=2, seq_len=16).to_dict()
            predicted = formula(path, method, lora, dtype).to_dict()
            out["setups"] += 1
            if (name, method, dtype) in FRESH_SETUPS:
                fresh = measure_checkpoint(path, method, lora=lora, base_dtype=dtype, steps=2, batch_size=2, seq_len=16)
                for key in (*CATEGORIES, "method", "base_storage", "steps"):
                    out["fresh_fields_compared"] += 1
                    out["fresh_fields_differing"] += fresh.to_dict()[key] != measured[key]
            if method == "qlora" and name == "llama":
                out["qlora_base_bytes"] = measured["base_weight_bytes"]
            for key in CATEGORIES:
                out["categories_compared"] += 1
                gap = abs(measured[key] - predicted[key]) / max(predicted[key], 1)
                if measured[key] != predicted[key]:
                    out["categories_differing"] += 1
                    if gap >= worst:
                        worst = gap
                        where = f"{name} {method} {dtype}: {key}"
                        out["worst"] = f"{where} {measured[key]} measured, {predicted[key]} predicted"
    return out


# Qwen2.5-7B's config.json (Hugging Face Qwen/Qwen2.5-7B): the shape the seven-billion report plans for.
QWEN25_7B: dict[str, Any] = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "attention_bias": True,
    "tie_word_embeddings": False,
}
GIB_UNITS = ("B", "KiB", "MiB", "GiB")


def human_bytes(n: float) -> str:
    """Bytes as the memory table prints them: whole bytes below 1 KiB, else two decimals of the
    largest binary unit below 1024 of it (GiB at most)."""
    exponent = 0
    while abs(n) >= 1024 ** (exponent + 1) and exponent < 3:
        exponent += 1
    return f"{n:.0f} B" if exponent == 0 else f"{n / 1024**exponent:.2f} {GIB_UNITS[exponent]}"


def _nf4_bytes(numel: int, double_quant: bool) -> int:
    """One NF4 tensor: 4-bit codes, an absmax per 64 values (fp32; with double quantization int8,
    plus an fp32 scale per 256 absmax blocks, the 256-entry fp32 absmax code and its fp32 offset),
    and the 16 NF4 levels in fp32."""
    blocks = -(-numel // 64)
    if not double_quant:
        return -(-numel // 2) + blocks * 4 + 16 * 4
    return -(-numel // 2) + blocks + -(-blocks // 256) * 4 + 256 * 4 + 4 + 16 * 4


def planned_rows(cfg: ModelConfig, rank: int, double_quant: bool) -> tuple[int, int, list[dict[str, Any]]]:
    """(base parameters, LoRA parameters on q_proj and v_proj, the two rows the engine's
    compare_lora_qlora gives): fp16-base LoRA, and QLoRA with every linear but the head in NF4,
    q/k/v biases in fp32, embeddings, norms and the head in fp16; fp32 LoRA with AdamW."""
    base_params, lora = parameter_count(cfg), lora_count(cfg, rank)
    h, layers = cfg.hidden_size, cfg.num_hidden_layers
    fp16_rest = (embedding_parameters(cfg) + layers * 2 * h + h) * 2
    nf4 = sum(_nf4_bytes(i * o, double_quant) for i, o in layer_linears(cfg))
    qlora_base = layers * (nf4 + attention_biases(cfg) * 4) + fp16_rest
    rows = [
        ("LoRA, fp16 base", "lora", "fp16", base_params * 2),
        ("QLoRA, NF4 base" + (" + DQ" if double_quant else ""), "qlora", "nf4", qlora_base),
    ]
    return (
        base_params,
        lora,
        [
            {
                "label": label,
                "method": method,
                "base_storage": storage,
                "base_weight_bytes": base,
                "trainable_params": lora,
                "trainable_weight_bytes": 4 * lora,
                "gradient_bytes": 4 * lora,
                "optimizer_bytes": 8 * lora,
                "total_bytes": base + 16 * lora,
            }
            for label, method, storage, base in rows
        ],
    )


def _misaligned(lines: list[str]) -> int:
    """Lines of a table whose cells do not start at the columns of its dashed separator line (two
    spaces apart), plus columns not exactly as wide as their widest cell; every line if there is
    no separator of dashes."""
    dashes = lines[1].rstrip().split("  ") if len(lines) > 1 else []
    if not dashes or any(set(d) != {"-"} for d in dashes):
        return len(lines)
    widths = [len(d) for d in dashes]
    offsets = [sum(w + 2 for w in widths[:i]) for i in range(len(widths))]
    columns: list[list[str]] = [[] for _ in widths]
    bad = 0
    for line in lines[:1] + lines[2:]:
        cells = [line[o : o + w] for o, w in zip(offsets, widths, strict=True)]
        bad += (
            any(line[o - 2 : o] != "  " for o in offsets[1:])
            or any(c[:1] == " " for c in cells)
            or len(line.rstrip()) > offsets[-1] + widths[-1]
        )
        for column, cell in zip(columns, cells, strict=True):
            column.append(cell.rstrip())
    return bad + sum(w != max(map(len, column)) for w, column in zip(widths, columns, strict=True))


def _table_rows_matching(text: str, rows: list[dict[str, Any]], measured: dict[str, int]) -> int:
    """Rows of ``memory_table``'s text that print ``rows`` as written out here; -1 for a wrong header,
    and -1 for each line out of its columns."""

    lines = text.splitlines()
    matching = 0
    for line, row in zip(lines[2:], rows, strict=False):
        cells = [
            row["label"], human_bytes(row["base_weight_bytes"]),
            f"{human_bytes(row['trainable_weight_bytes'])} ({row['trainable_params']:,} p)",
            human_bytes(row["gradient_bytes"]), human_bytes(row["optimizer_bytes"]), human_bytes(row["total_bytes"]),
            human_bytes(measured[row["label"]]) if row["label"] in measured else "-",
        ]  # fmt: skip
        matching += table_cells(line) == cells
    header = ["setup", "base weights", "trainable", "grads", "AdamW state", "total", "measured"]
    return (
        matching - (not lines or table_cells(lines[0]) != header) - (len(lines) != len(rows) + 2) - _misaligned(lines)
    )


@checker(
    observes=[
        "shape_mismatches", "counts_compared", "count_mismatches", "rows_compared", "row_mismatches",
        "table_rows_matching",
    ],
    ids=["FALSIFY-QMEM-005"],
)  # fmt: skip
def seven_b_plan(rank: int = 16, measured_bytes: int = 123_456_789_012, small_rank: int = 1) -> dict[str, Any]:
    """engine.memory.seven_b_report, compare_lora_qlora and memory_table against the formulas
    written out here: on Qwen2.5-7B's published shape (too big to build, so everything is counted
    from the shape) with double quantization, and on the tiny preset without it (small enough
    for the table's KiB and byte units)."""

    shape_mismatches = sum(getattr(engine_preset("qwen2.5-7b"), k) != v for k, v in QWEN25_7B.items())
    base_params, lora, rows = planned_rows(ModelConfig(architecture="qwen2", **QWEN25_7B), rank, double_quant=True)
    report = seven_b_report(r=rank)
    counts = {
        "preset": "qwen2.5-7b", "rank": rank, "targets": ["q_proj", "v_proj"],
        "lora_params_square_formula": QWEN25_7B["num_hidden_layers"] * 2 * rank * QWEN25_7B["hidden_size"] * 2,
        "lora_params_real": lora, "base_params": base_params,
    }  # fmt: skip
    count_mismatches = sum(report.get(k) != v for k, v in counts.items())
    tiny = engine_preset("tiny")
    _, _, tiny_rows = planned_rows(tiny, small_rank, double_quant=False)
    tiny_got = [r.to_dict() for r in compare_lora_qlora(tiny, LoraSettings(r=small_rank), double_quant=False)]
    rows_compared = row_mismatches = 0
    for got_rows, want_rows in ((report.get("rows", []), rows), (tiny_got, tiny_rows)):
        row_mismatches += abs(len(got_rows) - len(want_rows))
        for got, want in zip(got_rows, want_rows, strict=False):
            rows_compared += len(want)
            row_mismatches += sum(got.get(k) != v for k, v in want.items()) + (set(got) != set(want))
    matching = 0
    # the units' edges: 1023 B, exactly 1 KiB, and 2 TiB, which the table prints in GiB
    edges = {"LoRA, fp16 base": 1024, "QLoRA, NF4 base": 2 * 1024**4}
    tables = ((rows, {"LoRA, fp16 base": measured_bytes}), (tiny_rows, {"QLoRA, NF4 base": 1023}), (tiny_rows, edges))
    for table_rows, measured in tables:
        estimates = [MemoryEstimate(**{k: v for k, v in r.items() if k != "total_bytes"}) for r in table_rows]
        matching += _table_rows_matching(memory_table(estimates, measured=measured), table_rows, measured)
    return {
        "shape_mismatches": shape_mismatches,
        "counts_compared": len(counts),
        "count_mismatches": count_mismatches,
        "rows_compared": rows_compared,
        "row_mismatches": row_mismatches,
        "table_rows_matching": matching,
    }


# What a training step of each method keeps beside the weights, in parameter bytes of the model:
# full fine-tuning a gradient and two AdamW moments per parameter; LoRA and QLoRA next to nothing.
MEASURE_METHODS: tuple[tuple[Method, float], ...] = (("full", 3.0), ("lora", 0.0), ("qlora", 0.0))


@checker(
    observes=[
        "methods",
        "param_bytes",
        "full_model_ratio",
        "full_training_ratio",
        "lora_model_ratio",
        "lora_training_ratio",
        "qlora_model_ratio",
        "qlora_training_ratio",
        "inconsistent_readings",
    ],
    ids=["FALSIFY-QMEM-006"],
)
def measured_training_memory(preset: str = "small", rank: int = 8) -> dict[str, Any]:
    """engine.memory.measure_method in a fresh interpreter for a full, a LoRA and a QLoRA
    fine-tune of ``preset`` (fp32 base): what it reports beside the parameter bytes written out
    here (every distinct parameter of the shape built on meta, 4 bytes each).  Each reading must
    also be consistent in itself: 2 steps, the CPU, and a peak above the growths it adds up."""

    config = engine_preset(preset)
    meta = build_model(config, device="meta")
    param_bytes = 4 * sum(p.numel() for p in {id(p): p for p in meta.parameters()}.values())
    out: dict[str, Any] = {"methods": 0, "param_bytes": param_bytes, "inconsistent_readings": 0}
    for method, _ in MEASURE_METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NF4AlignmentWarning)
            m = measure_method(config, method, lora=LoraSettings(r=rank), base_dtype=torch.float32, fresh_process=True)
        out["methods"] += 1
        out[f"{method}_model_ratio"] = m.model_bytes / param_bytes
        out[f"{method}_training_ratio"] = m.training_bytes / param_bytes
        out["inconsistent_readings"] += (m.steps, m.device) != (2, "cpu")
        out["inconsistent_readings"] += not m.peak_bytes > m.model_bytes + m.training_bytes
    return out
