"""``pv scaffold``: checker stubs for falsifiers that have none, and new contracts from a template.

A stub is a registered checker (``@checker(observes=[...], ids=[...])``) with the falsifier's
params as keyword arguments and the observation names its ``expect`` reads declared.  Its body
raises an exception naming the falsifier, so until someone writes the measurement the item ends
as ``error``, never ``survived``: a scaffold can never pass by accident.

Existing code is never overwritten: a function that already exists is reported and left alone,
and stubs are appended to an existing module (with the imports they need added after the
module's own).  Files are only written inside the project root.
"""

from __future__ import annotations

import ast
import datetime as dt
import importlib.util
import keyword
import re
import string
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pv import expr
from pv.checkers import CheckerBindingError, in_packages, resolve
from pv.config import PvConfig, ensure_importable
from pv.diagnostics import suggest
from pv.loader import load_contract_file
from pv.model import CONTRACT_ID_RE, REF_RE, FalsificationTest

CHECKER_IMPORT = "from pv.checkers import checker"
ANY_IMPORT = "from typing import Any"


class ScaffoldError(Exception):
    """Bad input (a missing file, not a contract, an unknown falsifier id): exit 2."""


@dataclass
class Stub:
    """One checker function to write, possibly serving several falsifiers that name it."""

    module: str
    function: str
    falsifiers: list[FalsificationTest] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def ids(self) -> list[str]:
        return [f.id for f in self.falsifiers]

    @property
    def observes(self) -> list[str]:
        names: list[str] = []
        for f in self.falsifiers:
            if f.expect is None:
                continue
            for name in sorted(expr.parse(f.expect).names - set(f.params)):
                if name not in names:
                    names.append(name)
        return names

    def params(self) -> list[tuple[str, str, bool]]:
        """(name, annotation, required) for every param any of the falsifiers passes."""
        seen: dict[str, list[Any]] = {}
        for f in self.falsifiers:
            for name, value in f.params.items():
                seen.setdefault(name, []).append(value)
        out = []
        for name, values in seen.items():
            required = len(values) == len(self.falsifiers)
            out.append((name, _annotation(values), required))
        return out


@dataclass
class Outcome:
    """What one scaffold run did, for the command to print."""

    written: list[tuple[Path, Stub]] = field(default_factory=list)
    check_lines: list[tuple[str, str]] = field(default_factory=list)  # (falsifier id, "check: ...")
    bound: list[tuple[str, str]] = field(default_factory=list)  # (falsifier id, ref): nothing to do
    problems: list[str] = field(default_factory=list)  # could not be scaffolded: exit 1
    notes: list[str] = field(default_factory=list)


# --- names ------------------------------------------------------------------------------------


def _identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_").lower() or "contract"
    return f"c_{name}" if name[0].isdigit() else name


def derived_ref(package: str, contract_stem: str, falsify_id: str) -> str:
    """``<package>.<contract stem>:<falsify id>``, both made Python identifiers."""
    return f"{package}.{_identifier(contract_stem)}:{_identifier(falsify_id)}"


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list[Any]"
    if isinstance(value, dict):
        return "dict[str, Any]"
    return "Any"


def _annotation(values: Sequence[Any]) -> str:
    names = {_type_name(v) for v in values}
    if names == {"int", "float"}:
        return "float"
    if "Any" in names or len(names) > 2:
        return "Any"
    return " | ".join(sorted(names))


# --- planning ---------------------------------------------------------------------------------


def plan(config: PvConfig, contract_path: Path, only: str | None = None) -> tuple[list[Stub], Outcome]:
    """Which stubs to write for ``contract_path``; nothing is written here."""
    if not contract_path.is_file():
        raise ScaffoldError(f"{contract_path}: no such file")
    loaded = load_contract_file(contract_path)
    if loaded.contract is None:
        first = next((d for d in loaded.diagnostics if d.is_error), None)
        why = first.format() if first else "it does not load"
        raise ScaffoldError(f"{contract_path} is not a valid contract: {why}")
    falsifiers = loaded.contract.falsification_tests
    if only is not None:
        falsifiers = [f for f in falsifiers if f.id == only]
        if not falsifiers:
            known = [f.id for f in loaded.contract.falsification_tests]
            close = suggest(only, known)
            hint = f"; did you mean {close}?" if close else f" (it declares {', '.join(known) or 'none'})"
            raise ScaffoldError(f"{contract_path} declares no falsifier {only}{hint}")
    packages = config.checker_packages
    ensure_importable(config.root)
    outcome = Outcome()
    stubs: dict[str, Stub] = {}
    for f in falsifiers:
        ref = f.check
        if ref is None:
            ref = derived_ref(packages[0], loaded.stem, f.id)
            outcome.check_lines.append((f.id, f"check: {ref}"))
            found = _resolved(ref, packages)
            if found is not None:  # scaffolded before; only the check: line is missing
                outcome.bound.append((f.id, found))
                continue
        elif not REF_RE.match(ref):
            outcome.problems.append(f"{f.id}: check `{ref}` is not of the form module:function")
            continue
        elif not in_packages(ref.partition(":")[0], packages):
            outcome.problems.append(
                f"{f.id}: check `{ref}` is outside the checker packages ({', '.join(packages)}); "
                "stubs are only written into them"
            )
            continue
        else:
            found = _resolved(ref, packages)
            if found is not None:
                outcome.bound.append((f.id, found))
                continue
        problem = _falsifier_problem(f)
        if problem:
            outcome.problems.append(f"{f.id}: {problem}")
            continue
        if f.expect is None:
            outcome.notes.append(f"{f.id} has no expect: add one, and list what it reads in the stub's observes")
        module, _, function = ref.partition(":")
        stubs.setdefault(ref, Stub(module, function)).falsifiers.append(f)
    return list(stubs.values()), outcome


def _resolved(ref: str, packages: Sequence[str]) -> str | None:
    try:
        return resolve(ref, packages).ref
    except CheckerBindingError:
        return None


def _falsifier_problem(f: FalsificationTest) -> str:
    for name in f.params:
        if not name.isidentifier() or keyword.iskeyword(name):
            return f"param `{name}` is not a Python identifier, so no checker can take it by keyword"
    if f.expect is not None:
        try:
            expr.parse(f.expect)
        except expr.ExprError as exc:
            return f"expect does not parse ({exc}); fix it first"
    return ""


# --- writing ----------------------------------------------------------------------------------


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def package_dir(config: PvConfig, package: str) -> Path:
    """Where the top-level checker package lives: under the root, else where Python finds it."""
    local = config.root / package
    if local.is_dir():
        return local
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations)))
        if not _inside(found, config.root):
            raise ScaffoldError(f"checker package {package} lives outside the project ({found}); not writing there")
        return found
    return local


def module_file(config: PvConfig, module: str) -> Path:
    """The file that holds ``module`` (a package's ``__init__.py`` when it is a package)."""
    top, *rest = module.split(".")
    here = package_dir(config, top)
    for part in rest:
        here = here / part
    return here / "__init__.py" if here.is_dir() or not rest else here.with_suffix(".py")


def _ensure_packages(config: PvConfig, target: Path, module: str) -> None:
    """Create the package folders between the checker package and ``target``, each with ``__init__.py``."""
    top = package_dir(config, module.split(".")[0])
    folders = [top, *[p for p in target.parent.parents if _inside(p, top) and p != top]]
    for folder in sorted({*folders, target.parent}, key=lambda p: len(p.parts)):
        if not _inside(folder, top):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        init = folder / "__init__.py"
        if not init.exists() and init != target:
            init.write_text(f'"""Checkers bound to contract falsifiers ({folder.name})."""\n', encoding="utf-8")


def _doc(text: str) -> str:
    """Text that is safe inside a triple-quoted docstring."""
    return " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _py_string(text: str) -> str:
    """A double-quoted Python string literal of ``text``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_stub(stub: Stub) -> str:
    """The source of one stub function (lines kept under 100 characters where the names allow)."""
    args = []
    for name, annotation, required in stub.params():
        args.append(f"{name}: {annotation}" if required else f"{name}: {annotation} | None = None")
    signature = f"*, {', '.join(args)}" if args else ""
    observes = ", ".join(_py_string(n) for n in stub.observes)
    ids = ", ".join(_py_string(i) for i in stub.ids)
    joined = ", ".join(stub.ids)
    lines = [
        f"@checker(observes=[{observes}], ids=[{ids}])",
        f"def {stub.function}({signature}) -> dict[str, Any]:",
        f'    """Measure for {joined}; return the observations, never a verdict.',
    ]
    for f in stub.falsifiers:
        lines.append("")
        text = _doc(f"{f.id}: {f.prediction}")
        lines.extend(textwrap.wrap(text, 96, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False))
        if f.expect:
            lines.append(f"    The contract judges: {_doc(f.expect)}")
    wanted = "{" + ", ".join(f"{n!r}: ..." for n in stub.observes) + "}"
    lines += [
        '    """',
        "    raise RuntimeError(",
        f"        {_py_string(f'{joined}: checker {stub.ref} is a scaffold; ')}",
        f"        {_py_string(f'measure and return {wanted}')}",
        "    )",
    ]
    return "\n".join(lines) + "\n"


def _module_text(module: str) -> str:
    return (
        f'"""Checkers for {module}: each measures and returns observations; the contract judges them."""\n'
        "\nfrom __future__ import annotations\n\n"
        f"{ANY_IMPORT}\n\n{CHECKER_IMPORT}\n"
    )


def _binds(tree: ast.Module, name: str) -> bool:
    """Whether a top-level import binds ``name``."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return True
    return False


def _with_imports(text: str, tree: ast.Module) -> str:
    """``text`` with the stubs' imports added after the module's last top-level import."""
    needed = [line for name, line in (("Any", ANY_IMPORT), ("checker", CHECKER_IMPORT)) if not _binds(tree, name)]
    if not needed:
        return text
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    first = tree.body[0] if tree.body else None
    has_docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    block = "".join(line + "\n" for line in needed)
    if imports:
        at = imports[-1].end_lineno or 0
    elif has_docstring and first is not None:
        at = first.end_lineno or 0
        block = "\n" + block
    else:
        at = 0
    lines = text.splitlines(keepends=True)
    head, rest = "".join(lines[:at]), "".join(lines[at:])
    if head and not head.endswith("\n"):
        head += "\n"
    if not imports and rest.strip():
        block += "\n"
    return head + block + rest


def write(config: PvConfig, stubs: Sequence[Stub], outcome: Outcome) -> Outcome:
    """Append ``stubs`` to their modules (creating them); existing functions are left alone."""
    by_module: dict[str, list[Stub]] = {}
    for stub in stubs:
        by_module.setdefault(stub.module, []).append(stub)
    for module, group in by_module.items():
        target = module_file(config, module)
        if not _inside(target, config.root):
            outcome.problems.append(f"{module}: {target} is outside the project root {config.root}; not written")
            continue
        if target.exists():
            text = target.read_text(encoding="utf-8")
            try:
                tree = ast.parse(text)
            except SyntaxError as exc:
                outcome.problems.append(f"{target}: does not parse ({exc.msg}, line {exc.lineno}); nothing appended")
                continue
        else:
            _ensure_packages(config, target, module)
            text = _module_text(module)
            tree = ast.parse(text)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        todo = []
        for stub in group:
            if stub.function in defined:
                outcome.problems.append(
                    f"{', '.join(stub.ids)}: {stub.ref} already exists in {config.relpath(target)} but is not a "
                    "registered checker (or fails to import); it was not overwritten"
                )
            else:
                todo.append(stub)
        if not todo:
            continue
        text = _with_imports(text, tree)
        body = text.rstrip("\n") + "\n"
        for stub in todo:
            body += "\n\n" + render_stub(stub)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        outcome.written.extend((target, s) for s in todo)
    return outcome


def scaffold(config: PvConfig, contract_path: Path, only: str | None = None) -> Outcome:
    """Plan and write the stubs for one contract."""
    stubs, outcome = plan(config, contract_path, only)
    return write(config, stubs, outcome)


# --- new contracts ----------------------------------------------------------------------------


def id_prefix(name: str) -> str:
    """The upper-case prefix of a contract's ids: ``qlora-compose-v1`` -> ``QLORA-COMPOSE``."""
    prefix = re.sub(r"[^A-Z0-9]+", "-", name.upper()).strip("-")
    prefix = re.sub(r"-V\d+$", "", prefix) or prefix
    if not prefix or not prefix[0].isalpha():
        prefix = "C" + (f"-{prefix}" if prefix else "")
    return prefix


def template_text() -> str:
    return resources.files("pv").joinpath("templates/contract.yaml").read_text(encoding="utf-8")


def new_contract(config: PvConfig, name: str, today: dt.date | None = None) -> Path:
    """Write ``<contracts>/<name>.yaml`` from the template; never overwrite."""
    if not CONTRACT_ID_RE.match(name) or name.endswith((".yaml", ".yml")):
        raise ScaffoldError(
            f"{name!r} is not a contract id: use a lower-case slug such as `my-claim-v1` ([a-z0-9][a-z0-9._-]*)"
        )
    target = config.contracts / f"{name}.yaml"
    if target.exists():
        raise FileExistsError(f"{config.relpath(target)} already exists; not overwritten")
    prefix = id_prefix(name)
    text = string.Template(template_text()).substitute(
        name=name,
        prefix=prefix,
        date=(today or dt.datetime.now(dt.UTC).date()).isoformat(),
        check=derived_ref(config.checker_packages[0], name, f"FALSIFY-{prefix}-001"),
        path=config.relpath(target),
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
