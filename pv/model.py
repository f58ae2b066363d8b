"""The contract data model.

Reads the established dialect of the Rust ``pv`` contracts (``metadata``, ``equations``,
``proof_obligations``, ``falsification_tests``, ``kani_harnesses``, ``qa_gate`` …) and adds this
project's runtime binding on each falsifier (``check``, ``params``, ``expect``, ``requires``,
``mutant``, ``timeout_s``).  Every model forbids unknown keys: a misspelled section must never make
falsifiers vanish silently.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
FALSIFY_ID_RE = re.compile(r"^FALSIFY-[A-Z0-9]+(?:-[A-Z0-9]+)*-\d{3,}$")
KANI_ID_RE = re.compile(r"^KANI-[A-Z0-9]+(?:-[A-Z0-9]+)*-\d{3,}$")
OBLIGATION_ID_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d{3,}$")
CONTRACT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class Status(StrEnum):
    """docs/design.md's status ladder; only `pv promote` moves a contract up it."""

    DRAFT = "DRAFT"
    ACTIVE_ALGORITHM_LEVEL = "ACTIVE_ALGORITHM_LEVEL"
    ACTIVE = "ACTIVE"
    RETIRED = "RETIRED"


class Kind(StrEnum):
    KERNEL = "kernel"
    REGISTRY = "registry"
    MODEL_FAMILY = "model-family"
    PATTERN = "pattern"
    SCHEMA = "schema"
    TRAINING_LOOP = "training-loop"
    INFERENCE = "inference"
    QUANTIZATION = "quantization"
    SERIALIZATION = "serialization"
    INTEROP = "interop"
    DEVICE = "device"
    BENCHMARK = "benchmark"
    # the Rust dialect's later kinds
    BEAT_BENCHMARK = "beat-benchmark"
    COMPETITIVE_PARITY = "competitive-parity"


class ObligationType(StrEnum):
    """The 26 obligation types of the Rust dialect plus `safety` and `liveness`."""

    INVARIANT = "invariant"
    EQUIVALENCE = "equivalence"
    BOUND = "bound"
    MONOTONICITY = "monotonicity"
    IDEMPOTENCY = "idempotency"
    LINEARITY = "linearity"
    SYMMETRY = "symmetry"
    ASSOCIATIVITY = "associativity"
    CONSERVATION = "conservation"
    ORDERING = "ordering"
    COMPLETENESS = "completeness"
    SOUNDNESS = "soundness"
    INVOLUTION = "involution"
    DETERMINISM = "determinism"
    ROUNDTRIP = "roundtrip"
    STATE_MACHINE = "state_machine"
    CLASSIFICATION = "classification"
    INDEPENDENCE = "independence"
    TERMINATION = "termination"
    PRECONDITION = "precondition"
    POSTCONDITION = "postcondition"
    FRAME = "frame"
    LOOP_INVARIANT = "loop_invariant"
    LOOP_VARIANT = "loop_variant"
    OLD_STATE = "old_state"
    SUBCONTRACT = "subcontract"
    SAFETY = "safety"
    LIVENESS = "liveness"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, use_enum_values=False)


class ChangelogEntry(Strict):
    version: str
    date: str
    change: str
    evidence: str | None = None  # set by `pv promote`: the bundle a status change rests on


class Metadata(Strict):
    id: str | None = None
    version: str
    created: str | None = None
    author: str | None = None
    description: str
    references: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    kind: Kind = Kind.KERNEL
    status: Status = Status.DRAFT
    changelog: list[ChangelogEntry] = Field(default_factory=list)
    registry: bool | None = None  # Rust back-compat: `registry: true` means kind: registry
    tags: list[str] = Field(default_factory=list)
    # the Rust dialect's gradual enforcement: the level reached, and the floor it may not drop below
    enforcement_level: Literal["basic", "standard", "strict", "proven"] | None = None
    locked_level: str | None = None


class ShapeExpr(Strict):
    dims: list[str | int]
    dtype: str | None = None


class ShapeContract(Strict):
    """Compositional shapes an equation assumes from upstream or guarantees downstream (Rust dialect)."""

    shapes: dict[str, ShapeExpr] = Field(default_factory=dict)
    constraints: list[str] = Field(default_factory=list)
    from_contract: str | None = None
    from_equation: str | None = None


class Equation(Strict):
    formula: str
    domain: str | None = None
    codomain: str | None = None
    invariants: list[str] = Field(default_factory=list)
    description: str | None = None
    preconditions: list[str] = Field(default_factory=list)
    postconditions: list[str] = Field(default_factory=list)
    lean_theorem: str | None = None
    float_tolerance: float | None = None
    assumes: ShapeContract | None = None
    guarantees: ShapeContract | None = None


class LeanInfo(Strict):
    theorem: str | None = None
    module: str | None = None
    status: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    mathlib_imports: list[str] = Field(default_factory=list)
    notes: str | None = None


class ProofObligation(Strict):
    id: str | None = None
    type: ObligationType
    property: str
    formal: str | None = None
    tolerance: float | None = None
    applies_to: str | None = None
    requires: str | None = None
    parent_contract: str | None = None
    applies_to_phase: str | None = None
    lean: LeanInfo | None = None


class EnforcementRule(Strict):
    description: str
    check: str | None = None
    severity: str | None = None
    reference: str | None = None


class HypothesisSettings(Strict):
    """Recorded with every property-falsifier result; deterministic by default."""

    max_examples: int = Field(default=100, ge=1, le=100_000)
    derandomize: bool = True
    deadline_ms: int | None = Field(default=None, ge=1, le=3_600_000)


class Launch(Strict):
    """Run the checker under ``torchrun --standalone --nproc_per_node=<nproc>`` (pv.launch)."""

    nproc: int = Field(ge=1, le=1024, description="processes (ranks) on this machine; rank 0 reports")


class FalsificationTest(Strict):
    # --- the Rust dialect ---
    id: str
    rule: str | None = None
    prediction: str
    test: str | None = None  # free text in the Rust dialect: documentation only
    test_harness: str | None = None  # the Rust dialect's other spelling of `test`: documentation
    name: str | None = None  # the Rust dialect's bare test-function name: documentation
    if_fails: str | None = None
    ship_blocking: bool = False
    # --- this project's runtime binding ---
    obligation: str | None = None
    check: str | None = None  # "module:function", a registered checker
    params: dict[str, Any] = Field(default_factory=dict)
    expect: str | None = None  # safe expression over observations and params
    # observations that may legitimately be NaN or infinite; any other non-finite value the
    # expect reads makes the verdict `error` (NaN compares false, so it could "survive")
    allow_nonfinite: list[str] = Field(default_factory=list)
    requires: list[str] = Field(default_factory=list)  # "cpu", "cuda", "cuda_mem_gib>=40", "package:peft"
    mutant: str | None = None  # "module:fault", a fault the checker must falsify
    # a contract can shorten or lengthen its deadline, never switch it off (`--pv-timeout 0` is the
    # operator's, on the command line)
    timeout_s: float | None = Field(default=None, gt=0, le=86_400, allow_inf_nan=False)
    # where the checker runs: "thread" (in pytest's process) or "process" (forked: killable at
    # the deadline, a crash ends as `error` and the session goes on); None: the run's default
    isolation: Literal["thread", "process"] | None = None
    slow: bool = False
    hypothesis: HypothesisSettings | None = None
    examples: list[dict[str, Any]] = Field(default_factory=list)
    launch: Launch | None = None  # run under torchrun; None: in the pytest process
    # one falsifier over several params (pv.cases): a grid {name: [values]} or explicit cases
    # [{name: value}], and/or `seeds: N` (the seed param over N consecutive seeds); each case is
    # judged by `expect`, and `aggregate` over every case's observations as per-case lists
    parametrize: dict[str, list[Any]] | list[dict[str, Any]] | None = None
    seeds: int | None = Field(default=None, ge=1, le=256)
    aggregate: str | None = None

    @field_validator("requires", mode="before")
    @classmethod
    def _one_requirement(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class KaniHarness(Strict):
    id: str
    obligation: str
    property: str | None = None
    bound: int | None = None
    strategy: str | None = None
    solver: str | None = None
    harness: str | None = None
    actually_verified: bool | None = None


class QaGate(Strict):
    id: str
    name: str
    description: str | None = None
    checks: list[str] = Field(default_factory=list)
    pass_criteria: str | None = None
    falsification: str | None = None


class TypeInvariant(Strict):
    name: str
    type: str
    predicate: str
    description: str | None = None


class CoqDefinition(Strict):
    name: str
    statement: str


class CoqObligation(Strict):
    links_to: str
    coq_lemma: str
    status: str = "stub"


class CoqSpec(Strict):
    module: str
    imports: list[str] = Field(default_factory=list)
    definitions: list[CoqDefinition] = Field(default_factory=list)
    obligations: list[CoqObligation] = Field(default_factory=list)


class Contract(Strict):
    metadata: Metadata
    equations: dict[str, Equation] = Field(default_factory=dict)
    proof_obligations: list[ProofObligation] = Field(default_factory=list)
    kernel_structure: dict[str, Any] | None = None
    simd_dispatch: dict[str, dict[str, str]] = Field(default_factory=dict)
    enforcement: dict[str, EnforcementRule] = Field(default_factory=dict)
    falsification_tests: list[FalsificationTest] = Field(default_factory=list)
    kani_harnesses: list[KaniHarness] = Field(default_factory=list)
    verification_summary: dict[str, Any] | None = None
    qa_gate: QaGate | None = None
    type_invariants: list[TypeInvariant] = Field(default_factory=list)
    coq_spec: CoqSpec | None = None
    beat: dict[str, Any] | None = None  # Rust dialect, kind beat-benchmark: kept, not interpreted
    parity: dict[str, Any] | None = None  # Rust dialect, kind competitive-parity: kept, not interpreted

    def falsifier(self, falsify_id: str) -> FalsificationTest | None:
        return next((f for f in self.falsification_tests if f.id == falsify_id), None)

    @property
    def ship_blocking(self) -> list[FalsificationTest]:
        return [f for f in self.falsification_tests if f.ship_blocking]
