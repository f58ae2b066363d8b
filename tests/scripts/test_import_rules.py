"""scripts/import_rules.py: the repository keeps its import rules, and each rule catches its breach."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts_loader import ROOT, load_script

rules = load_script("scripts/import_rules.py")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_repository_keeps_its_import_rules() -> None:
    assert [str(b) for b in rules.breaches(ROOT)] == []


def test_two_modules_importing_each_other_are_a_loop(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pv/__init__.py": "",
            "pv/a.py": "from pv.b import x\n",
            "pv/b.py": "def f():\n    # lazy: a reason does not excuse a loop\n    from pv.a import y\n",
        },
    )
    assert [(b.rule, b.what) for b in rules.breaches(root)] == [("loop", "pv.a <-> pv.b")]


def test_a_subpackage_and_a_module_importing_each_other_are_a_loop_between_rooms(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pv/__init__.py": "",
            "pv/config.py": "from pv.bundle.signing import KeyRing\n",
            "pv/bundle/__init__.py": "",
            "pv/bundle/signing.py": "X = 1\n",
            "pv/bundle/binding.py": "from pv.config import load\n",
        },
    )
    assert [(b.rule, b.what) for b in rules.breaches(root)] == [("loop between rooms", "pv.bundle <-> pv.config")]


@pytest.mark.parametrize(
    ("body", "explained"),
    [
        ("def f():\n    import json\n", False),
        ("def f():\n    import json  # the reason\n", True),
        ("def f():\n    # the reason, for the group\n    import json\n\n    import os\n", True),
        ("def f():\n    x = 1\n    import json\n", False),
        ('"""Doc.\n\nImports inside functions: json only where it is used."""\n\ndef f():\n    import json\n', True),
        ('"""Doc.\n\nImports inside functions: json only where it is used."""\n\ndef f():\n    import torch\n', False),
        ('"""Doc mentioning json in passing."""\n\ndef f():\n    import json\n', False),
    ],
)
def test_an_import_inside_a_function_must_say_why(tmp_path: Path, body: str, explained: bool) -> None:
    root = write(tmp_path, {"engine/__init__.py": "", "engine/m.py": body})
    found = [b for b in rules.breaches(root) if b.rule.startswith("import inside")]
    assert (found == []) is explained, found


def test_a_checker_family_imports_no_other_family_and_shared_imports_none(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "falsifiers/__init__.py": "",
            "falsifiers/shared/__init__.py": "",
            "falsifiers/shared/helpers.py": "from falsifiers.lora.checks import x\n",
            "falsifiers/lora/__init__.py": "",
            "falsifiers/lora/checks.py": "from falsifiers.shared.workdir import fresh_dir\nx = 1\n",
            "falsifiers/qlora/__init__.py": "",
            "falsifiers/qlora/checks.py": "from falsifiers.lora.checks import x\nfrom falsifiers.qlora import other\n",
            "falsifiers/qlora/other.py": "",
            "falsifiers/shared/workdir.py": "",
        },
    )
    found = {(b.where, b.rule) for b in rules.breaches(root) if "family" in b.rule}
    assert found == {
        ("falsifiers/shared/helpers.py:1", "a checker family imports another"),
        ("falsifiers/qlora/checks.py:1", "a checker family imports another"),
    }


def test_the_script_exits_1_and_names_each_breach(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write(tmp_path, {"pv/__init__.py": "", "pv/m.py": "def f():\n    import json\n"})
    assert rules.main([str(root)]) == 1
    out = capsys.readouterr().out
    assert "pv/m.py:2: import inside a function without its reason: import json" in out
    assert rules.main([str(write(tmp_path / "clean", {"pv/__init__.py": ""}))]) == 0
