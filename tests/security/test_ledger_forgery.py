"""A red claim cannot be made to look green by deleting, editing, replacing, reordering or replaying
evidence: each forgery below makes `pv promote --check` and `pv lint` exit 1 naming the cause,
with and without trusted keys.

The project is a git repository, as a team's is: the contract went ACTIVE on a signed run that
survived, then a newer signed run falsified its ship-blocking claim (both committed).  The forger
wants `ACTIVE` to pass the gates again and has pv's own functions (digests recomputed, ledger
lines appended), but not the CI key.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pv.bundle.signing import Signer, generate
from pv.evidence import ledger
from pv.results import Verdict
from tests.pv.evidence.conftest import CONTRACT, Project, project, reseal, result  # noqa: F401  (fixtures)
from tests.pv.evidence.test_cli import cli  # noqa: F401  (the fixture)
from tests.pv.evidence.test_signing import forge, signed_write
from tests.security.test_forged_evidence import _resign_envelope_payload

CHECKERS = """
from pv.checkers import checker


@checker(observes=["step0_loss"], ids=["FALSIFY-DEMO-001", "FALSIFY-OTHER-001"])
def loss(vocab_size=64, seed=0):
    return {"step0_loss": 2.0}


@checker(observes=["step0_loss"], ids=["FALSIFY-DEMO-002"])
def loss_gpu():
    return {"step0_loss": 2.0}


@checker(observes=["tokens_per_s"], ids=["FALSIFY-DEMO-003"])
def speed():
    return {"tokens_per_s": 100.0}
"""

FAULTS = """
from pv.faults import FaultRegistry

FAULTS = FaultRegistry("demo")
FAULTS.register("demo_fault", "the loss is off")
"""

SURVIVED = [result("FALSIFY-DEMO-001", Verdict.SURVIVED), result("FALSIFY-DEMO-002", Verdict.SURVIVED)]
FALSIFIED = [result("FALSIFY-DEMO-001", Verdict.FALSIFIED), result("FALSIFY-DEMO-002", Verdict.SURVIVED)]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def _commit(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)


def _setup(run, proj: Project, keys: bool) -> tuple[Signer, Path, Path]:  # type: ignore[no-untyped-def]
    """The repository after the falsified run: (the CI key, the older survived bundle, the newest)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for pkg, files in {
        "falsifiers": {"demo.py": CHECKERS},
        "engine": {"faults.py": FAULTS, "core.py": "X = 1\n"},
    }.items():
        (proj.root / pkg).mkdir()
        (proj.root / pkg / "__init__.py").write_text("")
        for name, text in files.items():
            (proj.root / pkg / name).write_text(text)
    private, public = generate()
    signer = Signer.from_pem(private)
    if keys:
        (proj.root / "ci-evidence.key.pub").write_bytes(public)
        pyproject = proj.root / "pyproject.toml"
        pyproject.write_text(pyproject.read_text() + 'trusted_keys = "ci-evidence.key.pub"\n')
    _git(proj.root, "init", "-q", "-b", "main")
    _git(proj.root, "config", "user.email", "ci@example.invalid")
    _git(proj.root, "config", "user.name", "ci")
    older = signed_write(proj, signer, SURVIVED, "2026-03-01T10:00:00+00:00")
    code, out = run("promote")
    assert code == 0 and "ACTIVE" in out, out
    _commit(proj.root, "ACTIVE")
    newest = signed_write(proj, signer, FALSIFIED, "2026-03-02T10:00:00+00:00")
    _commit(proj.root, "the falsified run")
    # the honest reading: the declared ACTIVE is not backed, and says why
    code, out = run("promote", "--check")
    assert code == 1 and "FALSIFY-DEMO-001: falsified" in out, out
    return signer, older, newest


def _rewrite_ledger(folder: Path, lines: list[dict[str, object]]) -> None:
    """The ledger rewritten with pv's own functions: seq and line digests recomputed."""
    (folder / ledger.LEDGER_FILE).unlink()
    with ledger.locked(folder) as chain:
        for raw in lines:
            extra = {k: v for k, v in raw.items() if k not in ("seq", "kind", "run_id", "digest", "prev_line", "at")}
            ledger.append(chain, raw["kind"], str(raw["run_id"]), str(raw["digest"]), **extra)  # type: ignore[arg-type]


def _lines(folder: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (folder / ledger.LEDGER_FILE).read_text().splitlines()]


def delete_newest(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    shutil.rmtree(newest)
    return "is gone"


def delete_newest_and_its_line(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    shutil.rmtree(newest)
    _rewrite_ledger(newest.parent, _lines(newest.parent)[:-1])
    _commit(proj.root, "tidy the evidence")
    return "removed the line of bundle"


def edit_verdict(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    data = (newest / "bundle.json").read_text()
    (newest / "bundle.json").write_text(data.replace('"falsified"', '"survived"'))
    return "tampered"


def edit_resealed(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    forge(newest)  # every digest recomputed
    return "replaced or edited after it was recorded"


def edit_resealed_with_envelope(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    forge(newest)
    _resign_envelope_payload(newest)  # the old signature over the new statement
    return "tampered"


def zeroed_key_id(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    forge(newest)
    env_path = newest / "statement.intoto.dsse.json"
    envelope = json.loads(env_path.read_text())
    envelope["payload"] = base64.b64encode((newest / "statement.intoto.json").read_bytes()).decode()
    envelope["signatures"] = [{"keyid": "0" * 64, "sig": envelope["signatures"][0]["sig"]}]
    env_path.write_text(json.dumps(envelope))
    reseal(newest, json.loads((newest / "bundle.json").read_text()))
    return "cannot be checked"


def retargeted(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    """A survived bundle of another contract, its ids, path and digests rewritten, added to the chain."""
    other = proj.contract.with_name("other-v1.yaml")
    other.write_text(CONTRACT.replace("demo-v1", "other-v1").replace("FALSIFY-DEMO", "FALSIFY-OTHER"))
    from pv.evidence.writer import write_run
    from tests.pv.evidence.conftest import ENV, record

    run = record(proj, [result("FALSIFY-DEMO-001", Verdict.SURVIVED)], started="2026-03-03T10:00:00+00:00")
    contract_run = run.contracts.pop("demo-v1")
    contract_run.contract_id, contract_run.path = "other-v1", "contracts/other-v1.yaml"
    contract_run.sha256 = __import__("hashlib").sha256(other.read_bytes()).hexdigest()
    contract_run.declared = [i.replace("DEMO", "OTHER") for i in contract_run.declared]
    run.contracts["other-v1"] = contract_run
    for r in run.results:
        r.contract_id, r.falsify_id = "other-v1", r.falsify_id.replace("DEMO", "OTHER")
    [outcome] = write_run(run, proj.evidence, proj.root, ENV, signer)
    assert outcome.path is not None
    target = newest.parent / outcome.path.name
    shutil.copytree(outcome.path, target)
    data = json.loads((target / "bundle.json").read_text())
    mine = json.loads((newest / "bundle.json").read_text())
    data["contract"] = mine["contract"]
    for f in data["falsifiers"]:
        f["id"] = f["id"].replace("OTHER", "DEMO")
    data["falsifiers"].append(mine["falsifiers"][1] | {"verdict": "survived"})
    data["falsifiers"].append(mine["falsifiers"][2])
    reseal(target, data)
    with ledger.locked(target.parent) as chain:
        ledger.append(chain, "bundle", target.name, ledger.bundle_digest(target) or "", verdicts={})
    return "does not name its place in the chain"


def reordered(proj: Project, signer: Signer, older: Path, newest: Path) -> str:
    lines = _lines(newest.parent)
    _rewrite_ledger(newest.parent, [lines[1], lines[0]])
    return "does not name its place in the chain"


CASES = [
    delete_newest,
    delete_newest_and_its_line,
    edit_verdict,
    edit_resealed,
    edit_resealed_with_envelope,
    zeroed_key_id,
    retargeted,
    reordered,
]


@pytest.mark.parametrize("keys", [False, True], ids=["no-keys", "trusted-keys"])
@pytest.mark.parametrize("forgery", CASES, ids=[c.__name__ for c in CASES])
def test_a_forgery_fails_promote_check_and_lint_naming_the_cause(
    cli,  # noqa: F811
    project: Project,  # noqa: F811
    forgery,  # type: ignore[no-untyped-def]
    keys: bool,
) -> None:
    signer, older, newest = _setup(cli, project, keys)
    cause = forgery(project, signer, older, newest)
    code, out = cli("promote", "--check")
    assert code == 1 and cause in out, out
    code, out = cli("lint")
    assert code == 1 and cause in out, out
    code, out = cli("status")
    assert "ACTIVE" in out and ("blocked" in out or "falsified" in out or "stale" in out), out


@pytest.mark.parametrize("keys", [False, True], ids=["no-keys", "trusted-keys"])
def test_a_bundle_replayed_after_the_code_changed_is_stale(cli, project: Project, keys: bool) -> None:  # noqa: F811
    """Evidence is bound to the code it measured; a lost bundle is forgotten with a trace, never silently."""
    signer, _, newest = _setup(cli, project, keys)
    shutil.rmtree(newest)
    code, out = cli("evidence", "forget", newest.name, "--reason", "lost in a rebase")
    assert code == 0 and "FALSIFY-DEMO-001" in out, out  # its decided falsifiers must run again
    code, out = cli("promote", "--check")
    assert code == 1 and "which is gone (forgotten: lost in a rebase)" in out, out
    # a fresh survived run backs the status again ...
    signed_write(project, signer, SURVIVED, "2026-03-04T10:00:00+00:00")
    code, out = cli("promote", "--check")
    assert code == 0, out
    _commit(project.root, "a fresh run")
    # ... until the code it measured changes: the same bundle, replayed for other code, is stale
    (project.root / "engine" / "core.py").write_text("X = 2\n")
    code, out = cli("promote", "--check")
    assert code == 1 and "code changed since the run: changed engine/core.py" in out, out
    code, out = cli("lint")
    assert code == 1 and "engine/core.py" in out, out


def test_blocked_evidence_fails_whatever_the_status_and_is_never_written_over(cli, project: Project) -> None:  # noqa: F811
    """Blocked is not "DRAFT": promote writes nothing, not even a demotion, and every reader says why."""
    _, _, newest = _setup(cli, project, keys=False)
    shutil.rmtree(newest)
    before = project.contract.read_bytes()
    code, out = cli("promote")
    assert code == 1 and "ACTIVE, BLOCKED" in out and "is gone" in out, out
    assert project.contract.read_bytes() == before
    project.contract.write_text(project.contract.read_text().replace("status: ACTIVE", "status: DRAFT"))
    code, out = cli("promote", "--check")
    assert code == 1 and "DRAFT, BLOCKED" in out, out
    code, out = cli("lint")
    assert code == 1 and "evidence blocked" in out, out
    code, out = cli("report")
    assert "evidence blocked" in out and newest.name in out, out
