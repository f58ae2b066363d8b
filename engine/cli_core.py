"""``python -m engine inspect | generate | export``: look into, sample from and convert checkpoints.

Each takes a LoRA/QLoRA adapter too (engine.adapters): ``inspect`` an adapter folder, ``generate
--adapter`` with it applied to the base, ``export --adapter`` the merged model.

Bad input (a missing or corrupt checkpoint, an impossible generation request, an unwritable
target) prints ``error: <what is wrong>`` on stderr and exits with code 2, never a traceback.

Imports inside functions: each command imports torch, rich and the engine modules it uses when it
runs, so `python -m engine --help`, a refused option and shell completion answer without loading
torch (`python -X importtime -m engine --help` shows no torch).
"""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine import cli_support as cli
from engine.app import app
from engine.cli_support import OtherBaseOption
from engine.faults import FAULTS

if TYPE_CHECKING:
    # Commands import torch (through these) when they run: `--help` and a bad argument answer at once.
    from engine.checkpoint import LoadedCheckpoint
    from engine.tokenizer import EngineTokenizer


class ExportFormat(StrEnum):
    hf = "hf"
    gguf = "gguf"


class WeightDtype(StrEnum):
    f32 = "f32"
    f16 = "f16"
    q8_0 = "q8_0"  # GGUF only
    q4_0 = "q4_0"  # GGUF only


def checkpoint_summary(path: Path, loaded: LoadedCheckpoint) -> dict[str, Any]:
    """Everything ``inspect`` reports, as plain JSON-able data."""
    from engine.checkpoint import read_header
    from engine.quantized import BlockLinear

    cfg = loaded.config
    tensors, _ = read_header(path)
    # one float dtype: load_checkpoint refused a file that mixes them; quantized blocks are bytes
    (dtype,) = {t.dtype for name, t in tensors.items() if not name.endswith(".raw")}
    blocks = Counter(m.kind for m in loaded.model.modules() if isinstance(m, BlockLinear))
    tok = loaded.tokenizer
    parameters = loaded.model.num_parameters()
    if FAULTS.active("inspect_counts_tied_head_twice"):  # the defect: a tied head counted again
        every = loaded.model.named_parameters(remove_duplicate=False)  # pragma: no mutate
        parameters = sum(p.numel() for _, p in every)  # pragma: no mutate
    return {
        "path": str(path),
        "file_bytes": path.stat().st_size,
        "architecture": {k: v for k, v in cfg.to_dict().items()},
        "head_dim": cfg.head_dim,
        "parameters": parameters,
        "tensors": len(tensors),
        "dtype": dtype,
        **({"quantized": dict(sorted(blocks.items()))} if blocks else {}),
        "tokenizer": {
            "type": "byte-level BPE",
            "vocab_size": tok.vocab_size,
            "merges": len(tok.merges()),
            "special_tokens": {
                "bos": {"token": tok.bos_token, "id": tok.bos_id},
                "eos": {"token": tok.eos_token, "id": tok.eos_id},
                "pad": {"token": tok.pad_token, "id": tok.pad_id},
            },
        },
        "manifest": loaded.manifest,
    }


AdapterOption = Annotated[
    Path | None,
    typer.Option("--adapter", "-a", help="A LoRA/QLoRA adapter: its run, step or adapter folder (from finetune)."),
]
Nf4Option = Annotated[
    bool | None,
    typer.Option("--nf4/--no-nf4", help="Quantize the base to NF4 under the adapter (default: for QLoRA adapters)."),
]


def _adapted(checkpoint: Path, adapter: Path, device: str, nf4: bool | None, allow_other_base: bool) -> Any:
    from engine.adapters import find_adapter, load_adapted

    model, loaded = cli.guarded(lambda: load_adapted(checkpoint, find_adapter(adapter), device, nf4, allow_other_base))
    _warn_unchecked(loaded.manifest)
    return model, loaded


def _is_gguf(source: Path) -> bool:
    from engine.gguf_import import PACKAGE_PREFIX

    return str(source).startswith(PACKAGE_PREFIX) or source.suffix == ".gguf"


def _quantized_gguf(source: Path, device: str) -> Any:
    """A GGUF file (or package:NAME's) run as it is: its Q4_0, Q4_1 and Q8_0 matrices kept in their
    blocks (engine.quantized), the rest float32."""
    from engine.gguf_import import import_gguf, resolve_source

    path = cli.guarded(lambda: resolve_source(source))
    return cli.guarded(lambda: import_gguf(path, device, quantized=True))


def _warn_unchecked(manifest: dict[str, Any]) -> None:
    """Say on stderr that the base under an adapter was not checked (it recorded none to check)."""
    if "base_unchecked" in manifest:
        cli.err.print(f"warning: {manifest['base_unchecked']}", markup=False)


@app.command()
def inspect(
    checkpoint: Annotated[Path, typer.Argument(help="A .safetensors engine checkpoint, or an adapter folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Architecture, parameter count, training manifest and tokenizer of a checkpoint (or an adapter's
    rank, alpha, targets, base and step)."""
    from engine.adapters import find_adapter, is_adapter_path

    if is_adapter_path(checkpoint):
        info = cli.guarded(lambda: find_adapter(checkpoint).summary())
        if as_json:
            cli.out.print(json.dumps(info, indent=2, sort_keys=True), markup=False)
            return
        table = cli.fields_table(f"adapter {info['path']}")
        for key in ("method", "base", "step", "r", "lora_alpha", "lora_dropout", "target_modules", "parameters"):
            value = info[key]
            table.add_row(key, cli.text(", ".join(value) if isinstance(value, list) else str(value)))
        table.add_row("sha256", info["sha256"])
        cli.out.print(table)
        return
    loaded = cli.load(checkpoint)
    summary = cli.guarded(lambda: checkpoint_summary(checkpoint, loaded))
    if as_json:
        cli.out.print(json.dumps(summary, indent=2, sort_keys=True, default=str), markup=False)
        return
    arch = cli.fields_table(checkpoint.name)
    for key, value in summary["architecture"].items():
        arch.add_row(key, str(value))
    arch.add_row("parameters", f"{summary['parameters']:,}")
    arch.add_row("tensors / dtype", f"{summary['tensors']} / {summary['dtype']}")
    if "quantized" in summary:
        arch.add_row("layers in blocks", ", ".join(f"{n} {kind}" for kind, n in summary["quantized"].items()))
    arch.add_row("file size", f"{summary['file_bytes']:,} bytes")
    cli.out.print(arch)
    tok = summary["tokenizer"]
    specials = ", ".join(f"{role}={s['token']}({s['id']})" for role, s in tok["special_tokens"].items())
    cli.out.print(
        f"tokenizer: {tok['type']}, {tok['vocab_size']} tokens, {tok['merges']} merges; {specials}", markup=False
    )
    manifest = summary["manifest"]
    cli.out.print(f"manifest: {json.dumps(manifest, sort_keys=True, default=str)}", markup=False)


def _chat_ids(tok: EngineTokenizer, prompt: str, system: str | None) -> list[int]:
    from engine.chat import conversation

    return cli.guarded(lambda: tok.apply_chat_template(conversation(prompt, system)))


@app.command()
def generate(
    checkpoint: Annotated[
        Path,
        typer.Argument(
            help="A .safetensors engine checkpoint, or a GGUF file (or package:NAME) run from its quantized blocks."
        ),
    ],
    prompt: Annotated[list[str], typer.Option("--prompt", "-p", help="Prompt text; repeat for a batch.")],
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", "-n", min=0)] = 32,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 = greedy.")] = 0.0,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1)] = None,
    top_p: Annotated[float | None, typer.Option("--top-p")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for sampling (temperature > 0).")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:1, mps, xpu or auto.")] = "cpu",
    bos: Annotated[
        bool | None,
        typer.Option("--bos/--no-bos", help="Start each prompt with BOS (default: the tokenizer's own add_bos_token)."),
    ] = None,
    chat: Annotated[
        bool, typer.Option("--chat", help="Send each prompt as a user message through the checkpoint's chat template.")
    ] = False,
    system: Annotated[str | None, typer.Option(help="With --chat: a system message before the user's.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print prompts, token ids and texts as JSON.")] = False,
    adapter: AdapterOption = None,
    nf4: Nf4Option = None,
    allow_other_base: OtherBaseOption = False,
) -> None:
    """Continue each prompt with the checkpoint's model (KV cache, stops at EOS), or with an adapter
    applied to it; with --chat, answer each prompt as a chat model does."""
    from engine.device import resolve_device
    from engine.generate import generate as run_generate
    from engine.generate import pad_prompts

    if system is not None and not chat:
        raise cli.fail("--system is a chat message: add --chat")
    if chat and bos is not None:
        raise cli.fail("--bos/--no-bos do not apply to --chat: the chat template writes any BOS itself")
    device = str(cli.guarded(lambda: resolve_device(device)))
    with cli.progress(f"loading {checkpoint.name}") as status:
        if adapter is not None:
            if FAULTS.active("generate_nf4_flag_ignored"):  # the defect: --nf4/--no-nf4 accepted, never applied
                nf4 = None  # pragma: no mutate
            model, loaded = _adapted(checkpoint, adapter, device, nf4, allow_other_base)
        elif _is_gguf(checkpoint):
            loaded = _quantized_gguf(checkpoint, device)
            model = loaded.model
        else:
            loaded = cli.load(checkpoint, device)
            model = loaded.model
        tok = loaded.tokenizer
        status(f"generating {max_new_tokens} tokens for {len(prompt)} prompt(s)")
        if chat:
            ids_list = [_chat_ids(tok, p, system) for p in prompt]
        else:
            add_bos = tok.add_bos_token if bos is None else bos
            if FAULTS.active("generate_bos_flag_ignored"):  # the defect: --bos/--no-bos accepted, never applied
                add_bos = tok.add_bos_token  # pragma: no mutate
            ids_list = [tok.encode(p, add_bos=add_bos) for p in prompt]
        if FAULTS.active("generate_command_drops_top_p"):  # the defect: --top-p accepted, never applied
            top_p = None  # pragma: no mutate
        out = cli.guarded(
            lambda: run_generate(
                model,
                *pad_prompts(ids_list, tok.pad_id, device=device),
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                seed=seed,
                eos_token_id=loaded.config.eos_ids or tok.eos_id,
                pad_token_id=tok.pad_id,
            )
        )
    texts = [tok.decode(t, skip_special_tokens=True) for t in out.new_tokens]
    if as_json:
        rows = [
            {"prompt": p, "prompt_ids": ids, "new_ids": new, "text": text, "stopped_on_eos": fin}
            for p, ids, new, text, fin in zip(prompt, ids_list, out.new_tokens, texts, out.finished, strict=True)
        ]
        cli.out.print(json.dumps(rows, indent=2, ensure_ascii=False), markup=False)
        return
    for p, text in zip(prompt, texts, strict=True):
        cli.out.print(p + text, markup=False)


@app.command()
def export(
    checkpoint: Annotated[Path, typer.Argument(help="A .safetensors engine checkpoint.")],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="hf: a model folder; gguf: one file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Target folder (hf) or .gguf file (gguf).")],
    dtype: Annotated[
        WeightDtype, typer.Option(help="Weight precision: f32, f16, or for GGUF the quantized q8_0 or q4_0.")
    ] = WeightDtype.f32,
    adapter: AdapterOption = None,
    nf4: Nf4Option = None,
    allow_other_base: OtherBaseOption = False,
) -> None:
    """Export a checkpoint to the Hugging Face layout or to GGUF for llama.cpp (with an adapter:
    the merged model, W + B·A·alpha/r in full precision)."""
    if fmt is ExportFormat.hf and dtype not in (WeightDtype.f32, WeightDtype.f16):
        raise cli.fail(f"--dtype {dtype.value} is a GGUF quantization; the Hugging Face export is f32 or f16")
    with cli.progress(f"loading {checkpoint.name}") as status:
        if adapter is not None:
            from engine.adapters import find_adapter, merged

            status(f"merging {adapter}")
            model, loaded = cli.guarded(lambda: merged(checkpoint, find_adapter(adapter), "cpu", nf4, allow_other_base))
            _warn_unchecked(loaded.manifest)
        else:
            loaded = cli.load(checkpoint)
            model = loaded.model
        if fmt is ExportFormat.hf:
            from engine.hf_interop import export_hf

            status(f"writing Hugging Face folder {output}")
            import torch

            torch_dtype = torch.float16 if dtype is WeightDtype.f16 else None
            if FAULTS.active("export_command_drops_dtype"):  # the defect: --dtype f16 writes f32
                torch_dtype = None  # pragma: no mutate
            target = cli.guarded(lambda: export_hf(model, loaded.tokenizer, output, torch_dtype))
        else:
            from engine.gguf_export import export_gguf

            status(f"writing GGUF {output}")
            target = cli.guarded(lambda: export_gguf(model, loaded.tokenizer, output, dtype.value))
    cli.err.print(f"wrote {fmt.value} export to {target}", markup=False)
