"""Write docs/engine-outputs.md: what a user of the engine can observe, and what claims it.

Three sources, so the page cannot drift from the code:

- ``docs/engine-outputs.yaml`` (by hand): every ``python -m engine`` command's output, the state
  a call leaves, the defaults taken when a file lacks a field, what each cache keys on, which of
  several candidates a read takes, what a recorded field says was done, and every field of every
  file the engine writes, with the falsifiers that read it or ``unclaimed: why``
  (its completeness is tested against a real run in tests/engine/test_engine_outputs.py);
- the source of ``engine/``: every public function, class and method, with its return annotation,
  the exceptions it raises itself and its docstring's first sentence;
- the mutation run's results (``mutation/results.jsonl``): per function, how many of its
  mutants the contracts killed, how many survived or were reached by no falsifier, and which
  falsifiers did the killing: what the contracts observe of that function, measured.

    python scripts/engine_outputs.py            # rewrite the page
    python scripts/engine_outputs.py --check    # exit 1 if the page is not current
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from a checkout: the engine imports from the root

from engine.__main__ import COMMAND_MODULES  # noqa: E402
from engine.app import app  # noqa: E402
from pv.mutation import function_of  # noqa: E402

INVENTORY = ROOT / "docs" / "engine-outputs.yaml"
RESULTS = ROOT / "mutation" / "results.jsonl"
PAGE = ROOT / "docs" / "engine-outputs.md"
KILLED = frozenset({"killed", "timeout", "segfault"})
NOT_REACHED = "no tests"


@dataclass(frozen=True)
class PublicName:
    module: str  # engine/x.py
    name: str  # function, Class, or Class.method
    kind: str  # function, class, method
    returns: str
    raises: tuple[str, ...]
    summary: str


@dataclass
class Reach:
    killed: int = 0
    survived: int = 0
    unreached: int = 0
    killers: set[str] = field(default_factory=set)

    @property
    def decided(self) -> int:
        return self.killed + self.survived + self.unreached


def _summary(node: ast.AST) -> str:
    doc = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) else None
    if not doc:
        return ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    cut = first.find(". ")
    return first if cut < 0 else first[: cut + 1]


def _raises(node: ast.AST) -> tuple[str, ...]:
    """Exception classes raised in the body itself (nested functions and classes excluded)."""
    found: set[str] = set()
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Raise) and child.exc is not None:
            target = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
            name = ast.unparse(target)
            if name[:1].isupper() or "." in name:
                found.add(name.rsplit(".", 1)[-1])
        stack.extend(ast.iter_child_nodes(child))
    return tuple(sorted(found))


def public_names(root: Path = ROOT) -> list[PublicName]:
    """Every public function, class and method defined in ``engine/`` (``_`` names and the planted
    faults excluded), in source order per module."""
    names: list[PublicName] = []
    for path in sorted((root / "engine").rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module == "engine/faults.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                returns = ast.unparse(node.returns) if node.returns else ""
                names.append(PublicName(module, node.name, "function", returns, _raises(node), _summary(node)))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                names.append(PublicName(module, node.name, "class", "", _raises(node), _summary(node)))
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                        returns = ast.unparse(item.returns) if item.returns else ""
                        names.append(
                            PublicName(
                                module, f"{node.name}.{item.name}", "method", returns, _raises(item), _summary(item)
                            )
                        )
    return names


def commands() -> list[str]:
    """The ``python -m engine`` commands, as the CLI registers them."""
    for name in COMMAND_MODULES:
        importlib.import_module(name)
    return sorted(c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands)


def reach_by_function(results: Path = RESULTS) -> dict[tuple[str, str], Reach]:
    reach: dict[tuple[str, str], Reach] = defaultdict(Reach)
    if not results.is_file():
        return reach
    for line in results.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        r = reach[(str(data["module"]), function_of(str(data["mutant"])))]
        status = str(data["status"])
        if status in KILLED:
            r.killed += 1
            r.killers.update(str(k).rpartition("::")[2] for k in data.get("killers", []))
        elif status == NOT_REACHED:
            r.unreached += 1
        else:
            r.survived += 1
    return reach


def load_inventory(path: Path = INVENTORY) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = yaml.load(fh, Loader=yaml.CSafeLoader)
    return data


def _claims(value: Any) -> str:
    if isinstance(value, str):
        return value
    return ", ".join(str(v) for v in value) if value else "unclaimed"


def _claimed_by(spec: dict[str, Any]) -> str:
    """A command's or a state's claims, with what they leave unclaimed in brackets."""
    return _claims(spec.get("claims")) + (f" ({spec['unclaimed']})" if spec.get("unclaimed") else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    out = ["", f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def render(inventory: dict[str, Any], names: list[PublicName], reach: dict[tuple[str, str], Reach]) -> str:
    out: list[str] = [
        "# What a user of the engine can observe, and what claims it",
        "",
        "Generated by `python scripts/engine_outputs.py` from `docs/engine-outputs.yaml` (commands and",
        "files, by hand), the source of `engine/` (public names) and `mutation/results.jsonl` (the",
        "mutation run: which falsifiers kill mutants of each function). Do not edit by hand;",
        "`tests/engine/test_engine_outputs.py` fails when this page is not current.",
        "",
    ]
    fields = [(art, f, v) for art, spec in inventory["files"].items() for f, v in spec["fields"].items()]
    claimed_fields = sum(1 for *_, v in fields if not isinstance(v, str) and v)
    claimed_commands = sum(1 for c in inventory["commands"].values() if c.get("claims"))
    functions = [n for n in names if n.kind != "class"]
    with_kills = sum(1 for n in functions if reach.get((n.module, n.name), Reach()).killed)
    decided = [n for n in functions if reach.get((n.module, n.name), Reach()).decided]
    out += [
        "## Summary",
        "",
        f"- commands: {len(inventory['commands'])}, {claimed_commands} run by a falsifier",
        f"- file fields: {len(fields)} in {len(inventory['files'])} files, {claimed_fields} read by a falsifier, "
        f"{len(fields) - claimed_fields} unclaimed",
        f"- public functions and methods: {len(functions)}; the mutation run has decided mutants of "
        f"{len(decided)}, and the contracts killed at least one mutant of {with_kills}",
        "",
        "## Commands (`python -m engine ...`)",
        "",
        "| command | prints | writes | exits | claimed by |",
        "|---|---|---|---|---|",
    ]
    for name, spec in inventory["commands"].items():
        out.append(
            f"| `{name}` | {_cell(spec.get('prints', ''))} | {_cell(spec.get('writes', ''))} | "
            f"{_cell(spec.get('exits', ''))} | {_cell(_claimed_by(spec))} |"
        )
    out += [
        "",
        "## State one call leaves for the next",
        "",
        "| what | on a second call | claimed by |",
        "|---|---|---|",
    ]
    for name, spec in inventory["state"].items():
        out.append(f"| `{name}`: {_cell(spec['what'])} | {_cell(spec['second_call'])} | {_cell(_claimed_by(spec))} |")
    out += _table(
        "Defaults taken when a file lacks a field",
        ("file", "what the engine takes", "claimed by"),
        [(spec["file"], spec["defaults"], _claimed_by(spec)) for spec in inventory["defaults"].values()],
    )
    out += _table(
        "What each cache keys an entry on",
        ("cache", "keyed on", "claimed by"),
        [(f"`{name}`", spec["keys_on"], _claimed_by(spec)) for name, spec in inventory["cache_keys"].items()],
    )
    out += _table(
        "Which of several candidates a read takes",
        ("read", "takes", "claimed by"),
        [(f"`{name}`", spec["reads"], _claimed_by(spec)) for name, spec in inventory["selections"].items()],
    )
    out += _table(
        "What a recorded field says was done",
        ("field", "says", "claimed by"),
        [(spec["field"], spec["says"], _claimed_by(spec)) for spec in inventory["recorded"].values()],
    )
    out += ["", "## Files the engine writes, field by field", ""]
    for art, spec in inventory["files"].items():
        writers = ", ".join(f"`{w}`" for w in spec.get("written_by", []))
        out += [f"### {art}", "", f"{spec['what']} Written by {writers}.", "", "| field | claimed by |", "|---|---|"]
        out += [f"| `{f}` | {_cell(_claims(v))} |" for f, v in spec["fields"].items()]
        out.append("")
    out += [
        "## Public functions, classes and methods",
        "",
        "`mutants`: killed / decided by the mutation run (survived and reached by no falsifier in",
        "brackets); `killed by`: the falsifiers that failed under a mutant of it.",
        "",
    ]
    by_module: dict[str, list[PublicName]] = defaultdict(list)
    for n in names:
        by_module[n.module].append(n)
    for module, members in by_module.items():
        out += [
            f"### {module}",
            "",
            "| name | returns | raises | mutants | killed by | what it does |",
            "|---|---|---|---|---|---|",
        ]
        for n in members:
            r = reach.get((n.module, n.name), Reach())
            mutants = f"{r.killed}/{r.decided} ({r.survived}, {r.unreached})"
            if n.kind == "class" or not r.decided:
                mutants = ""
            killers = ", ".join(sorted(r.killers))
            label = f"`{n.name}`" + (" (class)" if n.kind == "class" else "")
            out.append(
                f"| {label} | {_cell(n.returns and f'`{n.returns}`')} | {', '.join(n.raises)} | {mutants} | "
                f"{killers} | {_cell(n.summary)} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def build() -> str:
    return render(load_inventory(), public_names(), reach_by_function())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not current; write nothing")
    args = parser.parse_args()
    page = build()
    if args.check:
        current = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == page
        if not current:
            print(f"{PAGE.relative_to(ROOT)} is not current: run python scripts/engine_outputs.py", file=sys.stderr)
        return 0 if current else 1
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
