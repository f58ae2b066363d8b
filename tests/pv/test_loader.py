"""The contract loader: bad input becomes a diagnostic at the right place, never a traceback."""

from __future__ import annotations

import hashlib
import os
import textwrap
from pathlib import Path

import pytest

from pv import loader
from pv.loader import LoadedContract, find_contract_files, load_contract_file

GOOD = textwrap.dedent(
    """\
    metadata:
      id: good-v1
      version: 1.0.0
      description: A minimal valid contract.
      references: ["a paper"]
    proof_obligations:
      - id: GOOD-INV-001
        type: bound
        property: stays small
    falsification_tests:
      - id: FALSIFY-GOOD-001
        obligation: GOOD-INV-001
        prediction: x stays below 1
        check: falsifiers.good:measure
        expect: "x < 1"
    """
)


def write(tmp_path: Path, text: str | bytes, name: str = "good-v1.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def codes(loaded: LoadedContract) -> list[str]:
    return [d.code for d in loaded.diagnostics]


def only(loaded: LoadedContract, code: str) -> tuple[int, int, str]:
    assert codes(loaded) == [code], [d.format() for d in loaded.diagnostics]
    d = loaded.diagnostics[0]
    return d.line, d.col, d.message


def test_good_contract_loads(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    loaded = load_contract_file(path)
    assert loaded.diagnostics == []
    assert loaded.ok
    assert loaded.contract is not None
    assert loaded.contract.falsification_tests[0].expect == "x < 1"
    assert loaded.id == "good-v1"
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.data is not None and loaded.data["metadata"]["version"] == "1.0.0"


def test_locate_keys_and_values(tmp_path: Path) -> None:
    loaded = load_contract_file(write(tmp_path, GOOD))
    assert loaded.locate(("metadata", "version")) == (3, 12)
    assert loaded.locate(("metadata", "version"), key=True) == (3, 3)
    assert loaded.locate(("falsification_tests", 0, "expect")) == (15, 13)
    assert loaded.locate(("falsification_tests", 0)) == (11, 5)
    # a missing path falls back to the nearest ancestor that exists
    assert loaded.locate(("falsification_tests", 0, "mutant")) == (11, 5)
    assert loaded.locate(("falsification_tests", 9, "id")) == (11, 3)
    assert loaded.locate(("nope",)) == (1, 1)


def test_yaml_12_scalars_and_legacy_dates(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  references:",
        "  created: 2025-01-02\n  author: yes\n  tags: [on, 'off', 1e-3, 0x1F, .inf, ~]\n  references:",
    )
    loaded = load_contract_file(write(tmp_path, text))
    assert loaded.data is not None
    meta = loaded.data["metadata"]
    assert meta["created"] == "2025-01-02"  # not a datetime: the Rust dialect keeps it a string
    assert meta["author"] == "yes"  # YAML 1.2: yes is a string, not a boolean
    assert meta["tags"] == ["on", "off", 0.001, 31, float("inf"), None]


@pytest.mark.parametrize(
    ("payload", "code", "line", "col", "fragment"),
    [
        (b"", "PV003", 1, 1, "no YAML document"),
        (b"# only a comment\n", "PV003", 1, 1, "no YAML document"),
        (b"---\n", "PV003", 1, 1, "no YAML document"),
        (b"metadata:\n  version: [1.0.0\n", "PV004", 3, 1, "YAML syntax error"),
        (b"metadata:\n\tversion: 1\n", "PV004", 2, 1, "YAML syntax error"),
        (b"a: \x01\n", "PV004", 1, 4, "control characters"),
        (b"- metadata\n- x\n", "PV005", 1, 1, "a list"),
        (b"just a string\n", "PV005", 1, 1, "a scalar"),
        (b"42\n", "PV005", 1, 1, "a scalar"),
        (b"metadata: {}\n---\nmetadata: {}\n", "PV006", 2, 1, "second YAML document"),
        (b"metadata: !!python/object:os.system {}\n", "PV007", 1, 11, "!!python/object:os.system"),
        (b"metadata:\n  version: !custom 1.0.0\n", "PV007", 2, 12, "`!custom`"),
        (b"metadata: !!binary aGk=\n", "PV007", 1, 11, "!!binary"),
        (b"!!python/name:os.system x: 1\n", "PV007", 1, 1, "python/name"),
        (b"metadata: *nothing\n", "PV004", 1, 11, "not defined"),
        (b"metadata: !!int abc\n", "PV100", 1, 11, "not a valid int"),
        (b"x\x00y: 1\n", "PV002", 1, 2, "NUL"),
        (b"metadata:\n  description: caf\xe9\n", "PV002", 2, 19, "0xe9"),
        (b"\xff\xfe\x00m\x00e\x00t\x00a", "PV002", 1, 3, "binary"),
    ],
)
def test_bad_input_is_one_clean_diagnostic(
    tmp_path: Path, payload: bytes, code: str, line: int, col: int, fragment: str
) -> None:
    loaded = load_contract_file(write(tmp_path, payload))
    got_line, got_col, message = only(loaded, code)
    assert (got_line, got_col) == (line, col)
    assert fragment in message
    assert loaded.contract is None and not loaded.ok


def test_duplicate_keys_inside_falsifiers_are_reported_and_first_kept(tmp_path: Path) -> None:
    text = GOOD.replace('    expect: "x < 1"\n', '    expect: "x < 1"\n    expect: "x < 2"\n')
    loaded = load_contract_file(write(tmp_path, text))
    assert codes(loaded) == ["PV010"]
    assert (loaded.diagnostics[0].line, loaded.diagnostics[0].col) == (16, 5)
    assert loaded.data is not None
    assert loaded.data["falsification_tests"][0]["expect"] == "x < 1"


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    loaded = load_contract_file(write(tmp_path, "\n".join(lines) + "\n"))
    _, _, message = only(loaded, "PV008")
    assert "more than" in message


def test_small_aliases_are_fine(tmp_path: Path) -> None:
    text = GOOD.replace('  references: ["a paper"]', '  references: &refs ["a paper"]\n  tags: *refs')
    loaded = load_contract_file(write(tmp_path, text))
    assert loaded.diagnostics == []
    assert loaded.data is not None and loaded.data["metadata"]["tags"] == ["a paper"]


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    loaded = load_contract_file(write(tmp_path, "metadata: &a\n  x: *a\n"))
    _, _, message = only(loaded, "PV008")
    assert "own ancestor" in message


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 50_000 + "]" * 50_000, id="flow-50000"),  # libyaml's scanner may stop it first
        pytest.param("[" * 150 + "]" * 150, id="flow-150"),  # only pv's own cap can stop this one
        pytest.param("- " * 150 + "x\n", id="block-150"),
    ],
)
def test_deep_nesting_is_one_clean_diagnostic(tmp_path: Path, text: str) -> None:
    """Whichever layer stops it (pv's depth cap, or the YAML library's own), the result is the same:
    one PV004 at a line of the file and no contract; the wording is the library's business."""
    loaded = load_contract_file(write(tmp_path, text))
    line, col, message = only(loaded, "PV004")
    assert line == 1 and col >= 1 and message
    assert loaded.contract is None


def test_deep_nesting_under_pv_validate_exits_1_without_a_traceback(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pv.cli import app

    write(tmp_path, "[" * 50_000 + "]" * 50_000, name="deep-v1.yaml")
    result = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "PV004" in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, GOOD)
    _, _, message = only(load_contract_file(path, max_bytes=100), "PV009")
    assert "limit is 100" in message
    monkeypatch.setenv("PV_MAX_CONTRACT_BYTES", "50")
    assert codes(load_contract_file(path)) == ["PV009"]
    monkeypatch.setenv("PV_MAX_CONTRACT_BYTES", str(len(GOOD)))
    assert codes(load_contract_file(path)) == []


def test_unreadable_paths(tmp_path: Path) -> None:
    missing = load_contract_file(tmp_path / "missing.yaml")
    assert only(missing, "PV001")[2].endswith("does not exist")
    assert missing.sha256 is None

    loop_a, loop_b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    assert "symlink loop" in only(load_contract_file(loop_a), "PV001")[2]

    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone.yaml")
    assert "broken symlink" in only(load_contract_file(dangling), "PV001")[2]

    assert "directory" in only(load_contract_file(tmp_path), "PV001")[2]

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in only(load_contract_file(fifo), "PV001")[2]


def test_non_scalar_keys_are_reported(tmp_path: Path) -> None:
    loaded = load_contract_file(write(tmp_path, "? [a, b]\n: 1\nmetadata: {}\n"))
    assert "PV100" in codes(loaded)
    assert loaded.diagnostics[0].line == 1


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    loaded = load_contract_file(write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode()))
    assert loaded.diagnostics == []


def test_schema_errors_point_at_the_key(tmp_path: Path) -> None:
    text = GOOD.replace("falsification_tests:", "falsification_test:")
    loaded = load_contract_file(write(tmp_path, text))
    line, col, message = only(loaded, "PV102")
    assert (line, col) == (10, 1)
    assert "did you mean `falsification_tests`?" in message
    assert loaded.contract is None
    assert loaded.diagnostics[0].hint == "did you mean `falsification_tests`?"


def test_enum_error_suggests(tmp_path: Path) -> None:
    text = GOOD.replace("    type: bound", "    type: bund")
    line, col, message = only(load_contract_file(write(tmp_path, text)), "PV103")
    assert (line, col) == (8, 11)
    assert "did you mean `bound`?" in message


def test_missing_key_points_at_its_mapping(tmp_path: Path) -> None:
    text = GOOD.replace("    prediction: x stays below 1\n", "")
    line, col, message = only(load_contract_file(write(tmp_path, text)), "PV101")
    assert (line, col) == (11, 5)
    assert "`prediction`" in message


def test_type_error(tmp_path: Path) -> None:
    text = GOOD.replace('  references: ["a paper"]', "  references: a paper")
    line, col, message = only(load_contract_file(write(tmp_path, text)), "PV100")
    assert (line, col) == (5, 15)
    assert "metadata.references" in message


def test_find_contract_files(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    for rel in ("b.yaml", "a.yml", "sub/c.yaml", "sub/deeper/d.yaml", ".hidden/e.yaml", "notes.txt", ".f.yaml"):
        (tmp_path / rel).write_text("x: 1\n")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path)  # a folder symlink loop is not followed
    found = find_contract_files([tmp_path, tmp_path / "b.yaml", tmp_path / "notes.txt", tmp_path / "missing.yaml"])
    rel = [p.relative_to(tmp_path).as_posix() for p in found]
    assert rel == ["a.yml", "b.yaml", "sub/c.yaml", "sub/deeper/d.yaml", "notes.txt", "missing.yaml"]


def test_rust_dialect_fixtures_load_clean() -> None:
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "validate" / "rust"
    files = find_contract_files([folder])
    assert len(files) >= 3
    for path in files:
        loaded = load_contract_file(path)
        assert loaded.diagnostics == [], [d.format() for d in loaded.diagnostics]
        assert loaded.contract is not None
    legacy = load_contract_file(folder / "rmsnorm-kernel-v1.yaml")
    assert legacy.id == "rmsnorm-kernel-v1"  # no metadata.id: the stem is the id
    assert legacy.contract is not None and all(o.id is None for o in legacy.contract.proof_obligations)


def test_positions_survive_lazy_recompose(tmp_path: Path) -> None:
    loaded = load_contract_file(write(tmp_path, GOOD))
    assert loaded._root is None  # a clean file keeps no node tree
    assert loaded.locate(("metadata", "id")) == (2, 7)


def test_loader_module_limits_are_sane() -> None:
    assert loader.MAX_BYTES == 1 << 20
    assert loader.MAX_DEPTH < loader._C_SAFE_DEPTH
