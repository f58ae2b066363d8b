"""Shards over several machines: four local shards merged are the one-machine run; what keeps
parts apart is refused; a missing shard leaves a partial run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pv.app import app
from pv.bundle.signing import KeyRing, Signer, generate
from pv.cli import COMMAND_MODULES
from pv.evidence import shards
from pv.evidence.shards import ShardError, merge, parse_shard, read_part, split
from tests.pv.evidence.test_pytest_e2e import MUTANT, bundles, contract, e2e  # noqa: F401  (the fixture)

for _name in COMMAND_MODULES:  # the commands register on the app when their modules load
    __import__(_name)

RUNS = ("--pv-mutants", "--pv-evidence", "-p", "no:cacheprovider")


@pytest.fixture
def project(e2e: pytest.Pytester) -> pytest.Pytester:  # noqa: F811
    """The e2e project with a third contract whose one falsifier runs three cases."""
    contract(
        e2e.path,
        "gamma-v1",
        [
            {
                "id": "FALSIFY-GAMMA-001",
                "ship_blocking": True,
                "mutant": MUTANT,
                "parametrize": {"k": [1, 2, 3]},
                "check": "e2efalsifiers.checks:with_k",
            }
        ],
    )
    checks = e2e.path / "e2efalsifiers" / "checks.py"
    checks.write_text(
        checks.read_text() + '\n\n@checker(observes=["value"])\ndef with_k(k):\n    return {"value": value()}\n'
    )
    return e2e


def _run(p: pytest.Pytester, evidence: str, *extra: str) -> pytest.RunResult:
    return p.runpytest(*RUNS, "--pv-evidence-dir", evidence, *extra)


def _verdicts(root: Path, evidence: str) -> dict[str, dict[str, Any]]:
    out = {}
    for cid, bundle in bundles(root, evidence).items():
        data = json.loads((bundle / "bundle.json").read_text())
        out[cid] = {
            f["id"]: (
                f["verdict"],
                f["selected"],
                f["mutant"]["verdict"],
                f["observations"].get("value"),
                len(f["cases"]),
            )
            for f in data["falsifiers"]
        }
    return out


def _merge_cli(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["evidence", "merge", *args], catch_exceptions=False)
    return result.exit_code, result.output


def _parts(root: Path, evidence: str = "sharded") -> list[Path]:
    """The parts, in shard order (a part's folder is named <run id>-shard-K-of-N)."""
    return sorted(
        (root / evidence / shards.PARTS_DIR).iterdir(), key=lambda p: int(p.name.split("-shard-")[1].split("-")[0])
    )


def _sharded(p: pytest.Pytester, n: int = 4, evidence: str = "sharded", *extra: str) -> list[Path]:
    for k in range(1, n + 1):
        _run(p, evidence, "--pv-shard", f"{k}/{n}", *extra)
    return _parts(p.path, evidence)


def test_four_shards_merged_are_the_one_machine_run(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(project, "one")
    parts = _sharded(project)
    assert len(parts) == 4 and not bundles(project.path, "sharded")  # a shard writes its part, never bundles
    read = [read_part(p, None) for p in parts]
    ran = [{r.falsify_id for r in part.run.results if r.verdict.value != "not_run"} for part in read]
    everything = set().union(*ran)
    assert sum(len(r) for r in ran) == len(everything) == 6  # each falsifier in exactly one shard
    assert all(part.plan == read[0].plan for part in read)
    monkeypatch.chdir(project.path)
    code, out = _merge_cli(project.path, "sharded/.parts", "--evidence", "sharded")
    assert code == 0, out
    assert "shard 4 of 4" in out and "gamma-v1: sharded/gamma-v1/" in out
    assert _verdicts(project.path, "sharded") == _verdicts(project.path, "one")


def test_the_split_is_longest_first_onto_the_least_loaded_shard() -> None:
    durations = {"c::A": 10.0, "c::B": 6.0, "c::C": 5.0, "c::D": 4.0, "c::E": 1.0}
    assert split(durations, durations, 2) == {"c::A": 1, "c::B": 2, "c::C": 2, "c::D": 1, "c::E": 2}
    # an unrecorded falsifier weighs the median of the recorded ones; equal weights go in key order
    assert split(["c::A", "c::B", "c::new"], {"c::A": 4.0, "c::B": 2.0}, 3) == {"c::A": 1, "c::B": 3, "c::new": 2}
    assert split(["x::1", "x::2"], {}, 4) == {"x::1": 1, "x::2": 2}


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "1/0", "-1/2"])
def test_a_shard_option_that_is_not_k_of_n_is_refused(text: str) -> None:
    with pytest.raises(ShardError, match=r"^--pv-shard "):
        parse_shard(text)
    assert parse_shard(" 2 / 4 ") == (2, 4)


def test_pytest_refuses_a_bad_shard_option(project: pytest.Pytester) -> None:
    result = project.runpytest("--pv-shard", "5/4", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pv: --pv-shard '5/4': K must be between 1 and N*"])


def _edit(part: Path, change: Any) -> None:
    data = json.loads((part / shards.PART_FILE).read_text())
    change(data)
    (part / shards.PART_FILE).write_text(json.dumps(data))


def test_parts_that_are_not_one_run_are_refused(project: pytest.Pytester) -> None:
    parts = _sharded(project, 2)
    read = [read_part(p, None) for p in parts]
    with pytest.raises(ShardError, match=r"^shard 1 of 2 is given twice"):
        merge([read[0], read_part(parts[0], None)])

    def other_commit(data: dict[str, Any]) -> None:
        data["commit"] = "0" * 40

    _edit(parts[1], other_commit)
    with pytest.raises(ShardError, match=r"^the parts are not one run: their commits differ"):
        merge([read_part(p, None) for p in parts])


def test_a_contract_measured_in_other_bytes_is_refused(project: pytest.Pytester) -> None:
    parts = _sharded(project, 2)

    def other_bytes(data: dict[str, Any]) -> None:
        for c in data["run"]["contracts"].values():
            c["sha256"] = "f" * 64

    _edit(parts[1], other_bytes)
    with pytest.raises(ShardError, match=r"^contract \S+: the parts measured different bytes \(shard 2 differs\)$"):
        merge([read_part(p, None) for p in parts])


def test_a_falsifier_in_two_parts_or_missing_from_its_part_is_refused(project: pytest.Pytester) -> None:
    parts = _sharded(project, 2)
    first, second = (json.loads((p / shards.PART_FILE).read_text()) for p in parts)
    ran = next(r for r in first["run"]["results"] if r["verdict"] != "not_run")

    def duplicated(data: dict[str, Any]) -> None:
        data["run"]["results"] = [r for r in data["run"]["results"] if r["falsify_id"] != ran["falsify_id"]] + [ran]

    _edit(parts[1], duplicated)
    with pytest.raises(ShardError, match=r"ran in shard 1 and in shard 2: a falsifier is in one part$"):
        merge([read_part(p, None) for p in parts])
    (parts[1] / shards.PART_FILE).write_text(json.dumps(second))

    def dropped(data: dict[str, Any]) -> None:
        for r in data["run"]["results"]:
            if r["falsify_id"] == ran["falsify_id"]:
                r["verdict"] = "not_run"

    _edit(parts[0], dropped)
    with pytest.raises(ShardError, match=rf"^shard 1's part lacks \S+::{ran['falsify_id']}.*: run the shard again$"):
        merge([read_part(p, None) for p in parts])


def test_parts_signed_by_untrusted_keys_or_tampered_are_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    private, public = generate()
    monkeypatch.setenv("PV_SIGNING_KEY", private.decode())
    parts = _sharded(project, 2)
    trusted = KeyRing.from_pem(public, "ci")
    assert read_part(parts[0], trusted).signed_by == Signer.from_pem(private).key_id
    other = KeyRing.from_pem(generate()[1], "other")
    with pytest.raises(ShardError, match=r": untrusted: signed only by keys that are not trusted"):
        read_part(parts[0], other)
    _edit(parts[0], lambda data: data.update(commit="1" * 40))
    for ring in (None, trusted):
        with pytest.raises(ShardError, match=r": tampered: the signed payload is not"):
            read_part(parts[0], ring)
    (parts[1] / shards.PART_ENVELOPE).unlink()
    with pytest.raises(ShardError, match=r": unsigned, and trusted keys are configured$"):
        read_part(parts[1], trusted)
    assert read_part(parts[1], None).notes == ["unsigned"]


def test_an_artifact_that_is_not_the_listed_file_is_refused(project: pytest.Pytester) -> None:
    parts = _sharded(project, 2)
    part = next(p for p in parts if any((p / shards.FILES_DIR).iterdir()))
    artifact = next((part / shards.FILES_DIR).iterdir())
    artifact.write_text("value 9.0\n")
    with pytest.raises(ShardError, match=rf"artifact files/{artifact.name} is not the file the part lists"):
        read_part(part, None)
    artifact.unlink()
    with pytest.raises(ShardError, match=rf"artifact files/{artifact.name} is missing$"):
        read_part(part, None)


def test_a_missing_shard_leaves_a_partial_run_that_supersedes_nothing(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = _sharded(project, 4)
    shutil.rmtree(parts[2])
    monkeypatch.chdir(project.path)
    code, out = _merge_cli(project.path, *map(str, parts[:2] + parts[3:]), "--evidence", "sharded")
    assert code == 0, out
    assert "shard(s) 3 of 4 missing" in out and "this run is partial and supersedes nothing" in out
    selected = {
        fid: entry[1] for verdicts in _verdicts(project.path, "sharded").values() for fid, entry in verdicts.items()
    }
    plan = read_part(parts[0], None).plan
    assert {fid for fid, sel in selected.items() if not sel} == {k.split("::")[1] for k, s in plan.items() if s == 3}


def test_merge_names_a_path_that_holds_no_part(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.path)
    (project.path / "empty").mkdir()
    assert _merge_cli(project.path, "empty")[0] == 2
    assert _merge_cli(project.path, "nowhere")[0] == 2


def test_shards_under_xdist_write_the_same_split(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # the controller collects nothing: the split reaches it from the workers
    _run(project, "one")
    for k in (1, 2):
        result = project.runpytest_subprocess(*RUNS, "--pv-evidence-dir", "sharded", "--pv-shard", f"{k}/2", "-n", "2")
        result.stdout.fnmatch_lines([f"*pv evidence: shard {k} of 2 -> *"])
    parts = _parts(project.path)
    read = [read_part(p, None) for p in parts]
    assert read[0].plan == read[1].plan and set(read[0].plan.values()) == {1, 2}
    monkeypatch.chdir(project.path)
    code, out = _merge_cli(project.path, "sharded/.parts", "--evidence", "sharded")
    assert code == 0, out
    assert _verdicts(project.path, "sharded") == _verdicts(project.path, "one")
