"""A team's first contract, from the built wheel: the README's "Your first contract" steps, literally.

The files and the commands are read out of the README, so the two cannot drift: each fenced block
that starts with a `# path` comment is written to that path of a fresh folder, and each line of the
block of commands is run there.  pv comes from the wheel built from this checkout and installed
into a folder of its own (first on the path), never from the repository, so a file the wheel
forgets to ship fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### Your first contract, from nothing to ACTIVE"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def readme_steps() -> tuple[dict[str, str], list[str]]:
    """(files by path, commands) from the README section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = min(i for i in (text.find("\n## ", start), text.find("\n### ", start + len(SECTION)), len(text)) if i >= 0)
    files: dict[str, str] = {}
    commands: list[str] = []
    for lang, body in FENCE.findall(text[start:end]):
        first, _, rest = body.partition("\n")
        if lang == "bash":
            commands += [line.strip() for line in body.splitlines() if line.strip()]
        elif first.startswith("# "):
            files[first[2:].strip()] = rest
    return files, commands


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, unpacked into a folder of its own (no dependencies: the
    test environment already has them, and the registry is not needed)."""
    base = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (base / "dist").glob("pv_harness-*.whl")
    target = base / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    return target


def _run(command: str, cwd: Path, site: Path) -> subprocess.CompletedProcess[str]:
    argv = command.split()
    if argv[0] == "pv":
        argv = [sys.executable, "-c", "import sys; from pv.cli import main; sys.argv[0] = 'pv'; main()", *argv[1:]]
    elif argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    else:
        raise AssertionError(f"the README's steps run only pv and pytest, not {argv[0]}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PV_")}
    env["PYTHONPATH"] = str(site)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)


def test_the_readme_section_has_the_files_and_commands() -> None:
    files, commands = readme_steps()
    assert {"pyproject.toml", "mysystem/stats.py", "mychecks/checks.py", "mychecks/mutants.py"} <= set(files)
    assert any(p.startswith("contracts/") for p in files)
    assert commands[0].startswith("pv validate") and commands[-1] == "pv lint" and "pv promote" in commands


def test_first_contract_reaches_active_from_the_wheel(installed_wheel: Path, tmp_path: Path) -> None:
    files, commands = readme_steps()
    project = tmp_path / "project"
    for rel, content in files.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    for package in ("mysystem", "mychecks"):
        (project / package / "__init__.py").touch()  # "an empty __init__.py in each of the two packages"

    where = _run("pv --version", project, installed_wheel)
    assert where.returncode == 0, where.stderr
    origin = subprocess.run(
        [sys.executable, "-c", "import pv; print(pv.__file__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(installed_wheel)},
        cwd=project,
    ).stdout
    assert origin.startswith(str(installed_wheel)), f"pv came from {origin}, not the wheel"

    outputs = []
    for command in commands:
        result = _run(command, project, installed_wheel)
        outputs.append(f"$ {command}\n{result.stdout}{result.stderr}")
        assert result.returncode == 0, "\n".join(outputs)
    log = "\n".join(outputs)
    assert "1 survived" in log and "mutants: 1/1 killed" in log
    assert "DRAFT -> ACTIVE" in log
    assert log.rstrip().endswith("Result: PASS")
    contract = next(project / p for p in files if p.startswith("contracts/"))
    text = contract.read_text(encoding="utf-8")
    assert "status: ACTIVE" in text and "changelog:" in text and "evidence:" in text
    status = _run("pv status", project, installed_wheel)
    assert "ACTIVE" in status.stdout and "0 stale" in status.stdout
