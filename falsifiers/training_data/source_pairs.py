"""Instruction pairs from source: each documented function's docstring and the code after it.

``extract_pairs_from_source`` turns every documented function of a module into a (docstring, body)
pair: the module's functions in source order, then each class's methods, breadth first; functions
nested in a function belong to its body.  The reference is Python's own parser: each pair's
response must parse to exactly the statements that follow the docstring in the function (string
literals included, character for character), its prompt must be the docstring as ``ast`` cleans
it, and the pairs must be the documented functions in that order.  A module written here holds the
shapes that go wrong (a one-line ``def``, a method holding a multi-line string, an implicitly
continued f-string, a nested function, a function with nothing but its docstring, decorators,
trailing comments, async); the standard-library slice the engine trains on is read too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.corpus import CorpusFile, default_corpus_files
from engine.data import extract_instruction_pairs, extract_pairs_from_source
from pv.checkers import checker

EDGES = '''
def top(a):
    """Add one."""
    # a comment before the code
    return a + 1


def one_line(): "A one-line function."; return 1


class Box:
    def text(self):
        """A method with a multi-line string."""
        value = """first
  second, indented
third"""
        return value

    async def fetch(self):
        """An async method."""
        await self.other()

    class Inner:
        def deep(self):
            """A method of a nested class."""
            message = (f"a {self!r} "
                       f"b")
            return message


def only_doc():
    """A docstring and nothing else."""


def outer():
    """A function holding another."""
    def inner():
        """Not a pair of its own."""
        return 3
    return inner


@staticmethod
def decorated(x):
    """Decorated."""
    if x:
        return 1

    return 2  # trailing comment
'''


def _expected(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every documented function with code after its docstring, in the
    documented order: a level's functions in source order, then the next level's, class by class."""
    level: list[tuple[ast.AST, str]] = [(tree, "")]
    while level:
        deeper: list[tuple[ast.AST, str]] = []
        for parent, prefix in level:
            for child in getattr(parent, "body", []):
                if isinstance(child, ast.ClassDef):
                    deeper.append((child, f"{prefix}{child.name}."))
                elif (
                    isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                    and ast.get_docstring(child)
                    and len(child.body) > 1
                ):
                    yield f"{prefix}{child.name}", child
        level = deeper


def _statements(code: str) -> list[str] | None:
    try:
        return [ast.dump(s) for s in ast.parse(code).body]
    except SyntaxError:
        return None


def _selection(tmp_path: Path) -> int:
    """extract_instruction_pairs against the per-file pairs filtered as documented: files given as
    str, Path and CorpusFile (one with a byte that is not UTF-8 in a comment), the length bound
    met exactly, and a count cut; returns the requests whose pairs differ."""

    folder = tmp_path / "pair-files"
    folder.mkdir(parents=True, exist_ok=True)
    edges = folder / "edges.py"
    edges.write_text(EDGES, encoding="utf-8")
    latin = folder / "latin.py"
    latin.write_bytes(b"# caf\xe9 in Latin-1, not UTF-8\n" + EDGES.encode("utf-8"))
    per_file = {
        path: list(extract_pairs_from_source(path.read_text(encoding="utf-8", errors="replace"), path.stem))
        for path in (edges, latin, *(f.path for f in default_corpus_files()))
    }
    everything = [p for pairs in per_file.values() for p in pairs]
    bound = sorted(len(p.response) for p in everything)[len(everything) // 2]  # met exactly by some response

    def within(pairs: list[Any], limit: int) -> list[Any]:
        return [p for p in pairs if len(p.prompt) <= limit and len(p.response) <= limit]

    stdlib = [p for f in default_corpus_files() for p in per_file[f.path]]
    requests: list[tuple[Any, list[Any]]] = [
        (lambda: extract_instruction_pairs([str(edges), latin, CorpusFile(edges)]),
         per_file[edges] + per_file[latin] + per_file[edges]),
        (lambda: extract_instruction_pairs(max_chars=bound), within(stdlib, bound)),
        (lambda: extract_instruction_pairs(max_pairs=7), within(stdlib, 2000)[:7]),
        (lambda: extract_instruction_pairs(), within(stdlib, 2000)),
    ]  # fmt: skip
    differing = 0
    for request, want in requests:
        try:
            differing += request() != want
        except Exception:  # a file it cannot read is a difference too, not an error of the check
            differing += 1
    return differing


@checker(
    observes=[
        "modules", "pairs_compared", "bodies_differing", "prompts_differing", "order_differing", "examples",
        "selections_differing",
    ],
    ids=["FALSIFY-DATA-005"],
)  # fmt: skip
def pairs_are_docstring_and_body(tmp_path: Path) -> dict[str, Any]:
    """The module written here and every file of the standard-library slice, pair by pair."""

    sources = [("edges", EDGES)] + [
        (f.path.stem, f.path.read_text(encoding="utf-8", errors="replace")) for f in default_corpus_files()
    ]
    out: dict[str, Any] = {"modules": 0, "pairs_compared": 0, "bodies_differing": 0, "prompts_differing": 0}
    out |= {"order_differing": 0, "examples": []}
    for module, text in sources:
        tree = ast.parse(text)
        want = list(_expected(tree))
        got = list(extract_pairs_from_source(text, module))
        out["modules"] += 1
        if [p.source for p in got] != [f"{module}:{name}" for name, _ in want]:
            out["order_differing"] += 1
            out["examples"].append(f"{module}: pairs {[p.source for p in got][:5]}")
            continue
        for pair, (name, node) in zip(got, want, strict=True):
            out["pairs_compared"] += 1
            body = [ast.dump(s) for s in node.body[1:]]
            if _statements(pair.response) != body:
                out["bodies_differing"] += 1
                if len(out["examples"]) < 5:
                    out["examples"].append(f"{module}:{name}: {pair.response[:80]!r}")
            out["prompts_differing"] += pair.prompt != (ast.get_docstring(node) or "").strip()
    out["selections_differing"] = _selection(tmp_path)
    return out
