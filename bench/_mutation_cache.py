"""The full mutation run's results, kept in the repository so that the run can span sessions.

mutmut keeps its verdicts in ``mutants/`` (ignored by git, gone with the clone).  After each chunk
``bench/mutation.py`` copies every decided mutant into ``bench/mutation-results.jsonl``, one line
per mutant, with what the verdict depended on:

- ``function_digest``: mutmut's digest of the mutated function's source.  A mutant of a function
  that has changed since is run again (mutmut's own rule: edits elsewhere in the engine do not
  reset a verdict).
- a **killed** mutant names the falsifiers that failed under it and, per falsifier, the digest of
  what decides its verdict: its contract's binding digest, its checker's module and the shared
  fixtures and inputs (``contracts/conftest.py``, ``conftest.py``, ``falsifiers/_*.py``,
  ``recipes/``).  The verdict stands while those are unchanged, whatever else the suite gains.
- any other outcome (survived, reached by no falsifier, killed by a crash with no falsifier named)
  holds the digest of the whole suite and is run again once any contract or checker changes.

Digests are taken from the copies mutmut ran (``mutants/contracts``, ``mutants/falsifiers``), so
editing the repository while a chunk runs never labels a verdict with code it did not run.
The file is read by ``pv mutation report --results``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from pv.evidence.digest import contract_binding_digest
from pv.mutation import KILLED, KILLING_VERDICTS, read_log, status_of

# Not part of the mutation run's suite (see pyproject's [tool.mutmut]): the real-model families.
EXCLUDED_CONTRACTS = ("real-model-",)
SHARED_FIXTURES = ("contracts/conftest.py", "conftest.py")


@dataclass(frozen=True)
class Record:
    mutant: str
    module: str
    function: str
    function_digest: str
    status: str
    killers: list[str] = field(default_factory=list)
    killer_digests: dict[str, str] = field(default_factory=dict)
    suite_digest: str | None = None  # set when the verdict depends on the whole suite

    def line(self) -> str:
        data = {k: v for k, v in asdict(self).items() if v not in (None, [], {})}
        return json.dumps(data, sort_keys=True, ensure_ascii=False)


def function_of(mutant: str) -> str:
    """``engine.model.xǁAttentionǁforward__mutmut_3`` -> ``xǁAttentionǁforward`` (mutmut's key)."""
    return mutant.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[1]


def _sha(parts: Iterable[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in parts:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class SuiteDigests:
    """Digests of the contract suite a chunk ran: the whole suite, and what decides each falsifier."""

    suite: str
    by_falsifier: dict[str, str]

    @classmethod
    def measure(cls, root: Path) -> SuiteDigests:
        """From the copies under ``root`` (mutmut's ``mutants/``)."""
        contracts = sorted(p for p in (root / "contracts").glob("*.yaml") if not p.name.startswith(EXCLUDED_CONTRACTS))
        shared_paths = [root / s for s in SHARED_FIXTURES] + sorted((root / "falsifiers").glob("_*.py"))
        shared_paths += sorted((root / "recipes").glob("*.yaml"))  # the recipes falsifiers train from
        shared_paths.append(root / "falsifiers" / "__init__.py")
        shared = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in shared_paths if p.is_file()]
        by_falsifier: dict[str, str] = {}
        every: list[tuple[str, bytes]] = list(shared)
        for path in contracts:
            raw = path.read_bytes()
            data = yaml.load(raw, Loader=yaml.CSafeLoader)
            binding = contract_binding_digest(raw, path).encode()
            every.append((path.name, binding))
            for falsifier in data.get("falsification_tests") or []:
                module = str(falsifier.get("check", "")).partition(":")[0]
                parts = [*shared, (path.name, binding)]
                checker = root / (module.replace(".", "/") + ".py")
                if module and checker.is_file():
                    parts.append((checker.relative_to(root).as_posix(), checker.read_bytes()))
                by_falsifier[f"{data['metadata']['id']}::{falsifier['id']}"] = _sha(parts)
        every += [(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted((root / "falsifiers").rglob("*.py"))]
        return cls(_sha(every), by_falsifier)

    def of(self, falsifier: str) -> str | None:
        return self.by_falsifier.get(falsifier)

    def current(self, record: Record) -> bool:
        """Whether ``record``'s verdict still holds for this suite (its function digest aside)."""
        if record.suite_digest is not None:
            return record.suite_digest == self.suite
        return bool(record.killers) and all(self.of(k) == record.killer_digests.get(k) for k in record.killers)


@dataclass(frozen=True)
class Chunk:
    """What one mutmut invocation was asked to run, and the suite it ran (``mutants/pv-chunk.json``)."""

    names: list[str]
    suite: SuiteDigests

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"names": self.names, "suite": asdict(self.suite)}), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Chunk | None:
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(list(data["names"]), SuiteDigests(**data["suite"]))


def read(path: Path) -> dict[str, Record]:
    records: dict[str, Record] = {}
    if not path.is_file():
        return records
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = Record(**json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a mutation result ({exc})") from None
        records[record.mutant] = record
    return records


def write(path: Path, records: Mapping[str, Record]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(records[k].line() + "\n" for k in sorted(records)), encoding="utf-8")
    tmp.replace(path)


def harvest(mutants: Path, chunk: Chunk) -> list[Record]:
    """The mutants of ``chunk`` that mutmut has decided under ``mutants/``, as records of its suite."""
    log = read_log(mutants / "pv-mutation-log.jsonl")
    wanted, suite = set(chunk.names), chunk.suite
    found: list[Record] = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes: dict[str, str] = data.get("hash_by_function_name", {})
        for name, code in data["exit_code_by_key"].items():
            status = status_of(code)
            if name not in wanted or status in ("not checked", "interrupted"):
                continue
            function = function_of(name)
            killers = sorted(f for f, v in log.get(name, {}).items() if v in KILLING_VERDICTS)
            if status in KILLED and killers and all(suite.of(k) for k in killers):
                record = Record(
                    name,
                    module,
                    function,
                    hashes.get(function, ""),
                    status,
                    killers,
                    {k: suite.of(k) or "" for k in killers},
                )
            else:
                record = Record(
                    name, module, function, hashes.get(function, ""), status, killers, suite_digest=suite.suite
                )
            found.append(record)
    return found


def current_function_digests(mutants: Path) -> dict[str, tuple[str, str]]:
    """mutant -> (module, digest of its function now), for every mutant mutmut generated."""
    names: dict[str, tuple[str, str]] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes: dict[str, str] = data.get("hash_by_function_name", {})
        for name in data["exit_code_by_key"]:
            names[name] = (module, hashes.get(function_of(name), ""))
    return names


def forget(mutants: Path, names: Iterable[str]) -> None:
    """Clear mutmut's own verdicts for ``names``, so that a chunk stopped early leaves none it did not reach."""
    wanted = set(names)
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes: dict[str, int | None] = data["exit_code_by_key"]
        hit = [n for n in codes if n in wanted and codes[n] is not None]
        if hit:
            for name in hit:
                codes[name] = None
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")
