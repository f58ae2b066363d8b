"""Evidence through everyday work: partial runs, skips, version bumps, gc, one reader, one rule."""

from __future__ import annotations

import hashlib
import time

import pytest

from pv.evidence.status import assess, status_mismatch
from pv.evidence.verify import verify_bundle, verify_path
from pv.model import Status
from pv.results import Verdict
from tests.pv.evidence.conftest import IDS, Project, Writer, all_survive, record, reseal, result
from tests.pv.evidence.test_cli import cli  # noqa: F401  (the fixture)

FULL_DAY = "2026-03-01T10:00:00+00:00"
LATER = "2026-03-02T10:00:00+00:00"


def partial(fid: str, verdict: Verdict = Verdict.SURVIVED, mutant: Verdict | None = Verdict.FALSIFIED) -> list:
    """A run that selected one falsifier (``-k``): the others are not_run."""
    return [result(fid, verdict, mutant=mutant)] + [result(i, Verdict.NOT_RUN, mutant=None) for i in IDS if i != fid]


def test_a_partial_run_never_supersedes_a_fuller_one(project: Project, write: Writer) -> None:
    full = write(all_survive(), started=FULL_DAY)
    part = write(partial("FALSIFY-DEMO-001"), started=LATER)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.ACTIVE, found.reasons
    assert found.sources["FALSIFY-DEMO-001"].bundle_path == part  # the newest verdict for what it ran
    assert found.sources["FALSIFY-DEMO-002"].bundle_path == full  # the rest from the fuller run
    assert found.bundle_path == part and set(found.contributing) == {full, part}


def test_a_run_without_mutants_keeps_the_earlier_mutant_kill(project: Project, write: Writer) -> None:
    write(all_survive(), started=FULL_DAY)
    newer = write(partial("FALSIFY-DEMO-001", mutant=None), started=LATER)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.ACTIVE, found.reasons
    source = found.sources["FALSIFY-DEMO-001"]
    assert source.bundle_path == newer and source.mutant_from is not None and source.entry.mutant.killed


def test_a_newer_skip_is_not_evidence_against_an_older_measurement(project: Project, write: Writer) -> None:
    write(all_survive(), started=FULL_DAY)
    cpu_only = [result(i, Verdict.SURVIVED) for i in IDS]
    cpu_only[1] = result(
        "FALSIFY-DEMO-002", Verdict.SKIPPED, mutant=None, skip_reason="requires cuda: no CUDA", skip_kind="hardware"
    )
    write(cpu_only, started=LATER)
    assert assess(project.evidence, project.contract).status is Status.ACTIVE


def test_a_newer_falsified_verdict_demotes_even_from_a_partial_run(project: Project, write: Writer) -> None:
    write(all_survive(), started=FULL_DAY)
    write(partial("FALSIFY-DEMO-001", Verdict.FALSIFIED, mutant=None), started=LATER)
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT and found.falsified == ["FALSIFY-DEMO-001"]


def test_partial_run_after_a_full_one_leaves_status_lint_and_promote_check_green(
    cli,  # noqa: F811
    project: Project,
    write: Writer,
) -> None:
    write(all_survive(), started=FULL_DAY)
    assert cli("promote")[0] == 0
    write(partial("FALSIFY-DEMO-003"), started=LATER)
    code, out = cli("promote", "--check")
    assert code == 0, out
    code, out = cli("status")
    assert code == 0 and "ACTIVE" in out and "UNBACKED" not in out, out
    code, out = cli("lint", "--format", "json")
    assert '"PVL701"' not in out and '"PVL703"' not in out, out


def test_promote_check_fails_on_any_status_other_than_what_evidence_supports(
    cli,  # noqa: F811
    project: Project,
    write: Writer,
) -> None:
    only_cpu = [result(i, Verdict.SURVIVED) for i in IDS]
    only_cpu[1] = result(
        "FALSIFY-DEMO-002", Verdict.SKIPPED, mutant=None, skip_reason="requires cuda: no CUDA", skip_kind="hardware"
    )
    write(only_cpu)
    text = project.contract.read_text()
    project.contract.write_text(text.replace("status: DRAFT ", "status: ACTIVE"))  # above: AAL only
    code, out = cli("promote", "--check")
    assert code == 1 and "ACTIVE -> ACTIVE_ALGORITHM_LEVEL" in out, out
    code, out = cli("lint", "--format", "json")
    assert '"PVL701"' in out
    project.contract.write_text(text)  # DRAFT: below what the evidence supports
    assert cli("promote", "--check")[0] == 1
    assert '"PVL703"' in cli("lint", "--format", "json")[1]
    assert cli("promote")[0] == 0
    assert cli("promote", "--check")[0] == 0


def bump(project: Project, bound: str = "30.0", version: str = "1.1.0") -> None:
    text = project.contract.read_text()
    text = text.replace('"step0_loss <= 3.0"', f'"step0_loss <= {bound}"')
    text = text.replace("version: 1.0.0        #", f"version: {version}        #")
    text = text.replace(
        "  changelog:\n", f'  changelog:\n    - {{version: {version}, date: "2026-03-05", change: looser GPU bound}}\n'
    )
    project.contract.write_text(text)


def test_bump_edit_rerun_then_gc_leaves_verify_green(cli, project: Project, write: Writer) -> None:  # noqa: F811
    old = write(all_survive(), started=FULL_DAY)
    assert cli("promote")[0] == 0  # the changelog now names `old`
    bump(project)
    [report] = verify_path(project.evidence)
    assert report.status == "superseded" and report.superseded and report.intact
    code, out = cli("evidence", "verify")
    assert code == 0 and "superseded" in out, out  # history, not a failure
    new = write(all_survive(), started=LATER)
    code, out = cli("evidence", "gc", "--keep", "1")
    assert code == 0 and "stale or superseded" in out, out
    assert not old.exists() and new.exists()  # the changelog's bundle went with its version
    code, out = cli("evidence", "verify")
    assert code == 0 and "1 bundles: 1 ok" in out, out


def test_an_edit_without_a_version_bump_is_stale_and_fails_verify(cli, project: Project, write: Writer) -> None:  # noqa: F811
    write(all_survive())
    bump(project, version="1.0.0")
    [report] = verify_path(project.evidence)
    assert report.status == "stale"
    assert cli("evidence", "verify")[0] == 1
    code, out = cli("evidence", "gc", "--keep", "5")
    assert code == 0 and "1 stale or superseded" in out
    assert cli("evidence", "verify")[0] == 1  # nothing left to verify is a finding too


def test_the_digest_reads_the_contract_as_the_run_does_yaml_1_2(project: Project, write: Writer) -> None:
    text = project.contract.read_text().replace("{vocab_size: 64, seed: 0}", "{vocab_size: 014, seed: 0}")
    project.contract.write_text(text)
    write(all_survive())
    # YAML 1.1 reads 014 as octal 12; the run (pv's loader, YAML 1.2) reads 14: 12 is an edit
    project.contract.write_text(text.replace("vocab_size: 014", "vocab_size: 12"))
    [report] = verify_path(project.evidence)
    assert report.status == "stale", report.problems


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
)


def test_an_alias_bomb_contract_is_refused_by_verify_in_under_a_second(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    bomb = "metadata: {id: demo-v1}\n" + ALIAS_BOMB * 8
    assert 1_000 < len(bomb.encode()) < 6_000
    project.contract.write_text(bomb)
    start = time.perf_counter()
    report = verify_bundle(bundle)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    assert report.status == "stale" and "no longer loads" in report.problems[0].detail


def test_promotion_does_not_stale_and_evidence_binds_to_the_loader_data(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    data = (bundle / "bundle.json").read_text()
    assert '"binding_method": "pv-canonical-v2"' in data
    assert hashlib.sha256(project.contract.read_bytes()).hexdigest() in data


def test_a_v1_bound_bundle_reads_as_stale_with_the_reason(project: Project, write: Writer) -> None:
    import json

    bundle = write(all_survive())
    data = json.loads((bundle / "bundle.json").read_text())
    data["contract"]["binding_method"] = "pv-canonical-v1"
    reseal(bundle, data)
    report = verify_bundle(bundle)
    assert report.status == "stale" and "pv-canonical-v1" in report.problems[0].detail


def test_status_mismatch_is_exact_and_leaves_retired_alone(project: Project, write: Writer) -> None:
    write(all_survive())
    found = assess(project.evidence, project.contract)
    assert status_mismatch(Status.ACTIVE, found) is None
    assert status_mismatch(Status.RETIRED, found) is None
    assert "run `pv promote`" in (status_mismatch(Status.DRAFT, found) or "")
    assert record(project, []).mutants_enabled  # the fixture records mutant runs


@pytest.mark.parametrize("faults", [["demo_fault"]])
def test_a_run_with_faults_from_the_environment_never_backs_a_status(
    project: Project, write: Writer, faults: list[str]
) -> None:
    from pv.evidence.writer import write_run
    from tests.pv.evidence.conftest import ENV

    rec = record(project, all_survive())
    rec.settings = {"faults_env": faults}
    [outcome] = write_run(rec, project.evidence, project.root, ENV)
    assert outcome.path is not None
    found = assess(project.evidence, project.contract)
    assert found.status is Status.DRAFT and outcome.path in found.ignored
    assert "PV_FAULTS" in found.ignored[outcome.path]


def test_a_bundle_written_before_new_fields_existed_is_not_tampered(project: Project, write: Writer) -> None:
    import json

    bundle = write(all_survive())
    data = json.loads((bundle / "bundle.json").read_text())
    for key in ("settings", "recovered"):
        data.pop(key)
    for f in data["falsifiers"]:
        f.pop("timeout_s")
        f.pop("isolation")
    statement = json.loads((bundle / "statement.intoto.json").read_text())
    statement["predicate"] = data
    reseal(bundle, data, statement)
    report = verify_bundle(bundle)
    assert report.ok, report.problems
