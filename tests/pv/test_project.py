"""pv.project: one reading of each contract per project, with the digests evidence is bound to."""

from __future__ import annotations

from pathlib import Path

from pv.bundle.digest import contract_binding_digest, sha256_bytes
from pv.project import Project

CONTRACT = """\
metadata:
  id: alpha-v1
  version: 1.0.0
  description: x
  references: [x]
proof_obligations: [{id: OB-1, type: bound, property: x}]
falsification_tests: []
"""


def make(tmp_path: Path) -> Project:
    (tmp_path / "pyproject.toml").write_text('[tool.pv]\ncontracts = "specs"\n')
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "alpha.yaml").write_text(CONTRACT)
    (tmp_path / "specs" / "broken.yaml").write_text("metadata: [\n")
    return Project.open(tmp_path)


def test_each_contract_is_read_once_with_the_digests_evidence_binds_to(tmp_path: Path) -> None:
    project = make(tmp_path)
    path = tmp_path / "specs" / "alpha.yaml"
    first = project.contract(path)
    path.write_text(CONTRACT.replace("1.0.0", "2.0.0"))  # the project keeps the reading it has
    assert project.contract(path) is first
    assert first.ok and first.id == "alpha-v1" and first.version == "1.0.0"
    assert first.sha256 == sha256_bytes(CONTRACT.encode())
    assert first.binding_digest == contract_binding_digest(CONTRACT.encode())
    assert project.locator(path) == "specs/alpha.yaml"
    taken = project.take(path)  # taken: handed over and no longer kept
    assert taken is first
    assert project.contract(path).version == "2.0.0"  # so the next ask reads the file again


def test_a_contract_that_does_not_load_says_why(tmp_path: Path) -> None:
    project = make(tmp_path)
    assert [c.id for c in project.contracts()] == ["alpha-v1", "broken"]
    broken = project.contract(tmp_path / "specs" / "broken.yaml")
    assert not broken.ok and broken.binding_digest is None and broken.problem
    missing = project.contract(tmp_path / "specs" / "gone.yaml")
    assert missing.binding_digest is None and "does not exist" in missing.problem
