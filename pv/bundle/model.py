"""The evidence bundle's data model (schema version 1) and its JSON Schema.

The committed ``pv/schema/bundle.schema.json`` is generated from these models
(``python -m pv.bundle.model > pv/schema/bundle.schema.json``) and is what
``pv evidence verify`` validates against, so an old bundle is judged by the schema it claims.

Binding: ``contract.sha256`` is the digest of the contract file's exact bytes when the run
started; ``contract.binding_digest`` (method ``pv-canonical-v1``, see ``pv.bundle.digest``) is
the digest the evidence is bound to.  It leaves out ``metadata.status`` and changelog entries
that carry an ``evidence`` field, which is everything ``pv promote`` writes, so promotion does
not stale the bundle it promoted from; every other edit does.
"""

from __future__ import annotations

import datetime as _dt
import json
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Literal[1] = 1
PREDICATE_TYPE = "https://pv.dev/evidence/bundle/v1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
BUNDLE_FILE = "bundle.json"
STATEMENT_FILE = "statement.intoto.json"
ENVELOPE_FILE = "statement.intoto.dsse.json"  # the statement signed (DSSE, ed25519); optional
MANIFEST_FILE = "MANIFEST.sha256"
ARTIFACTS_DIR = "artifacts"
TMP_PREFIX = ".tmp-"

RUN_ID_TIME_FORMAT = "%Y%m%dT%H%M%S%fZ"  # a run id starts with its start time in this form


def parse_time(text: str) -> _dt.datetime | None:
    """A bundle's ISO 8601 time as an aware UTC datetime, or None if it is not one."""
    try:  # Python 3.11 reads a trailing Z as UTC
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=_dt.UTC) if when.tzinfo is None else when.astimezone(_dt.UTC)


VerdictName = Literal["survived", "falsified", "error", "skipped", "inconclusive", "not_run"]
NOISE_DESCRIPTION = (
    "observations measured with noise (pv.noise.Measured): name -> {interval: [low, high], figures: {...}}; "
    "an expect that held at some ends of these intervals and not at others is inconclusive"
)
SkipKind = Literal["hardware", "other"]
ArtifactKind = Literal["log", "plot", "file"]
Sha256 = str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContractRef(_Strict):
    id: str
    path: str = Field(description="contract file, POSIX path relative to the project root")
    version: str
    status: str = Field(description="metadata.status when the run started")
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the contract file's exact bytes")
    binding_digest: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    binding_method: Literal["pv-canonical-v1", "pv-canonical-v2"] = Field(
        default="pv-canonical-v2", description="v1 (PyYAML 1.1 rules) is no longer computed: such bundles read as stale"
    )


class GpuInfo(_Strict):
    name: str
    memory_gib: float | None = None
    memory_class: Literal["discrete", "integrated", "unknown"] = "unknown"


class Environment(_Strict):
    python: str
    implementation: str
    packages: dict[str, str | None] = Field(description="installed versions; null when not installed")
    git_commit: str | None = None
    git_dirty: bool | None = None
    os: str
    machine: str
    cpu_model: str
    cpu_cores_physical: int | None = None
    cpu_cores_logical: int | None = None
    memory_gib: float | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu: str = Field(description='"none" when no GPU is present, else the first GPU\'s name')


class MutantEntry(_Strict):
    declared: str | None = Field(description="the mutant the contract names, module:fault")
    verdict: VerdictName | None = Field(description="null when mutants were not run")
    killed: bool | None = None
    observations: dict[str, Any] = Field(default_factory=dict)
    message: str = ""


class CaseEntry(_Strict):
    """One case of a parametrized falsifier (pv.cases): its params, its verdict by `expect`."""

    id: str = Field(description="the case id, as in the pytest item FALSIFY-X-001[<id>]")
    verdict: VerdictName
    params: dict[str, Any] = Field(default_factory=dict, description="the falsifier's params with the case's values")
    observations: dict[str, Any] = Field(default_factory=dict)
    noise: dict[str, Any] = Field(default_factory=dict, description=NOISE_DESCRIPTION)
    seed: int | None = None
    duration_s: float = 0.0
    message: str = ""
    skip_reason: str | None = None
    mutant: MutantEntry | None = Field(default=None, description="this case's run under the mutant, if it ran")
    artifacts: list[str] = Field(default_factory=list, description="bundle-relative artifact paths")
    worker: str = "master"


class FalsifierEntry(_Strict):
    id: str
    ship_blocking: bool
    selected: bool = Field(
        description="false when this falsifier did not run in this session (deselected, interrupted)"
    )
    verdict: VerdictName
    expect: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    requires: list[str] = Field(default_factory=list)
    observations: dict[str, Any] = Field(default_factory=dict)
    noise: dict[str, Any] = Field(default_factory=dict, description=NOISE_DESCRIPTION)
    seed: int | None = None
    duration_s: float = 0.0
    message: str = ""
    skip_reason: str | None = None
    skip_kind: SkipKind | None = None
    mutant: MutantEntry
    artifacts: list[str] = Field(default_factory=list, description="bundle-relative artifact paths")
    hypothesis: dict[str, Any] | None = None
    worker: str = "master"
    device: str = "cpu"
    timeout_s: float | None = Field(default=None, description="the deadline this falsifier ran under; null: none")
    isolation: Literal["thread", "process", "launch"] | None = Field(
        default=None, description="where the checker ran: a thread of pytest, a forked process, torchrun ranks"
    )
    aggregate: str | None = Field(default=None, description="the predicate over every case's observations")
    cases: list[CaseEntry] = Field(
        default_factory=list,
        description="a parametrized falsifier's cases; its verdict, observations and mutant are then the aggregate's",
    )


class RunSettings(_Strict):
    """Every switch of the session that can change a verdict, as it was when the run started."""

    faults_env: list[str] = Field(
        default_factory=list, description="faults PV_FAULTS switched on for the whole run (never evidence)"
    )
    timeout_s: float | None = Field(default=None, description="the default per-falsifier deadline; null: none")
    isolation: str = Field(default="auto", description="the default isolation of checkers (auto, thread or process)")
    vram_wait_s: float = Field(default=0.0, description="how long cuda_free_gib falsifiers waited for free memory")
    markexpr: str = ""
    keyword: str = ""
    args: list[str] = Field(default_factory=list, description="pytest's command-line arguments")
    workers: int = Field(default=0, description="pytest-xdist workers; 0: one process")
    devices: str | None = Field(default=None, description="PV_DEVICES / CUDA_VISIBLE_DEVICES as the run saw them")


class ArtifactEntry(_Strict):
    path: str = Field(description="POSIX path relative to the bundle directory")
    sha256: Sha256 = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    kind: ArtifactKind
    falsifier: str
    case: str | None = Field(default=None, description="the case of a parametrized falsifier that wrote it")
    source: str = Field(description="where the checker wrote it")


class Summary(_Strict):
    declared: int
    selected: int
    survived: int
    falsified: int
    error: int
    skipped: int
    inconclusive: int = 0
    not_run: int
    mutants_killed: int
    mutants_survived: int
    skip_reasons: dict[str, int] = Field(default_factory=dict)


class ChainLink(_Strict):
    """This bundle's place in its contract's ledger (pv.evidence.ledger): covered by its digests and
    signature, so a bundle cannot be moved to another place in the chain unnoticed."""

    seq: int = Field(ge=1, description="1 for a contract's first ledger entry")
    previous: Sha256 | None = Field(
        default=None, description="the digest (sha256 of MANIFEST.sha256) of the previous bundle in the ledger"
    )


class CodeRef(_Strict):
    """The code the run measured (pv.evidence.code_binding): every file its verdicts rest on."""

    packages: list[str] = Field(description="the checker and system-under-test packages the scope was taken over")
    files: dict[str, Sha256] = Field(description="POSIX path relative to the project root -> sha256")
    digest: Sha256 = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 over the sorted files map")


class Bundle(_Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str = Field(pattern=r"^\d{8}T\d{6}\d{6}Z-[0-9a-f]{8}$", description="UTC time + short digest")
    session_id: str = Field(description="the pytest session's run id, shared by its bundles")
    started_at: str
    finished_at: str
    interrupted: bool = False
    recovered: bool = Field(default=False, description="rebuilt from the journal of a session that died")
    mutants_enabled: bool = False
    selection: str = ""
    settings: RunSettings | None = None
    contract: ContractRef
    environment: Environment
    falsifiers: list[FalsifierEntry]
    summary: Summary
    artifacts: list[ArtifactEntry] = Field(default_factory=list)
    chain: ChainLink | None = Field(default=None, description="null only in bundles written before the ledger")
    code: CodeRef | None = Field(default=None, description="null only in bundles written before code binding")

    def falsifier(self, falsify_id: str) -> FalsifierEntry | None:
        return next((f for f in self.falsifiers if f.id == falsify_id), None)


def json_schema() -> dict[str, Any]:
    schema = Bundle.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://pv.dev/schema/bundle/v1.json"
    return schema


def committed_schema() -> dict[str, Any]:
    text = resources.files("pv").joinpath("schema/bundle.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


if __name__ == "__main__":
    print(json.dumps(json_schema(), sort_keys=True, indent=2))
