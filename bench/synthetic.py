"""Synthetic contract trees for the harness benchmarks (validate_speed, lint_speed, collect_speed).

One generator makes all three trees; what differs between them is a :class:`Shape` (how many
obligations and falsifiers a contract has, how much of a real contract's detail it carries, how
large it is, what its falsifiers bind to) and the project around the contracts that
:func:`write_tree` writes (a ``pyproject.toml`` section, a checker package).

Detail levels, each adding to the one before:

``LEAN``
    metadata (one reference, one changelog entry), obligations (id, type, property) and
    falsifiers (id, obligation, rule, prediction, check, params, expect, ship_blocking, requires,
    mutant, if_fails): what the pytest plugin needs to collect.
``STANDARD``
    ``depends_on`` edges to contracts ``i - 1`` and ``i - 7``, a second reference and changelog
    entry, a ``formal`` statement per obligation and a Kani harness: every lint gate has work.
``FULL``
    a third reference, ``created``/``author``/``tags``, equations, obligation tolerances, the
    falsifiers' ``test`` and ``timeout_s``, a complete Kani harness and a QA gate.

``Shape.size`` pads the description with filler prose until the contract is about that many
bytes, so each benchmark keeps the size its recorded figures were measured at.  Run the
benchmarks as scripts (``python bench/validate_speed.py``): they import this module from their
own folder.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LEAN, STANDARD, FULL = 0, 1, 2

LOREM = (
    "The measured quantity is compared against the bound stated in the obligation; the bound comes "
    "from the reference implementation and the numerical analysis of the kernel in half precision. "
)
REFERENCES = (
    "Dettmers et al. 2023, QLoRA: Efficient Finetuning of Quantized LLMs",
    "Hu et al. 2021, LoRA: Low-Rank Adaptation of Large Language Models",
    "Internal design note {i}",
)
OBLIGATION_TYPES = ("bound", "equivalence", "invariant", "determinism", "monotonicity")
_FILLER_MARK = "\x00filler\x00"

# A falsifier field: one template for every falsifier (``{k}`` is its number from 1, ``{d_model}``
# is 64 * k; literal braces doubled), or one finished value per falsifier.
PerFalsifier = str | Sequence[str]


@dataclass(frozen=True)
class Shape:
    """What every contract of a synthetic tree looks like."""

    stem: str = "bench"  # contract ids and file names: f"{stem}-{i:04d}"
    prefix: str = "B"  # obligation and falsifier ids: f"{prefix}{i:04d}-INV-001", ...
    obligations: int = 4
    falsifiers: int = 4  # falsifier k tests obligation k, so at most ``obligations``
    detail: int = STANDARD
    size: int = 0  # bytes per contract to pad up to; 0: no padding
    check: PerFalsifier = "falsifiers.bench_stability.bench:measure_{k}"
    params: PerFalsifier = "{{d_model: {d_model}, n_layers: 2, rank: 8, seed: {k}}}"
    expect: PerFalsifier = "0 < rel_diff <= 0.05 * {k}"
    requires: PerFalsifier = "cpu"
    mutant: PerFalsifier = "engine.faults:fault_{k}"

    def contract_id(self, i: int) -> str:
        return f"{self.stem}-{i:04d}"

    def value(self, field: PerFalsifier, k: int) -> str:
        return field.format(k=k, d_model=64 * k) if isinstance(field, str) else field[k - 1]


def _metadata(shape: Shape, i: int, n: int) -> str:
    version = f"1.{i % 7}.{i % 3}"
    refs = ", ".join(f'"{r.format(i=i)}"' for r in REFERENCES[: shape.detail + 1])
    deps = ", ".join(shape.contract_id(j) for j in (i - 1, i - 7) if j >= 0)
    full = shape.detail >= FULL
    lines = [
        "# yaml-language-server: $schema=../pv/schema/contract.schema.json" if full else "",
        "metadata:",
        f"  id: {shape.contract_id(i)}",
        f"  version: {version}",
        f'  created: "2026-01-{1 + i % 28:02d}"\n  author: bench' if full else "",
        "  status: DRAFT",
        "  kind: training-loop",
        f"  description: Synthetic contract {i} of {n} (LoRA adapters on an NF4 base).{_FILLER_MARK}",
        f"  references: [{refs}]",
        f"  depends_on: [{deps}]" if shape.detail >= STANDARD else "",
        f"  tags: [bench, synthetic, kernel-{i % 5}]" if full else "",
        "  changelog:",
        f'    - {{version: {version}, date: "2026-02-01", change: tightened the bounds}}',
        '    - {version: 0.9.0, date: "2026-01-01", change: initial contract}' if shape.detail >= STANDARD else "",
    ]
    return _join(lines)


_EQUATIONS = f"""\
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
"""


def _obligation(shape: Shape, i: int, prefix: str, k: int) -> list[str]:
    full = shape.detail >= FULL
    return [
        f"  - id: {prefix}-INV-{k:03d}",
        f"    type: {OBLIGATION_TYPES[(k - 1) % len(OBLIGATION_TYPES)] if full else 'bound'}",
        f"    property: Property {k} of contract {i} holds for every input in its domain.",
        f'    formal: "forall x. |f(x) - g(x)| <= eps_{k}"' if shape.detail >= STANDARD else "",
        f"    tolerance: 1.0e-{k}\n    applies_to: kernel" if full else "",
    ]


def _falsifier(shape: Shape, prefix: str, k: int) -> list[str]:
    full = shape.detail >= FULL
    return [
        f"  - id: FALSIFY-{prefix}-{k:03d}",
        f"    obligation: {prefix}-INV-{k:03d}",
        f"    rule: adapter {k} applied to the quantized base",
        "    prediction: relative mean logit difference stays inside the NF4 error budget",
        f'    test: "cargo test -p kernels falsify_{k}"' if full else "",
        f"    check: {shape.value(shape.check, k)}",
        f"    params: {shape.value(shape.params, k)}",
        f'    expect: "{shape.value(shape.expect, k)}"',
        f"    ship_blocking: {'true' if k % 2 else 'false'}",
        f"    requires: [{shape.value(shape.requires, k)}]",
        f"    mutant: {shape.value(shape.mutant, k)}",
        "    timeout_s: 120" if full else "",
        "    if_fails: NF4 dequantization or the LoRA merge order is wrong.",
    ]


def _kani(shape: Shape, i: int, prefix: str) -> str:
    full = shape.detail >= FULL
    return _join(
        [
            "kani_harnesses:",
            f"  - id: KANI-{prefix}-001",
            f"    obligation: {prefix}-INV-{shape.obligations:03d}",
            "    property: no overflow in the index arithmetic" if full else "",
            "    bound: 16",
            f"    strategy: bounded_int\n    harness: verify_index_{i}" if full else "",
        ]
    )


def _qa_gate(i: int, prefix: str) -> str:
    return _join(
        [
            "qa_gate:",
            f"  id: QA-{prefix}",
            f"  name: Contract {i} gate",
            f"  description: {LOREM}",
            "  checks: [validate, lint, falsify]",
            "  pass_criteria: all ship-blocking falsifiers survive and kill their mutants",
        ]
    )


def _section(name: str, entries: list[list[str]]) -> str:
    return _join([f"{name}:", *(line for entry in entries for line in entry)])


def _join(lines: list[str]) -> str:
    """The lines that are not empty, each ending in a newline."""
    return "".join(line + "\n" for line in lines if line)


def _filler(length: int) -> str:
    """About ``length`` characters of prose (a little less: it never ends in a space)."""
    if length <= 1:
        return ""
    return " " + (LOREM * (length // len(LOREM) + 1))[: length - 1].rstrip()


def contract_text(shape: Shape, i: int, n: int) -> str:
    """Contract ``i`` of ``n``, as YAML text."""
    if shape.falsifiers > shape.obligations:
        raise ValueError("falsifier k tests obligation k: falsifiers must not outnumber obligations")
    prefix = f"{shape.prefix}{i:04d}"
    parts = [_metadata(shape, i, n)]
    if shape.detail >= FULL:
        parts.append(_EQUATIONS)
    obligations = [_obligation(shape, i, prefix, k) for k in range(1, shape.obligations + 1)]
    falsifiers = [_falsifier(shape, prefix, k) for k in range(1, shape.falsifiers + 1)]
    parts += [_section("proof_obligations", obligations), _section("falsification_tests", falsifiers)]
    if shape.detail >= STANDARD:
        parts.append(_kani(shape, i, prefix))
    if shape.detail >= FULL:
        parts.append(_qa_gate(i, prefix))
    text = "".join(parts)
    missing = shape.size - (len(text.encode("utf-8")) - len(_FILLER_MARK))
    return text.replace(_FILLER_MARK, _filler(missing))


def pyproject_text(config: str, contracts: str, checker_package: str, fault_package: str = "engine") -> str:
    """``[tool.pv]`` (config ``"pv"``) or pytest's ini options (config ``"pytest"``) for the tree.

    The generated contracts name ``engine.faults`` mutants, so ``fault_package`` is configured too:
    without it every contract is invalid (PV113) and a benchmark would time the error path."""
    if config == "pv":
        return (
            f'[tool.pv]\ncontracts = "{contracts}"\nchecker_packages = ["{checker_package}"]\n'
            f'fault_packages = ["{fault_package}"]\nevidence = "evidence"\n'
        )
    if config == "pytest":
        return (
            f'[tool.pytest.ini_options]\npv_contracts = "{contracts}"\npv_checker_packages = "{checker_package}"\n'
            f'pv_fault_packages = "{fault_package}"\n'
        )
    raise ValueError(f"unknown config {config!r}: 'pv' or 'pytest'")


def write_tree(
    root: Path,
    shape: Shape,
    n: int,
    *,
    contracts: str = "contracts",
    config: str | None = None,
    checker_package: str = "falsifiers",
    checker_module: str | None = None,
) -> int:
    """Write ``n`` contracts to ``root/contracts``; return their total size in bytes.

    ``config`` writes ``root/pyproject.toml`` (see :func:`pyproject_text`) naming ``contracts`` and
    ``checker_package``; ``checker_module`` is written as that package's ``__init__.py``.  Without
    one, the package named must be importable already (the repository's ``falsifiers``).
    """
    if config is not None:
        (root / "pyproject.toml").write_text(pyproject_text(config, contracts, checker_package), encoding="utf-8")
    if checker_module is not None:
        package = root / checker_package
        package.mkdir()
        (package / "__init__.py").write_text(checker_module, encoding="utf-8")
    folder = root / contracts
    folder.mkdir()
    total = 0
    for i in range(n):
        data = contract_text(shape, i, n).encode("utf-8")
        (folder / f"{shape.contract_id(i)}.yaml").write_bytes(data)
        total += len(data)
    return total


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options validate_speed and lint_speed share: ``-n`` contracts and ``--repeat`` runs."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="number of contracts (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the best is reported")
    return parser
