"""Each way a bundle can be spoiled, and exactly what `pv evidence verify` says: the status, the
file it names and the words.  The reviewer reads these; a wrong file or a vague reason is a defect."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pv.bundle.digest import sha256_file
from pv.evidence.verify import verify_bundle
from pv.evidence.writer import manifest_text
from tests.pv.evidence.conftest import Project, Writer, all_survive, reseal


@pytest.fixture
def bundle(write: Writer) -> Path:
    return write(all_survive())


def _remanifest(bundle: Path) -> None:
    """A forger recomputing the manifest over every file now in the folder."""
    files = {
        p.relative_to(bundle).as_posix(): sha256_file(p)
        for p in sorted(bundle.rglob("*"))
        if p.is_file() and p.name != "MANIFEST.sha256"
    }
    (bundle / "MANIFEST.sha256").write_text(manifest_text(files))


def _data(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "bundle.json").read_text())


def _problems(bundle: Path) -> list[tuple[str, str, str]]:
    return [(p.kind, p.file, p.detail) for p in verify_bundle(bundle).problems]


def _manifest(bundle: Path, edit: Callable[[list[str]], str]) -> None:
    path = bundle / "MANIFEST.sha256"
    path.write_text(edit(path.read_text().splitlines()))


def test_the_manifest(bundle: Path) -> None:
    lines = (bundle / "MANIFEST.sha256").read_text().splitlines()
    _manifest(bundle, lambda ls: "\n".join(["junk", *ls]) + "\n")
    assert _problems(bundle) == [("tampered", "MANIFEST.sha256", "line 1 is malformed")]
    _manifest(bundle, lambda ls: "\n".join([*lines, lines[0]]) + "\n")
    assert _problems(bundle) == [("tampered", "MANIFEST.sha256", f"line {len(lines) + 1} is malformed")]  # twice
    _manifest(bundle, lambda ls: "\n".join([*lines, "0" * 64 + "  ../escape"]) + "\n")
    assert _problems(bundle) == [("tampered", "MANIFEST.sha256", f"line {len(lines) + 1} is malformed")]
    _manifest(bundle, lambda ls: "\n".join(lines))  # no final line break
    assert _problems(bundle) == [("tampered", "MANIFEST.sha256", "not in canonical form")]
    _manifest(bundle, lambda ls: "\n".join(reversed(lines)) + "\n")
    assert _problems(bundle) == [("tampered", "MANIFEST.sha256", "not in canonical form")]
    (bundle / "MANIFEST.sha256").unlink()
    assert _problems(bundle) == [("incomplete", "MANIFEST.sha256", "no manifest: the write never finished")]
    (bundle / "MANIFEST.sha256").write_bytes(b"\xff\xfe")
    ((kind, file, detail),) = _problems(bundle)
    assert (kind, file) == ("tampered", "MANIFEST.sha256") and detail.startswith("unreadable: ")


def test_the_files(bundle: Path) -> None:
    (bundle / "extra.txt").write_text("x")
    assert _problems(bundle) == [("tampered", "extra.txt", "file not in the manifest (added)")]
    (bundle / "extra.txt").unlink()
    statement = (bundle / "statement.intoto.json").read_bytes()
    (bundle / "statement.intoto.json").unlink()
    assert _problems(bundle) == [("missing", "statement.intoto.json", "file listed in the manifest is missing")]
    (bundle / "elsewhere.json").write_bytes(statement)
    (bundle / "statement.intoto.json").symlink_to(bundle / "elsewhere.json")
    _remanifest(bundle)
    (bundle / "elsewhere.json").unlink()
    (bundle / "elsewhere.json").write_bytes(statement)
    assert ("tampered", "statement.intoto.json", "is a symbolic link") in _problems(bundle)
    (bundle / "statement.intoto.json").unlink()
    (bundle / "elsewhere.json").unlink()
    _remanifest(bundle)
    assert _problems(bundle) == [("missing", "statement.intoto.json", "not listed in the manifest")]


def test_an_artifact_listed_and_gone(write: Writer, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 0\n")
    results = all_survive()
    results[0].artifacts = [str(log)]
    bundle = write(results)
    rel = "artifacts/logs/FALSIFY-DEMO-001/train.log"
    (bundle / rel).unlink()
    assert _problems(bundle) == [("missing", rel, "artifact listed in the manifest is missing")]
    (bundle / rel).write_text("step 0 forged\n")
    _remanifest(bundle)  # the manifest now agrees, bundle.json does not
    assert ("tampered", rel, "bundle.json and the manifest disagree on this artifact") in _problems(bundle)


def test_the_json(bundle: Path) -> None:
    (bundle / "bundle.json").write_text("{not json")
    _remanifest(bundle)
    ((kind, file, detail),) = _problems(bundle)
    assert (kind, file) == ("schema_error", "bundle.json") and detail.startswith("not JSON: ")
    (bundle / "bundle.json").write_text("[1]")
    _remanifest(bundle)
    assert _problems(bundle) == [("schema_error", "bundle.json", "not a JSON object")]
    (bundle / "bundle.json").write_text('{"schema_version": 2}')
    _remanifest(bundle)
    assert _problems(bundle) == [("schema_error", "bundle.json", "unsupported schema_version 2")]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d.update(run_id="20260301T100000000001Z-0000beef"),
            "run_id 20260301T100000000001Z-0000beef does not match its folder",
        ),
        (lambda d: d["contract"].update(id="other-v1"), "contract other-v1 is not its folder's"),
        (lambda d: d.update(started_at="2026-03-01T11:00:00+00:00"), "run_id does not carry the run's started_at"),
    ],
)
def test_what_bundle_json_says_of_itself(bundle: Path, change: Callable[[dict[str, Any]], None], expected: str) -> None:
    data = _data(bundle)
    change(data)
    reseal(bundle, data)
    assert ("tampered", "bundle.json", expected) in _problems(bundle)


def test_a_run_dated_in_the_future(bundle: Path) -> None:
    data = _data(bundle)
    future = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    data["started_at"] = future.isoformat()
    reseal(bundle, data)
    assert ("tampered", "bundle.json", f"started_at {future.isoformat()} is in the future") in _problems(bundle)
    data["started_at"] = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).isoformat()  # within the clocks' drift
    reseal(bundle, data)
    assert not any("in the future" in d for _, _, d in _problems(bundle))


def test_the_statement(bundle: Path) -> None:
    data = _data(bundle)
    statement = json.loads((bundle / "statement.intoto.json").read_text())
    reseal(bundle, data, {**statement, "predicate": {**data, "run_id": "x"}})
    assert _problems(bundle) == [("tampered", "statement.intoto.json", "predicate differs from bundle.json")]
    reseal(bundle, data, {**statement, "subject": []})
    assert _problems(bundle) == [("tampered", "statement.intoto.json", "type or subjects differ from bundle.json")]
    reseal(bundle, data, [statement])  # type: ignore[arg-type]
    assert _problems(bundle) == [("tampered", "statement.intoto.json", "predicate differs from bundle.json")]


def test_the_binding_to_the_contract_now(bundle: Path, project: Project) -> None:
    contract = project.contract
    text = contract.read_text()
    rel = "contracts/demo-v1.yaml"
    assert _problems(bundle) == []
    contract.write_text(text.replace("status: DRAFT", "status: ACTIVE", 1))  # what promote writes: not a change
    report = verify_bundle(bundle)
    assert report.problems == [] and report.notes == [
        "contract bytes changed since the run (status, promotion changelog or formatting only)"
    ]
    contract.write_text(text.replace("<= 3.0", "<= 2.5").replace("version: 1.0.0", "version: 1.1.0", 1))
    assert _problems(bundle) == [("superseded", rel, "bound to version 1.0.0; the contract is 1.1.0")]
    contract.write_text(text.replace("<= 3.0", "<= 2.5").replace("version: 1.0.0", "version: 0.9.0", 1))
    assert _problems(bundle) == [("stale", rel, "contract edited since the run without a version bump")]
    contract.write_text("metadata: [1\n")
    ((kind, file, detail),) = _problems(bundle)
    assert (kind, file) == ("stale", rel) and detail.startswith("contract no longer loads: ")
    contract.unlink()
    assert _problems(bundle) == [("stale", rel, "contract file not found")]


def test_a_binding_by_an_earlier_method(bundle: Path) -> None:
    data = _data(bundle)
    data["contract"]["binding_method"] = "pv-canonical-v1"
    reseal(bundle, data)
    assert _problems(bundle) == [
        (
            "stale",
            "contracts/demo-v1.yaml",
            "bound with pv-canonical-v1, which read the contract by other YAML rules than the run; "
            "re-run the falsifiers",
        )
    ]


def test_the_falsifiers_must_be_the_contracts(bundle: Path, project: Project) -> None:
    data = _data(bundle)
    first = data["falsifiers"][0]
    data["falsifiers"] = [first, {**first, "id": "FALSIFY-EXTRA-009"}, first]
    reseal(bundle, data)
    assert (
        "tampered",
        "bundle.json",
        "its falsifiers are not the contract's (not declared by the contract: "
        "FALSIFY-EXTRA-009; declared but absent: FALSIFY-DEMO-002, FALSIFY-DEMO-003; a falsifier listed twice)",
    ) in _problems(bundle)
    data = _data(bundle)
    data["contract"]["path"] = "contracts/other.yaml"
    reseal(bundle, data)
    against = verify_bundle(bundle, contract_file=project.contract)  # as assess checks it: against this contract
    assert ("tampered", "bundle.json", "contract path contracts/other.yaml is not this contract's file") in [
        (p.kind, p.file, p.detail) for p in against.problems
    ]
