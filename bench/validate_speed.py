"""How fast is ``pv validate`` on a large tree?

Generates N realistic contracts (about 10 KB each, 4 falsifiers each, obligations, equations,
Kani harnesses, changelog, depends_on edges) in a temporary folder and times ``pv validate`` over
them, in-process and through the console script.  Prints contracts per second.

    python bench/validate_speed.py            # 1,000 contracts, best of 3
    python bench/validate_speed.py -n 200 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TARGET_S = 2.0  # the target for 1,000 contracts on the 2-core reference machine

LOREM = (
    "The measured quantity is compared against the bound stated in the obligation; the bound comes "
    "from the reference implementation and the numerical analysis of the kernel in half precision. "
)


def contract_text(i: int, n: int) -> str:
    cid = f"bench-contract-{i:04d}"
    prefix = f"B{i:04d}"
    deps = [f"bench-contract-{j:04d}" for j in (i - 1, i - 7) if j >= 0]
    parts = [
        f"""\
        # yaml-language-server: $schema=../pv/schema/contract.schema.json
        metadata:
          id: {cid}
          version: 1.{i % 7}.{i % 3}
          created: "2026-01-{1 + i % 28:02d}"
          author: bench
          status: DRAFT
          kind: training-loop
          description: >
            Synthetic contract {i} of {n}: a fused kernel with an fp32 reference, LoRA adapters and
            NF4 storage. {LOREM * 8}
          references:
            - "Dettmers et al. 2023, QLoRA: Efficient Finetuning of Quantized LLMs"
            - "Hu et al. 2021, LoRA: Low-Rank Adaptation of Large Language Models"
            - "Internal design note {i}"
          depends_on: [{", ".join(deps)}]
          tags: [bench, synthetic, kernel-{i % 5}]
          changelog:
            - {{version: 1.0.0, date: "2026-01-01", change: initial contract}}
            - {{version: 1.{i % 7}.{i % 3}, date: "2026-02-01", change: tightened the bounds after review}}
        equations:
          forward:
            formula: "y = W_nf4 x + (alpha / r) B A x"
            domain: "x in R^(batch x d_model)"
            codomain: "y in R^(batch x d_out)"
            invariants: ["shape(y) == (batch, d_out)", "finite(y) when finite(x)"]
            description: {LOREM}
          loss:
            formula: "L = -mean(log softmax(z)[target])"
            domain: "z in R^(batch x vocab)"
            invariants: ["L >= 0", "L <= ln(vocab) at init"]
          dequant:
            formula: "W = absmax_block * nf4_code[q]"
            domain: "q in {{0..15}}^(d_out x d_in)"
            invariants: ["|W - W_fp16| <= absmax_block * max_gap(nf4_code) / 2"]
            description: {LOREM * 2}
        proof_obligations:
        """
    ]
    for k in range(1, 6):
        parts.append(
            f"""\
          - id: {prefix}-INV-{k:03d}
            type: {["bound", "equivalence", "invariant", "determinism", "monotonicity"][k - 1]}
            property: Property {k} of contract {i} holds for every input in the stated domain, at every sweep point.
            formal: "forall x. |f(x) - g(x)| <= eps_{k}"
            tolerance: 1.0e-{k}
            applies_to: kernel
        """
        )
    parts.append("falsification_tests:\n")
    for k in range(1, 5):
        parts.append(
            f"""\
          - id: FALSIFY-{prefix}-{k:03d}
            obligation: {prefix}-INV-{k:03d}
            rule: run the fused path and the reference path on the same seeded inputs
            prediction: >
              The relative mean absolute difference between the two paths stays below the bound
              and above zero for every shape in the sweep. {LOREM * 3}
            test: "cargo test -p kernels falsify_{k}"
            check: falsifiers.bench:measure_{k}
            params: {{d_model: {64 * k}, n_layers: 2, rank: 8, seed: {k}, sweep: [1, 2, 4, 8]}}
            expect: "0 < rel_diff <= 0.05 * {k} and isfinite(max_abs) and step0_loss <= 0.7 * ln(vocab_size)"
            ship_blocking: {"true" if k % 2 else "false"}
            requires: [cpu]
            mutant: engine.faults:fault_{k}
            timeout_s: 120
            if_fails: The fused kernel or its dequantization order is wrong; bisect on the sweep.
        """
        )
    parts.append(
        f"""\
        kani_harnesses:
          - id: KANI-{prefix}-001
            obligation: {prefix}-INV-005
            property: no overflow in the index arithmetic
            bound: 16
            strategy: bounded_int
            harness: verify_index_{i}
        qa_gate:
          id: QA-{prefix}
          name: Contract {i} gate
          description: {LOREM}
          checks: [validate, lint, falsify]
          pass_criteria: all ship-blocking falsifiers survive and kill their mutants
        """
    )
    return "".join(textwrap.dedent(p) for p in parts)


def generate(folder: Path, n: int) -> int:
    total = 0
    for i in range(n):
        text = contract_text(i, n)
        (folder / f"bench-contract-{i:04d}.yaml").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def time_in_process(folder: Path, repeat: int) -> tuple[list[float], list[float], str]:
    from pv.validate import validate_paths

    times = []
    cpu = []  # CPU seconds: on a shared machine wall time also measures the neighbours
    summary = ""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        report = validate_paths([folder], checker_packages=["falsifiers"])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        summary = report.summary()
        if report.errors:
            raise SystemExit(f"generated contracts do not validate: {report.errors[0].format()}")
    return times, cpu, summary


def time_cli(folder: Path, repeat: int) -> list[float]:
    exe = shutil.which("pv")
    cmd = [exe] if exe else [sys.executable, "-m", "pv.cli"]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "validate", str(folder)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"pv validate exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="number of contracts (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the best is reported")
    parser.add_argument("--no-cli", action="store_true", help="skip the console-script timing")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pv-bench-") as tmp:
        folder = Path(tmp) / "contracts"
        folder.mkdir()
        size = generate(folder, args.n)
        print(f"generated {args.n} contracts, {size / args.n / 1024:.1f} KB each on average, in {folder}")
        times, cpu, summary = time_in_process(folder, args.repeat)
        best = min(times)
        print(f"in-process: {summary}")
        print(
            f"in-process: best {best:.3f} s, median {statistics.median(times):.3f} s over {args.repeat} runs "
            f"-> {args.n / best:,.0f} contracts/s (CPU time: best {min(cpu):.3f} s)"
        )
        if not args.no_cli:
            cli = time_cli(folder, args.repeat)
            print(
                f"cli (pv validate): best {min(cli):.3f} s, median {statistics.median(cli):.3f} s "
                f"-> {args.n / min(cli):,.0f} contracts/s (includes interpreter start-up)"
            )
        scaled = best * 1000 / args.n
        verdict = "meets" if scaled <= TARGET_S else "misses"
        print(f"target: 1,000 contracts in {TARGET_S:.1f} s; this run {verdict} it ({scaled:.2f} s per 1,000)")
        print(f"cpu count: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
