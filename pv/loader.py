"""Reading contract files: bytes -> YAML node tree -> plain data -> :class:`~pv.model.Contract`.

Every failure becomes a :class:`~pv.diagnostics.Diagnostic` with ``path:line:col``; nothing here
raises for bad input, and one bad file never stops the others.

The YAML is composed by libyaml (``CSafeLoader``) into a node tree that keeps every mark; the tree
is turned into plain data here, in one pass, which is where the rules the stock loaders lack are
enforced: duplicate keys, tags outside YAML's core schema, a cap on alias expansion, and YAML 1.2
core scalar resolution (``yes``/``on``/``2024-01-01`` stay strings, as in the Rust ``pv``).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import os
import re
import stat
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from pv import rules
from pv.diagnostics import Diagnostic, suggest
from pv.model import Contract

MAX_BYTES = 1 << 20  # 1 MiB; override with the ``max_bytes`` argument or PV_MAX_CONTRACT_BYTES
MAX_ALIAS_NODES = 10_000  # nodes an alias expansion may add, summed over the file
MAX_DEPTH = 100  # nesting of mappings/sequences; contracts need fewer than ten levels
KEEP_TREE_BYTES = 64 * 1024  # larger files keep their node tree rather than compose it again
MAX_INT = 2**63 - 1  # every integer in a contract fits a signed 64-bit word (as in the Rust pv)
_C_SAFE_DEPTH = 1000  # libyaml's composer recurses in C: deeper input must be refused before it
CONTRACT_SUFFIXES = (".yaml", ".yml")

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_PLAIN = "pv:plain"  # a plain scalar with no explicit tag: resolved below by YAML 1.2 core rules
_QUOTED = "pv:quoted"  # quoted or block scalar with no explicit tag: always a string
_CORE = "tag:yaml.org,2002:"
_MAP = _CORE + "map"
_SEQ = _CORE + "seq"
_KEY_TAGS = frozenset({_PLAIN, _QUOTED, _CORE + "str"})
_ScalarNode = yaml.ScalarNode
_SequenceNode = yaml.SequenceNode
_PLAIN_START = frozenset("0123456789+-.~nNtTfF")  # first characters of anything not a plain string

_INT_RE = re.compile(r"[-+]?[0-9]+\Z")
_OCT_RE = re.compile(r"0o[0-7]+\Z")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_INF_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)\Z")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


class _Loader(_BaseLoader):
    """libyaml's composer, with implicit tag resolution deferred to :func:`_resolve_plain`.

    Marking untagged scalars instead of resolving them is what lets the converter tell an explicit
    ``!!python/object`` from an implicitly typed value, and apply YAML 1.2 rules instead of 1.1.
    """

    # Path resolvers are never registered; skipping their per-node bookkeeping saves ~5% of a load.
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _QUOTED
        return str(super().resolve(kind, value, implicit))


class _Huge:
    """An integer literal with more digits than Python converts (4,300 decimal digits): far outside
    64 bits, refused like every other out-of-range integer rather than kept as text."""


_HUGE = _Huge()


def _out_of_range(value: Any) -> bool:
    return value is _HUGE or (type(value) is int and not -MAX_INT - 1 <= value <= MAX_INT)


def _resolve_plain(value: str) -> Any:
    if value and value[0] not in _PLAIN_START:
        return value  # most scalars are words: skip the pattern tests
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    try:
        if _INT_RE.match(value):
            return int(value)
        if _OCT_RE.match(value):
            return int(value[2:], 8)
        if _HEX_RE.match(value):
            return int(value[2:], 16)
    except ValueError:  # more digits than Python will convert
        return _HUGE
    if _FLOAT_RE.match(value):
        return float(value)
    if _INF_RE.match(value):
        return float("-inf") if value.startswith("-") else float("inf")
    if _NAN_RE.match(value):
        return float("nan")
    return value


class _Refused(Exception):
    """Stops conversion of the whole file (alias bomb, nesting too deep, a refused tag)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class _Converter:
    """One pass over the node tree: plain data, duplicate keys, tag policy, alias budget.

    Without anchors in the text there can be no aliases, and the per-node bookkeeping that the
    alias budget needs is skipped; scalars are then converted inline, which is most of the nodes.
    """

    def __init__(self, path: str, track_aliases: bool = True) -> None:
        self.path = path
        self.track = track_aliases
        self.diagnostics: list[Diagnostic] = []
        self.seen: set[int] = set()
        self.active: set[int] = set()
        self.alias_nodes = 0

    def mark(self, node: yaml.Node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def convert(self, node: yaml.Node, depth: int = 0, aliased: bool = False) -> Any:
        if self.track:
            key = id(node)
            if key in self.active:
                line, col = self.mark(node)
                message = "an alias refers to its own ancestor"
                raise _Refused(rules.ALIAS_LIMIT.diagnostic(self.path, line, col, message))
            if key in self.seen:
                aliased = True
            self.seen.add(key)
            if aliased:
                self.alias_nodes += 1
                if self.alias_nodes > MAX_ALIAS_NODES:
                    line, col = self.mark(node)
                    message = f"aliases expand to more than {MAX_ALIAS_NODES} nodes"
                    raise _Refused(rules.ALIAS_LIMIT.diagnostic(self.path, line, col, message))
        if depth > MAX_DEPTH:
            line, col = self.mark(node)
            message = f"nesting is deeper than {MAX_DEPTH} levels"
            raise _Refused(rules.YAML_SYNTAX.diagnostic(self.path, line, col, message))
        cls = type(node)
        if cls is _ScalarNode:
            return self.scalar(node)
        if node.tag not in (_MAP, _SEQ):
            self.refuse_tag(node)
        if not self.track:
            return self.sequence(node, depth, aliased) if cls is _SequenceNode else self.mapping(node, depth, aliased)
        self.active.add(id(node))
        try:
            return self.sequence(node, depth, aliased) if cls is _SequenceNode else self.mapping(node, depth, aliased)
        finally:
            self.active.discard(id(node))

    def _value(self, node: yaml.Node, depth: int, aliased: bool) -> Any:
        if not self.track and type(node) is _ScalarNode:
            tag = node.tag
            if tag == _QUOTED:
                return node.value
            if tag == _PLAIN:
                value = _resolve_plain(node.value)
                if not _out_of_range(value):
                    return value  # else convert() refuses it with its position
        return self.convert(node, depth, aliased)

    def sequence(self, node: yaml.Node, depth: int, aliased: bool = False) -> list[Any]:
        return [self._value(item, depth + 1, aliased) for item in node.value]

    def scalar(self, node: yaml.Node) -> Any:
        value = self._scalar(node)
        if _out_of_range(value):
            line, col = self.mark(node)
            digits = len(node.value)
            message = f"integer of {digits} characters is out of range (a contract's integers fit 64 bits)"
            raise _Refused(rules.SCHEMA.diagnostic(self.path, line, col, message))
        return value

    def _scalar(self, node: yaml.Node) -> Any:
        tag = node.tag
        value: str = node.value
        if tag == _PLAIN:
            return _resolve_plain(value)
        if tag == _QUOTED or tag == _CORE + "str":
            return value
        if tag == _CORE + "null" and value in _NULLS:
            return None
        if tag == _CORE + "bool" and value in _TRUE | _FALSE:
            return value in _TRUE
        if tag in (_CORE + "int", _CORE + "float"):
            resolved = _resolve_plain(value)
            if resolved is _HUGE:
                return resolved  # scalar() refuses it as out of range
            if isinstance(resolved, int | float) and not isinstance(resolved, bool):
                return float(resolved) if tag.endswith("float") else resolved
            line, col = self.mark(node)
            message = f"{value!r} is not a valid {tag[len(_CORE) :]}"
            raise _Refused(rules.SCHEMA.diagnostic(self.path, line, col, message))
        self.refuse_tag(node)
        return None  # unreachable: refuse_tag raises

    def refuse_tag(self, node: yaml.Node) -> None:
        line, col = self.mark(node)
        shown = "!!" + node.tag[len(_CORE) :] if node.tag.startswith(_CORE) else node.tag
        raise _Refused(
            rules.FORBIDDEN_TAG.diagnostic(
                self.path, line, col, f"the tag `{shown}` is not allowed; contracts are plain YAML data"
            )
        )

    def mapping(self, node: yaml.Node, depth: int, aliased: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not _ScalarNode:
                line, col = self.mark(key_node)
                self.diagnostics.append(
                    rules.SCHEMA.diagnostic(self.path, line, col, "mapping keys must be plain scalars")
                )
                continue
            if key_node.tag not in _KEY_TAGS:
                self.refuse_tag(key_node)
            # Keys are the scalar's text: the Rust dialect's keys are field names, never numbers.
            name = key_node.value
            if name in out:
                self.duplicate(node, key_node, name)
                continue  # keep the first: the diagnostic points at the one to remove
            out[name] = self._value(value_node, depth + 1, aliased)
        return out

    def duplicate(self, node: yaml.Node, key_node: yaml.Node, name: str) -> None:
        first = next(k for k, _ in node.value if type(k) is _ScalarNode and k.value == name)
        line, col = self.mark(key_node)
        message = f"duplicate key `{name}` (first defined on line {first.start_mark.line + 1})"
        self.diagnostics.append(rules.DUPLICATE_KEY.diagnostic(self.path, line, col, message))


def contract_stem(path: Path) -> str:
    """The file name without its contract suffix (``.yaml``, ``.yml``, ...)."""
    name = path.name
    for suffix in CONTRACT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def contract_id(declared: object, path: Path) -> str:
    """A contract's id: ``metadata.id`` when it declares one, else its file stem (the one rule)."""
    return declared if isinstance(declared, str) and declared else contract_stem(path)


@dataclass
class LoadedContract:
    """One contract file as read: its bytes' digest, plain data, model and diagnostics."""

    path: Path
    contract: Contract | None = None
    data: dict[str, Any] | None = None
    sha256: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str | None = field(default=None, repr=False)
    skipped: str | None = None  # why the file is not a contract at all (Rust dialect data files)
    _root: yaml.Node | None = field(default=None, repr=False)
    # positions taken while the tree was at hand: every falsifier's id, which collection asks for
    # each item, so that collecting a tree does not compose each file a second time
    _located: dict[tuple[str | int, ...], tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> yaml.Node | None:
        """The YAML node tree, composed again on first use.

        Keeping every file's node tree alive makes the cyclic garbage collector rescan roughly a
        million objects over and over on a large tree (it tripled validation time), and positions
        are only needed when there is something to report.
        """
        if self._root is None and self.text is not None:
            try:
                self._root = yaml.compose(self.text, Loader=_Loader)
            except (yaml.YAMLError, RecursionError, MemoryError):
                self.text = None
        return self._root

    @property
    def stem(self) -> str:
        return contract_stem(self.path)

    @property
    def id(self) -> str:
        """``metadata.id``, or the file stem for legacy contracts that have none."""
        meta = self.data.get("metadata") if self.data else None
        return contract_id(meta.get("id") if isinstance(meta, dict) else None, self.path)

    @property
    def ok(self) -> bool:
        return self.contract is not None and not any(d.is_error for d in self.diagnostics)

    def node_at(self, keypath: Sequence[str | int], *, key: bool = False) -> yaml.Node | None:
        """The YAML node at ``keypath`` (the key's node with ``key=True``), or None if absent."""
        node = self.root
        for i, part in enumerate(keypath):
            last = i == len(keypath) - 1
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                found = None
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == part:
                        found = k if (key and last) else v
                        break
                node = found
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
            else:
                return None
            if node is None:
                return None
        return node

    def locate(self, keypath: Sequence[str | int] = (), *, key: bool = False) -> tuple[int, int]:
        """1-based ``(line, col)`` of the value at ``keypath`` (of its key with ``key=True``).

        A path that does not exist resolves to its nearest existing ancestor, so a missing field
        points at the mapping that should hold it.
        """
        if not key and tuple(keypath) in self._located:
            return self._located[tuple(keypath)]
        path = list(keypath)
        while True:
            node = self.node_at(path, key=key)
            if node is not None:
                return node.start_mark.line + 1, node.start_mark.column + 1
            if not path:
                return 1, 1
            path.pop()
            key = False

    def diagnostic(
        self,
        rule: rules.Rule,
        keypath: Sequence[str | int],
        message: str,
        *,
        key: bool = False,
        hint: str | None = None,
    ) -> Diagnostic:
        line, col = self.locate(keypath, key=key)
        return rule.diagnostic(self.path, line, col, message, hint=hint)


def is_contract_name(name: str) -> bool:
    """The one rule for what a folder scan treats as a contract: ``*.yaml``/``*.yml``, not hidden.

    ``pv validate``, ``pv lint``, ``pv promote`` and the pytest plugin all use it, so no file can be
    run by one and skipped by the others (``.evil.yaml``, ``...yaml``)."""
    return name.endswith(CONTRACT_SUFFIXES) and not name.startswith(".")


def find_contract_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Expand folders (recursively, ``*.yaml``/``*.yml``, hidden folders skipped) in order.

    Files named explicitly are kept whatever their suffix, and paths that do not exist are kept
    too, so that :func:`load_contract_file` reports them instead of their silently vanishing.
    """
    found: list[Path] = []
    seen: set[str] = set()

    def add(p: Path) -> None:
        key = os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            found.append(p)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for root, dirs, files in os.walk(p, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if is_contract_name(name):
                        add(Path(root) / name)
        else:
            add(p)
    return found


def _max_bytes() -> int:
    env = os.environ.get("PV_MAX_CONTRACT_BYTES")
    if env and env.isdigit():
        return int(env)
    return MAX_BYTES


def _read(path: Path, limit: int) -> tuple[bytes | None, Diagnostic | None]:
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "is a symlink loop"
        elif exc.errno == errno.ENOENT:
            why = "is a broken symlink" if os.path.islink(path) else "does not exist"
        else:
            why = f"cannot be read: {exc.strerror}"
        return None, rules.UNREADABLE.diagnostic(path, 0, 0, f"{path} {why}")
    if stat.S_ISDIR(st.st_mode):
        return None, rules.UNREADABLE.diagnostic(path, 0, 0, f"{path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        return None, rules.UNREADABLE.diagnostic(path, 0, 0, f"{path} is not a regular file")
    if st.st_size > limit:
        return None, rules.TOO_LARGE.diagnostic(
            path, 0, 0, f"file is {st.st_size} bytes; the limit is {limit} (PV_MAX_CONTRACT_BYTES)"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        return None, rules.UNREADABLE.diagnostic(path, 0, 0, f"{path} cannot be read: {exc.strerror}")
    if len(raw) > limit:  # the file grew after stat
        return None, rules.TOO_LARGE.diagnostic(path, 0, 0, f"file is over the limit of {limit} bytes")
    return raw, None


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _decode(path: Path, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, col = _line_col(raw[:nul].decode("utf-8", errors="replace"), nul)
        return None, rules.NOT_UTF8.diagnostic(path, line, col, "file holds NUL bytes: it is binary, not YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = raw[: exc.start].decode("utf-8", errors="replace")
        line, col = _line_col(prefix, len(prefix))
        return None, rules.NOT_UTF8.diagnostic(
            path, line, col, f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid UTF-8"
        )
    return text.removeprefix("\ufeff"), None


def _nesting_bound(text: str) -> int:
    """A cheap upper bound on the nesting depth libyaml would recurse to."""
    flow = text.count("[") + text.count("{")
    if flow > _C_SAFE_DEPTH:
        return flow
    # a block collection nests deeper only by indenting (a sequence may share its mapping's
    # indentation: two levels per column) or on its own line after `- `, `? ` or `: `, so a line's
    # indentation and those markers bound it, whatever its length (prose is long); twice a line's
    # length is a bound too, and cheaper, so only a line long enough to matter is scanned
    room = _C_SAFE_DEPTH - flow
    return flow + max(
        (_line_nesting(line) if 2 * len(line) + 2 > room else 2 * len(line) + 2 for line in text.splitlines()),
        default=0,
    )


def _line_nesting(line: str) -> int:
    """An upper bound on the block levels open at ``line``: see :func:`_nesting_bound`."""
    indent = len(line) - len(line.lstrip(" \t-?"))
    return 2 * (indent + 1) + line.count("- ") + line.count("? ") + line.count(": ")


def _event_depth_exceeds(text: str, limit: int) -> tuple[int, int] | None:
    """Walk libyaml's events (iteratively, no recursion) and return where nesting passes ``limit``."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limit:
                mark = event.start_mark
                return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # the line breaks YAML counts


def compose_marked(text: str) -> yaml.Node | None:
    """``text``'s node tree as pv reads it, with every mark's ``index`` a character index into
    ``text``: what ``pv promote`` needs to edit a file in place, from the same reader that loads it.

    libyaml's marks count lines and columns in characters, so the index is rebuilt from them and
    the line starts (a BOM is skipped before the first column); its plain scalars' style ``""``
    becomes PyYAML's None.  Raises :class:`yaml.YAMLError` for text that does not parse."""
    root = yaml.compose(text, Loader=_Loader)
    starts = [1 if text.startswith("\ufeff") else 0, *(m.end() for m in _BREAK.finditer(text))]

    def mark(m: yaml.Mark) -> yaml.Mark:
        # the end of a text without a final line break is reported on the line after its last
        index = starts[m.line] + m.column if m.line < len(starts) else len(text)
        return yaml.Mark("", index, m.line, m.column, None, 0)

    todo = [root] if root is not None else []
    while todo:
        node = todo.pop()
        node.start_mark, node.end_mark = mark(node.start_mark), mark(node.end_mark)  # libyaml's are read-only
        if isinstance(node, yaml.ScalarNode) and node.style == "":
            node.style = None
        elif isinstance(node, yaml.MappingNode):
            todo.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
    return root


def is_null(node: yaml.Node) -> bool:
    """A scalar pv reads as null (YAML 1.2: empty, ``~``, ``null``), written plain or tagged ``!!null``."""
    if not isinstance(node, yaml.ScalarNode) or node.value not in _NULLS:
        return False
    return node.tag in (_PLAIN, _CORE + "null")


def _compose(path: Path, text: str) -> tuple[yaml.Node | None, Diagnostic | None]:
    try:
        if _nesting_bound(text) > _C_SAFE_DEPTH:
            where = _event_depth_exceeds(text, MAX_DEPTH)
            if where is not None:
                return None, rules.YAML_SYNTAX.diagnostic(path, *where, f"nesting is deeper than {MAX_DEPTH} levels")
        return yaml.compose(text, Loader=_Loader), None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        if isinstance(exc, yaml.composer.ComposerError) and "single document" in str(exc.context or ""):
            return None, rules.MULTI_DOCUMENT.diagnostic(
                path, line, col, "a second YAML document starts here; one file holds one contract"
            )
        if "undefined alias" in problem:
            return None, rules.YAML_SYNTAX.diagnostic(path, line, col, "alias refers to an anchor that is not defined")
        return None, rules.YAML_SYNTAX.diagnostic(path, line, col, f"YAML syntax error: {problem}")
    except yaml.reader.ReaderError as exc:
        line, col = _line_col(text, min(exc.position, len(text)))
        return None, rules.YAML_SYNTAX.diagnostic(path, line, col, f"YAML syntax error: {exc.reason}")
    except yaml.YAMLError as exc:
        return None, rules.YAML_SYNTAX.diagnostic(path, 1, 1, f"YAML error: {exc}")
    except (RecursionError, MemoryError) as exc:
        return None, rules.YAML_SYNTAX.diagnostic(path, 1, 1, f"YAML could not be composed: {type(exc).__name__}")


# --- pydantic errors -> diagnostics ----------------------------------------------------------


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional/Union/list/dict annotations."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _target_at(loc: Sequence[str | int]) -> Any:
    """The model class or type expected at ``loc`` (None if it cannot be told)."""
    current: Any = Contract
    for part in loc:
        nxt: Any = None
        for option in _unwrap(current):
            origin = typing.get_origin(option)
            if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(part, str):
                info = option.model_fields.get(part)
                if info is not None:
                    nxt = info.annotation
            elif origin is list and isinstance(part, int):
                nxt = typing.get_args(option)[0]
            elif origin is dict and isinstance(part, str):
                nxt = typing.get_args(option)[1]
            if nxt is not None:
                break
        if nxt is None:
            return None
        current = nxt
    return current


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    for option in _unwrap(_target_at(loc)):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return list(option.model_fields)
    return []


def _enum_at(loc: Sequence[str | int]) -> type[Enum] | None:
    for option in _unwrap(_target_at(loc)):
        if isinstance(option, type) and issubclass(option, Enum):
            return option
    return None


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


MAX_SCHEMA_DIAGNOSTICS = 200  # per file: past this, one line says how many more


def _schema_diagnostics(loaded: LoadedContract, exc: ValidationError) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    errors = exc.errors(include_url=False, include_input=True, include_context=False)
    if len(errors) > MAX_SCHEMA_DIAGNOSTICS:
        more = len(errors) - MAX_SCHEMA_DIAGNOSTICS
        loc = _data_loc(loaded.data, errors[MAX_SCHEMA_DIAGNOSTICS]["loc"])
        errors = errors[:MAX_SCHEMA_DIAGNOSTICS]
        out.append(loaded.diagnostic(rules.SCHEMA, loc, f"{more} more schema errors in this file, not listed"))
    for err in errors:
        loc = _data_loc(loaded.data, err["loc"])
        kind = err["type"]
        where = _dotted(loc)
        if kind == "extra_forbidden":
            name = str(loc[-1])
            choices = _fields_at(loc[:-1])
            close = suggest(name, choices)
            message = f"unknown key `{name}` in {_dotted(loc[:-1])}"
            hint = f"did you mean `{close}`?" if close else f"allowed keys here: {', '.join(choices)}"
            if close:
                message += f"; did you mean `{close}`?"
            out.append(loaded.diagnostic(rules.UNKNOWN_KEY, loc, message, key=True, hint=hint))
        elif kind == "missing":
            out.append(
                loaded.diagnostic(rules.MISSING_KEY, loc, f"missing required key `{loc[-1]}` in {_dotted(loc[:-1])}")
            )
        elif kind == "enum":
            enum = _enum_at(loc)
            allowed = [m.value for m in enum] if enum else []
            given = err.get("input")
            message = f"{where}: {given!r} is not one of {', '.join(map(str, allowed))}"
            close = suggest(str(given), map(str, allowed))
            hint = f"did you mean `{close}`?" if close else rules.INVALID_ENUM.hint
            if close:
                message += f"; did you mean `{close}`?"
            out.append(loaded.diagnostic(rules.INVALID_ENUM, loc, message, hint=hint))
        else:
            given = err.get("input")
            shown = type(given).__name__ if isinstance(given, dict | list) else _short_repr(given)
            if isinstance(shown, str) and len(shown) > 60:
                shown = shown[:57] + "..."
            out.append(loaded.diagnostic(rules.SCHEMA, loc, f"{where}: {err['msg'].lower()} (got {shown})"))
    return out


def _short_repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an integer past Python's digit limit: never a crash, never a wall of digits
        return f"<{type(value).__name__} too large to show>"


def _data_loc(data: Any, loc: Sequence[Any]) -> tuple[str | int, ...]:
    """Keep the parts of a pydantic ``loc`` that follow the data (drops union-member tags)."""
    out: list[str | int] = []
    current = data
    for i, part in enumerate(loc):
        if isinstance(current, dict) and isinstance(part, str) and part in current:  # noqa: SIM114
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif not (i == len(loc) - 1 and isinstance(current, dict) and isinstance(part, str)):
            continue  # a validator-internal part, not a key of the document
        out.append(part)
    return tuple(out)


# --- the entry point --------------------------------------------------------------------------


def load_contract_file(
    path: str | os.PathLike[str], *, max_bytes: int | None = None, dialect: str = "pv"
) -> LoadedContract:
    """Read one contract file; every problem is in ``.diagnostics``, nothing is raised for bad input.

    ``dialect="rust"`` reads the file as the Rust pv does (:mod:`pv.dialect`): the contract loads
    without its unknown keys (still reported as PV102); a YAML file with no ``metadata`` is a data
    file, not a contract, and is skipped (``.skipped`` says why)."""
    p = Path(path)
    raw, diag = _read(p, _max_bytes() if max_bytes is None else max_bytes)
    if raw is None:
        loaded = LoadedContract(path=p)
        loaded.diagnostics.append(diag)  # type: ignore[arg-type]
        return loaded
    return load_contract_bytes(raw, p, dialect=dialect)


def load_contract_bytes(raw: bytes, path: str | os.PathLike[str] = "<bytes>", *, dialect: str = "pv") -> LoadedContract:
    """Parse contract bytes already in hand (the evidence binding digests exactly these bytes),
    with the same YAML 1.2 rules, alias and depth caps as :func:`load_contract_file`; ``path``
    only labels the diagnostics.  Over the size cap is refused like a file."""
    p = Path(path)
    loaded = LoadedContract(path=p)
    limit = _max_bytes()
    if len(raw) > limit:
        loaded.diagnostics.append(
            rules.TOO_LARGE.diagnostic(p, 0, 0, f"contract is {len(raw)} bytes; the limit is {limit}")
        )
        return loaded
    loaded.sha256 = hashlib.sha256(raw).hexdigest()
    text, diag = _decode(p, raw)
    if text is None:
        loaded.diagnostics.append(diag)  # type: ignore[arg-type]
        return loaded
    root, diag = _compose(p, text)
    if diag is not None:
        loaded.diagnostics.append(diag)
        return loaded
    if root is None or (isinstance(root, yaml.ScalarNode) and root.tag == _PLAIN and root.value in _NULLS):
        loaded.diagnostics.append(rules.EMPTY_FILE.diagnostic(p, 1, 1, "file holds no YAML document"))
        return loaded
    loaded.text = text
    converter = _Converter(str(p), track_aliases="&" in text)
    try:
        data = converter.convert(root)
    except _Refused as refused:
        loaded.diagnostics.extend(converter.diagnostics)
        loaded.diagnostics.append(refused.diagnostic)
        return loaded
    except RecursionError:
        loaded.diagnostics.append(rules.YAML_SYNTAX.diagnostic(p, 1, 1, "YAML nests too deeply"))
        return loaded
    loaded.diagnostics.extend(converter.diagnostics)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a scalar ({type(data).__name__})"
        line, col = converter.mark(root)
        loaded.diagnostics.append(
            rules.NOT_MAPPING.diagnostic(p, line, col, f"the document is {kind}; a contract is a mapping")
        )
        return loaded
    if dialect == "rust" and "metadata" not in data:
        loaded.skipped = "no `metadata` section: a data file, not a contract"
        return loaded
    loaded.data = data
    tests = data.get("falsification_tests")
    if isinstance(tests, list):
        loaded._root = root
        ids = [("falsification_tests", i, "id") for i in range(len(tests))]
        loaded._located = {path: loaded.locate(path) for path in ids}
        loaded._root = None
    if converter.diagnostics or len(text) > KEEP_TREE_BYTES:
        # positions will be asked for; or composing this file again would cost more than keeping
        # its tree (a 1 MiB contract takes over a second to compose)
        loaded._root = root
    try:
        loaded.contract = Contract.model_validate(data)
    except ValidationError as exc:
        loaded._root = root
        loaded.diagnostics.extend(_schema_diagnostics(loaded, exc))
        if dialect == "rust":
            # serde ignores fields it does not know: so does this dialect, loudly (pv.dialect.relax
            # makes their PV102 a warning)
            unknown = [_data_loc(data, e["loc"]) for e in exc.errors() if e["type"] == "extra_forbidden"]
            if unknown and len(unknown) == len(exc.errors()):
                with contextlib.suppress(ValidationError):
                    loaded.contract = Contract.model_validate(_without(data, unknown))
    return loaded


def _without(data: dict[str, Any], locs: Sequence[tuple[str | int, ...]]) -> dict[str, Any]:
    """A copy of ``data`` without the keys at ``locs`` (the document itself is left as read)."""

    out = copy.deepcopy(data)
    for loc in locs:
        node: Any = out
        for part in loc[:-1]:
            node = node[part]
        if isinstance(node, dict):
            node.pop(loc[-1], None)
    return out
