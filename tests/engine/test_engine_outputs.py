"""docs/engine-outputs.yaml lists everything the engine lets a user observe; a real run proves it.

Every file is written here by the engine's own commands on a tiny checkpoint, and every field found
in it must be listed (with the falsifiers that read it, or why none does); a listed field that this
run does not write must at least still be named in the engine's source (an optional field, such as
a recipe's entry in the manifest).  Every command the CLI registers must be listed, every FALSIFY
id named must exist, and the generated page docs/engine-outputs.md must be current.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from safetensors import safe_open
from typer.testing import CliRunner

from tests.scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


outputs = load_script("scripts/engine_outputs.py")
INVENTORY: dict[str, Any] = outputs.load_inventory()
ENGINE_SOURCE = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "engine").rglob("*.py")))


def declared_ids() -> set[str]:
    ids: set[str] = set()
    for path in (ROOT / "contracts").glob("*.yaml"):
        ids.update(re.findall(r"^\s*- id: (FALSIFY-[A-Z0-9-]+)", path.read_text(encoding="utf-8"), re.M))
    return ids


def claim_ids(value: Any) -> list[str]:
    return [] if isinstance(value, str) else [str(v) for v in value or []]


def test_the_page_is_generated_from_the_current_sources() -> None:
    page = ROOT / "docs" / "engine-outputs.md"
    assert page.read_text(encoding="utf-8") == outputs.build(), "run python scripts/engine_outputs.py"


def test_every_command_the_cli_registers_is_listed() -> None:
    assert sorted(INVENTORY["commands"]) == outputs.commands()
    for name, spec in INVENTORY["commands"].items():
        assert spec.get("claims") or spec.get("unclaimed"), f"{name}: say which falsifier runs it, or why none does"


def test_every_public_function_class_and_method_is_on_the_page() -> None:
    names = outputs.public_names()
    page = (ROOT / "docs" / "engine-outputs.md").read_text(encoding="utf-8")
    assert len(names) > 250
    for n in names:
        assert f"| `{n.name}`" in page.split(f"### {n.module}\n", 1)[1].split("\n### ", 1)[0], n


def test_every_claim_names_a_declared_falsifier_and_every_gap_says_why() -> None:
    ids = declared_ids()
    named: list[str] = []
    sections = ("commands", "state", "defaults", "cache_keys", "selections", "recorded")
    for spec in [spec for section in sections for spec in INVENTORY[section].values()]:
        named += claim_ids(spec.get("claims"))
    for artifact, spec in INVENTORY["files"].items():
        for field, value in spec["fields"].items():
            if isinstance(value, str):
                assert value.startswith("unclaimed: ") and len(value) > len("unclaimed: ") + 5, (artifact, field)
            else:
                assert value, f"{artifact}.{field}: an empty claim list; write `unclaimed: why`"
            named += claim_ids(value)
    assert named and not sorted(set(named) - ids)


def test_the_public_names_skip_private_and_nested_definitions(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "m.py").write_text(
        'def f() -> int:\n    """One. Two."""\n    def inner():\n        raise KeyError\n    raise ValueError("x")\n'
        "def _g(): pass\n"
        "class C:\n    def run(self) -> str:\n        raise errors.Refused()\n    def _h(self): pass\n"
    )
    got = [(n.name, n.kind, n.returns, n.raises, n.summary) for n in outputs.public_names(tmp_path)]
    assert got == [
        ("f", "function", "int", ("ValueError",), "One."),
        ("C", "class", "", (), ""),
        ("C.run", "method", "str", ("Refused",), ""),
    ]


# --- the files, written for real ------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A tiny pretrain, a LoRA fine-tune, a QLoRA --adapters run, a distillation, both exports, an
    import, a merge and qa's files."""
    import importlib

    from engine.__main__ import COMMAND_MODULES
    from engine.app import app

    for name in COMMAND_MODULES:
        importlib.import_module(name)
    root = tmp_path_factory.mktemp("outputs")
    cli = CliRunner()

    def engine(*args: str) -> str:
        result = cli.invoke(app, [*args])
        assert result.exit_code == 0, f"engine {' '.join(args)}:\n{result.output}"
        return str(result.output)

    base = root / "pretrain" / "step-000002" / "model.safetensors"
    engine("pretrain", str(root / "pretrain"), "--preset", "tiny", "--steps", "2", "--batch-size", "2",
           "--seq-len", "16", "--eval-every", "2")  # fmt: skip
    engine("finetune", str(base), str(root / "lora"), "--method", "lora", "--steps", "1", "--batch-size", "2",
           "--seq-len", "32")  # fmt: skip
    from engine.data import InstructionPair, write_jsonl

    pairs = write_jsonl([InstructionPair(f"prompt {i}", f"response {i}", "test") for i in range(8)], root / "p.jsonl")
    engine("finetune", str(base), "--adapters", f"{pairs}:{root / 'adapters' / 'chat'}", "--method", "qlora",
           "--steps", "1", "--batch-size", "2", "--seq-len", "32")  # fmt: skip
    engine("distill", str(base), str(root / "distill"), "--student-preset", "tiny", "--steps", "1",
           "--batch-size", "2", "--seq-len", "16")  # fmt: skip
    engine("export", str(base), "-f", "hf", "-o", str(root / "hf"))
    engine("export", str(base), "-f", "gguf", "-o", str(root / "m.gguf"))
    engine("import", str(root / "m.gguf"), str(root / "imported.safetensors"))
    engine("merge", str(base), str(root / "lora"), str(root / "merged.safetensors"))
    engine("qa", str(base), "--write-golden", str(root / "golden.json"))
    (root / "qa.json").write_text(engine("qa", str(base), "--json", "--golden", str(root / "golden.json")))
    import torch

    from engine.data import TokenData, write_shards

    stream = torch.arange(300) % 512
    write_shards(TokenData(stream, stream[:50], 512, "digest"), root / "shards", shard_tokens=128)
    yield root


def header(path: Path) -> dict[str, str]:
    with safe_open(str(path), "pt") as f:
        return dict(f.metadata() or {})


def written_fields(run: Path) -> dict[str, set[str]]:
    """artifact -> the fields this run's files hold, named as docs/engine-outputs.yaml names them."""
    checkpoints = [run / "pretrain" / "step-000002" / "model.safetensors", run / "merged.safetensors"]
    checkpoints += [run / "imported.safetensors", run / "distill" / "step-000001" / "model.safetensors"]
    fields: dict[str, set[str]] = {k: set() for k in INVENTORY["files"]}
    for path in checkpoints:
        meta = header(path)
        fields["checkpoint"] |= set(meta) | {"tensors", "mode"}
        fields["checkpoint_manifest"] |= set(json.loads(meta["manifest"]))
    for folder in (run / "pretrain", run / "lora", run / "adapters" / "chat", run / "distill"):
        fields["run_folder"] |= {p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()}
        fields["run_latest"] |= set(json.loads((folder / "latest.json").read_text()))
        for line in (folder / "log.jsonl").read_text().splitlines():
            record = json.loads(line)
            fields["run_log"] |= {f"{record['kind']}.{k}" for k in record if k != "kind"}
        for state in folder.glob("step-*/train_state.json"):
            fields["run_train_state"] |= set(json.loads(state.read_text())) | {"tensors"}
    fields["run_folder"] = {re.sub(r"step-\d+/", "step-NNNNNN/", f) for f in fields["run_folder"]}
    step = run / "lora" / "step-000001"
    fields["adapter_manifest"] = set(json.loads((step / "manifest.json").read_text()))
    several = run / "adapters" / "chat" / "step-000001"
    fields["adapter_manifest"] |= set(json.loads((several / "manifest.json").read_text()))
    fields["adapter_config"] = set(json.loads((step / "adapter" / "adapter_config.json").read_text()))
    fields["adapter_weights"] = set(header(step / "adapter" / "adapter_model.safetensors")) | {"tensors", "mode"}
    hf = run / "hf"
    fields["hf_config"] = set(json.loads((hf / "config.json").read_text()))
    fields["hf_generation_config"] = set(json.loads((hf / "generation_config.json").read_text()))
    fields["hf_tokenizer"] = {"tokenizer.json", "special_tokens_map.json"} | {
        f"tokenizer_config.{k}" for k in json.loads((hf / "tokenizer_config.json").read_text())
    }
    fields["hf_weights"] = {"tensors", "mode"}
    import gguf

    reader = gguf.GGUFReader(str(run / "m.gguf"))
    fields["gguf"] = {k for k in reader.fields if not k.startswith("GGUF.")} | {"tensors", "mode"}
    fields["golden"] = set(json.loads((run / "golden.json").read_text()))
    fields["token_shards"] = {f"manifest.{k}" for k in json.loads((run / "shards" / "manifest.json").read_text())}
    for shard in (run / "shards").glob("*.safetensors"):
        with safe_open(str(shard), "pt") as f:
            fields["token_shards"] |= {f"shard.{k}" for k in f.keys()} | {f"shard.{k}" for k in f.metadata() or {}}  # noqa: SIM118
    fields["qa_json"] = set(json.loads((run / "qa.json").read_text()))
    from engine.data import InstructionPair, write_jsonl

    pairs = write_jsonl([InstructionPair("a prompt", "a response", "a source")], run / "pairs.jsonl")
    fields["instruction_jsonl"] = set(json.loads(pairs.read_text().splitlines()[0]))
    from engine.bricks import BrickResult

    fields["bench_json"] = {f for f in BrickResult.__dataclass_fields__}
    return fields


def test_every_field_the_engine_writes_is_listed(run: Path) -> None:
    written = written_fields(run)
    for artifact, spec in INVENTORY["files"].items():
        listed = set(spec["fields"])
        if artifact == "adapter_config":
            # PEFT's writer adds its own defaults (more with every PEFT release): the engine's fields are listed
            assert listed <= written[artifact], sorted(listed - written[artifact])
            continue
        unlisted = sorted(written[artifact] - listed)
        assert not unlisted, f"{artifact}: written but not listed: {unlisted}"
        for field in listed - written[artifact]:
            key = field.rsplit(".", 1)[-1].rstrip("/")
            assert key in ENGINE_SOURCE, f"{artifact}.{field} is listed but the engine never writes it"


def test_a_field_missing_from_the_list_is_named(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed = {k: dict(v) for k, v in INVENTORY["files"].items()}
    trimmed["hf_config"] = {**trimmed["hf_config"], "fields": dict(trimmed["hf_config"]["fields"])}
    del trimmed["hf_config"]["fields"]["torch_dtype"]
    monkeypatch.setitem(INVENTORY, "files", trimmed)
    with pytest.raises(AssertionError, match=r"hf_config: written but not listed: \['torch_dtype'\]"):
        test_every_field_the_engine_writes_is_listed(run)
