"""backing_status: the ladder computed from the newest verified, current bundle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pv.evidence.status import assess, backing_status, status_mismatch
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import Project, Writer, result

# what the plugin decides for each skip (pv.requirements.unmet_hardware), as the bundle records it
KINDS = {
    "no CUDA": "hardware",
    "needs 40 GiB of GPU memory, found 8.0 GiB": "hardware",
    "missing package peft": "other",
}
S, F, E, K, N = Verdict.SURVIVED, Verdict.FALSIFIED, Verdict.ERROR, Verdict.SKIPPED, Verdict.NOT_RUN


@dataclass
class Loaded:  # the part of pv.loader.LoadedContract backing_status reads
    path: Path


def bundle_for(
    write: Writer,
    first: Verdict,
    second: Verdict,
    *,
    reason: str | None = None,
    mutant: Verdict | None = F,
    started: str = "2026-03-01T10:00:00+00:00",
) -> Path:
    return write(
        [
            result("FALSIFY-DEMO-001", first, mutant=mutant if first is S else None),
            result(
                "FALSIFY-DEMO-002",
                second,
                skip_reason=reason,
                skip_kind=KINDS.get(reason or ""),
                mutant=F if second is S else None,
            ),
            result("FALSIFY-DEMO-003", F, mutant=None),  # advisory: never blocks
        ],
        started=started,
    )


@pytest.mark.parametrize(
    ("first", "second", "reason", "mutant", "expected"),
    [
        (S, S, None, F, Status.ACTIVE),
        (S, K, "no CUDA", F, Status.ACTIVE_ALGORITHM_LEVEL),
        (S, K, "needs 40 GiB of GPU memory, found 8.0 GiB", F, Status.ACTIVE_ALGORITHM_LEVEL),
        (S, K, "missing package peft", F, Status.DRAFT),
        (S, F, None, F, Status.DRAFT),
        (S, E, None, F, Status.DRAFT),
        (S, N, None, F, Status.DRAFT),
        (S, S, None, S, Status.DRAFT),  # the mutant survived: the falsifier is vacuous
        (S, S, None, None, Status.DRAFT),  # mutants were not run
        (K, K, "no CUDA", F, Status.DRAFT),  # nothing ran at all
    ],
)
def test_ladder(
    project: Project,
    write: Writer,
    first: Verdict,
    second: Verdict,
    reason: str | None,
    mutant: Verdict | None,
    expected: Status,
) -> None:
    path = bundle_for(write, first, second, reason=reason, mutant=mutant)
    status, backing = backing_status(project.evidence, Loaded(project.contract))
    assert status is expected and backing == path
    assert backing_status(project.evidence, project.contract) == (status, backing)  # a bare path works too


def test_no_evidence_is_draft(project: Project) -> None:
    assert backing_status(project.evidence, project.contract) == (Status.DRAFT, None)


def test_newest_verified_bundle_wins(project: Project, write: Writer) -> None:
    bundle_for(write, S, S, started="2026-03-01T10:00:00+00:00")
    newest = bundle_for(write, S, F, started="2026-03-02T10:00:00+00:00")
    assessment = assess(project.evidence, project.contract)
    assert assessment.status is Status.DRAFT and assessment.bundle_path == newest
    assert assessment.falsified == ["FALSIFY-DEMO-002"]


def test_tampered_newest_bundle_blocks_never_falls_back(project: Project, write: Writer) -> None:
    older = bundle_for(write, S, S, started="2026-03-01T10:00:00+00:00")
    newest = bundle_for(write, S, F, started="2026-03-02T10:00:00+00:00")
    (newest / "bundle.json").write_text((newest / "bundle.json").read_text().replace("falsified", "survived"))
    assessment = assess(project.evidence, project.contract)
    # the older survived run is not read in its place: the status is blocked, naming the bundle
    assert assessment.status is Status.DRAFT and assessment.bundle_path is None
    assert any(newest.name in b and "tampered" in b for b in assessment.blocked), assessment.blocked
    assert [r.path for r in assessment.rejected] == [newest] and older.exists()
    assert status_mismatch(Status.ACTIVE, assessment) is not None
    assert status_mismatch(Status.DRAFT, assessment) is not None  # blocked whatever is declared


def test_stale_evidence_backs_nothing(project: Project, write: Writer) -> None:
    bundle_for(write, S, S)
    project.contract.write_text(project.contract.read_text().replace("<= 3.0", "<= 4.0"))
    status, backing = backing_status(project.evidence, project.contract)
    assert (status, backing) == (Status.DRAFT, None)


U = Verdict.INCONCLUSIVE  # undecided


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (U, S, Status.DRAFT),  # no decided verdict for DEMO-001: pending, never survived
        (S, U, Status.DRAFT),
        (U, U, Status.DRAFT),
    ],
)
def test_inconclusive_alone_never_backs_a_status(
    project: Project, write: Writer, first: Verdict, second: Verdict, expected: Status
) -> None:
    bundle_for(write, first, second)
    found = assess(project.evidence, project.contract)
    assert found.status is expected
    assert any(": inconclusive" in r for r in found.reasons)
    assert found.falsified == []


def test_a_newer_inconclusive_verdict_never_demotes(project: Project, write: Writer) -> None:
    older = bundle_for(write, S, S, started="2026-03-01T10:00:00+00:00")
    bundle_for(write, U, U, started="2026-03-02T10:00:00+00:00")
    found = assess(project.evidence, project.contract)
    assert found.status is Status.ACTIVE
    assert {s.bundle_path for s in found.sources.values() if s.entry.ship_blocking} == {older}


def test_a_newer_decided_verdict_replaces_an_older_inconclusive_one(project: Project, write: Writer) -> None:
    bundle_for(write, U, U, started="2026-03-01T10:00:00+00:00")
    newest = bundle_for(write, S, F, started="2026-03-02T10:00:00+00:00")
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT and found.falsified == ["FALSIFY-DEMO-002"]
    assert found.sources["FALSIFY-DEMO-002"].bundle_path == newest


def test_an_inconclusive_mutant_run_keeps_the_earlier_kill(project: Project, write: Writer) -> None:
    bundle_for(write, S, S, started="2026-03-01T10:00:00+00:00")
    bundle_for(write, S, S, mutant=U, started="2026-03-02T10:00:00+00:00")
    assert assess(project.evidence, project.contract).status is Status.ACTIVE


def test_an_inconclusive_mutant_run_alone_is_not_a_kill(project: Project, write: Writer) -> None:
    bundle_for(write, S, S, mutant=U)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT
    assert any("FALSIFY-DEMO-001: mutant" in r for r in found.reasons)


def test_the_summaries_of_what_was_not_counted() -> None:
    from types import SimpleNamespace

    from pv.evidence.status import _ignored_summary, _rejected_summary

    def report(status: str, changes: list[str] | None = None) -> SimpleNamespace:
        return SimpleNamespace(status=status, code_changes=changes)

    rejected = [report("stale"), report("stale", ["engine/a.py", "engine/b.py"]), report("tampered", ["x.py"])]
    assert _rejected_summary(rejected) == (  # type: ignore[arg-type]
        "2 stale, 1 tampered; the newest stale one: code changed since the run: engine/a.py, engine/b.py"
    )
    assert _rejected_summary([report("stale")]) == "1 stale"  # type: ignore[list-item]
    one = {Path("a"): "partial run", Path("b"): "partial run"}
    assert _ignored_summary(one) == "2 ignored: partial run"
    two = {**one, Path("c"): "faults switched on", Path("d"): "a run on another commit"}
    assert _ignored_summary(two) == "4 ignored: a run on another commit (and 2 other reasons)"


def _entry(fid: str, verdict: str, *, ship: bool = True, **extra: Any) -> Any:
    from pv.bundle.model import FalsifierEntry, MutantEntry

    mutant = extra.pop("mutant", MutantEntry(declared=None, verdict=None))
    fields: dict[str, Any] = {"verdict": verdict, "mutant": mutant, **extra}
    return FalsifierEntry(id=fid, ship_blocking=ship, selected=verdict != "not_run", **fields)


def test_the_status_from_entries_and_why_not_higher() -> None:
    from pv.bundle.model import MutantEntry
    from pv.evidence.status import status_from_entries

    killed = MutantEntry(declared="m:f", verdict="falsified", killed=True)
    survived_it = MutantEntry(declared="m:f", verdict="survived", killed=False)
    unrun = MutantEntry(declared="m:f", verdict=None)
    assert status_from_entries([]) == (Status.DRAFT, ["no ship-blocking falsifier"], [])
    assert status_from_entries([_entry("A", "survived", ship=False)]) == (
        Status.DRAFT,
        ["no ship-blocking falsifier"],
        [],
    )
    assert status_from_entries([_entry("A", "survived", mutant=killed), _entry("B", "survived")]) == (
        Status.ACTIVE,
        [],
        [],
    )
    assert status_from_entries([_entry("A", "survived", mutant=survived_it)]) == (
        Status.DRAFT,
        ["A: mutant m:f survived it (survived)"],
        [],
    )
    assert status_from_entries([_entry("A", "survived", mutant=unrun)])[1] == ["A: mutant m:f not run"]
    hw = _entry("B", "skipped", skip_kind="hardware", skip_reason="no CUDA")
    assert status_from_entries([_entry("A", "survived"), hw]) == (
        Status.ACTIVE_ALGORITHM_LEVEL,
        ["B: skipped (no CUDA)"],
        [],
    )
    assert status_from_entries([hw]) == (Status.DRAFT, ["B: skipped (no CUDA)", "no ship-blocking falsifier ran"], [])
    failing = [
        _entry("A", "falsified", message="x(=3) <= 2\nmore"),
        _entry("B", "error"),
        _entry("C", "skipped", skip_kind="other", skip_reason="missing package peft"),
        _entry("D", "not_run"),
    ]
    assert status_from_entries(failing) == (
        Status.DRAFT,
        ["A: falsified: x(=3) <= 2", "B: error", "C: skipped (missing package peft)", "D: not_run"],
        ["A"],
    )


def _report(run_id: str, *entries: Any) -> Any:
    from types import SimpleNamespace

    bundle = SimpleNamespace(
        run_id=run_id, falsifiers=list(entries), falsifier=lambda fid: next((e for e in entries if e.id == fid), None)
    )
    return SimpleNamespace(path=Path(run_id), bundle=bundle)


def test_which_verdict_counts_for_each_falsifier() -> None:
    from pv.bundle.model import MutantEntry
    from pv.evidence.status import pick_sources

    killed = MutantEntry(declared="m:f", verdict="falsified", killed=True)
    pending = MutantEntry(declared="m:f", verdict=None)
    newest_first = [
        _report(
            "r3",
            _entry("A", "skipped"),
            _entry("B", "survived", mutant=pending),
            _entry("C", "not_run"),
            _entry("E", "inconclusive"),
        ),
        _report("r2", _entry("A", "falsified"), _entry("B", "survived", mutant=killed), _entry("D", "not_run")),
        _report("r1", _entry("A", "survived"), _entry("C", "survived"), _entry("E", "skipped")),
        _report("r0"),
    ]
    newest_first.append(type(newest_first[0])(path=Path("rx"), bundle=None))
    got = pick_sources(newest_first)
    assert list(got) == ["A", "B", "C", "E", "D"]  # in the order the newest bundles name them
    assert (got["A"].run_id, got["A"].entry.verdict) == ("r2", "falsified")  # a skip replaces no decided verdict
    assert (got["B"].run_id, got["B"].entry.mutant, got["B"].mutant_from) == ("r3", killed, Path("r2"))
    assert (got["C"].run_id, got["C"].entry.verdict) == ("r1", "survived")  # not run replaces nothing
    assert (got["D"].run_id, got["D"].entry.verdict) == ("r2", "not_run")  # only ever not run
    assert (got["E"].run_id, got["E"].entry.verdict) == ("r3", "inconclusive")  # the newest of the undecided
    assert got["A"].bundle_path == Path("r2") and got["A"].mutant_from is None


def test_a_pending_mutant_takes_only_an_earlier_survivors_kill() -> None:
    from pv.bundle.model import MutantEntry
    from pv.evidence.status import pick_sources

    pending = MutantEntry(declared="m:f", verdict=None)
    killed = MutantEntry(declared="m:f", verdict="falsified", killed=True)
    undecided = MutantEntry(declared="m:f", verdict="inconclusive")
    newest_first = [
        _report("r3", _entry("A", "survived", mutant=pending)),
        _report("r2", _entry("A", "survived", mutant=undecided)),
        _report("r1", _entry("A", "falsified", mutant=killed)),
    ]
    source = pick_sources(newest_first)["A"]
    assert source.entry.mutant == pending and source.mutant_from is None


def test_a_newer_verdict_in_a_bundle_that_is_gone() -> None:
    from pv.evidence.ledger import Entry
    from pv.evidence.status import Source, _gone_newer

    sources = {
        "A": Source(_entry("A", "survived"), Path("b"), "r2"),
        "B": Source(_entry("B", "survived"), Path("b"), "r2"),
    }
    removed = [
        Entry(3, "pruned", "r1", "d", {"A": "falsified"}),  # older than the counting one
        Entry(4, "forgotten", "r3", "d", {"A": "falsified", "B": "skipped"}, reason="disk died"),
        Entry(5, "pruned", "r4", "d", {"B": "error"}),
    ]
    assert _gone_newer(sources, removed) == {
        "A": "A: its newest verdict (falsified) was in bundle r3, which is gone (forgotten: disk died); run it again",
        "B": "B: its newest verdict (error) was in bundle r4, which is gone (pruned); run it again",
    }


def test_the_ignored_summary_counts_the_other_reasons() -> None:
    from pv.evidence.status import _ignored_summary

    one, two = Path("a"), Path("b")
    assert _ignored_summary({one: "stale"}) == "1 ignored: stale"
    assert _ignored_summary({one: "stale", two: "stale"}) == "2 ignored: stale"
    assert _ignored_summary({one: "untrusted", two: "stale"}) == "2 ignored: stale (and 1 other reasons)"
