"""The safe expression language of ``expect:`` predicates.

A contract states its threshold as text (``0 < rel_logit_diff <= 0.05``); the harness evaluates
it over the checker's observations and the falsifier's params.  The text is parsed with Python's
own parser (``ast``, ``mode="eval"``) and then accepted only if every node is on a whitelist;
evaluation walks the tree here, so nothing is ever handed to ``eval`` or ``exec``.

Allowed: numbers, ``True``/``False``, string literals (for equality tests on string
observations), list/tuple literals, names, unary and binary arithmetic (``+ - * / // % **``),
comparisons including chains and ``in``/``not in``, ``and``/``or``/``not``, conditional
expressions, and calls to a fixed set of functions (:data:`FUNCTIONS`).  Not allowed: attribute
access, subscripts, lambdas, comprehensions, keyword arguments, starred arguments, walrus, f-strings.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import math
import numbers
import statistics
import tokenize
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_LENGTH = 4096  # an expect predicate is one line of maths; longer text is a mistake or an attack
MAX_DEPTH = 64  # nesting depth of the parsed tree
MAX_INT_BITS = 4096  # cap on integer results of ``**`` (``9**9**9`` must not hang the harness)
MAX_SEQUENCE = 1_000_000  # longest sequence observation the evaluator will walk

Value = Any


class ExprError(ValueError):
    """The text is not a valid expression; ``col`` is the 1-based column inside the text."""

    def __init__(self, message: str, col: int = 1, text: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = max(1, col)
        self.text = text

    def __str__(self) -> str:
        return f"{self.message} (column {self.col})"


class EvalError(ExprError):
    """Evaluation failed: a missing name, a math domain error, a type mismatch, an overflow."""


class UnknownName(EvalError):
    """A name used by the expression is neither in the environment nor a known constant."""

    def __init__(self, name: str, col: int = 1, text: str = "") -> None:
        super().__init__(f"name {name!r} is not defined (not an observation, param or constant)", col, text)
        self.name = name


def _ln(x: Value) -> float:
    return math.log(x)


def _log(x: Value, base: Value = math.e) -> float:
    return math.log(x, base)


def _len(x: Value) -> int:
    if not isinstance(x, tuple | str):
        raise TypeError(f"len() of a {type(x).__name__}")
    return len(x)


def _isfinite(x: Value) -> bool:
    if isinstance(x, tuple):
        return all(_isfinite(v) for v in x)
    return math.isfinite(x)


def _all(x: Value) -> bool:
    if not isinstance(x, tuple):
        raise TypeError(f"all() of a {type(x).__name__}")
    return all(x)


def _any(x: Value) -> bool:
    if not isinstance(x, tuple):
        raise TypeError(f"any() of a {type(x).__name__}")
    return any(x)


def _minmax(func: Callable[..., Any], name: str, *args: Value) -> Value:
    if len(args) == 1:
        if not isinstance(args[0], tuple) or not args[0]:
            raise TypeError(f"{name}() of one argument needs a non-empty sequence")
        return func(args[0])
    return func(args)


def _numbers(x: Value, name: str, at_least: int = 1) -> list[float]:
    if not isinstance(x, tuple) or len(x) < at_least:
        raise TypeError(f"{name}() needs a sequence of at least {at_least} number{'s' if at_least > 1 else ''}")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in x):
        raise TypeError(f"{name}() of a sequence that holds non-numbers")
    return [float(v) for v in x]


def _mean(x: Value) -> float:
    return statistics.fmean(_numbers(x, "mean"))


def _median(x: Value) -> float:
    return float(statistics.median(_numbers(x, "median")))


def _stdev(x: Value) -> float:
    return statistics.stdev(_numbers(x, "stdev", 2))  # the sample standard deviation (n - 1)


def _sem(x: Value) -> float:
    """The standard error of the mean: what a multi-seed claim's margin is stated in."""
    xs = _numbers(x, "sem", 2)
    return statistics.stdev(xs) / math.sqrt(len(xs))


def _quantile(x: Value, q: Value) -> float:
    xs = sorted(_numbers(x, "quantile"))
    if not isinstance(q, int | float) or isinstance(q, bool) or not 0 <= q <= 1:
        raise TypeError("quantile(xs, q) needs 0 <= q <= 1")
    pos = q * (len(xs) - 1)  # linear interpolation between order statistics (numpy's default)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _sum(x: Value) -> float:
    if not isinstance(x, tuple):
        raise TypeError(f"sum() of a {type(x).__name__}")
    return math.fsum(_numbers(x, "sum", 0)) if x else 0


# name -> (function, min arity, max arity)
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "abs": (abs, 1, 1),
    # bound at call time, not built at import: the checks run where they are called
    "min": (functools.partial(_minmax, min, "min"), 1, 64),
    "max": (functools.partial(_minmax, max, "max"), 1, 64),
    "ln": (_ln, 1, 1),
    "log": (_log, 1, 2),
    "log2": (math.log2, 1, 1),
    "log10": (math.log10, 1, 1),
    "sqrt": (math.sqrt, 1, 1),
    "exp": (math.exp, 1, 1),
    "len": (_len, 1, 1),
    "isfinite": (_isfinite, 1, 1),
    "all": (_all, 1, 1),
    "any": (_any, 1, 1),
    # statistics over a sequence: a parametrized falsifier's `aggregate:` sees per-case lists
    "sum": (_sum, 1, 1),
    "mean": (_mean, 1, 1),
    "median": (_median, 1, 1),
    "stdev": (_stdev, 1, 1),
    "sem": (_sem, 1, 1),
    "quantile": (_quantile, 2, 2),
}

# Constants are shadowed by an observation or param of the same name.
CONSTANTS: dict[str, Value] = {"inf": math.inf, "nan": math.nan, "pi": math.pi}

_BINOPS: dict[type[ast.operator], Callable[[Value, Value], Value]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_BINOP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}

_CMPOPS: dict[type[ast.cmpop], Callable[[Value, Value], bool]] = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

_FORBIDDEN_WHY: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.NamedExpr: "assignment expressions are not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.Starred: "starred arguments are not allowed",
    ast.Dict: "dict literals are not allowed",
    ast.Set: "set literals are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield is not allowed",
}


def coerce(value: Value) -> Value:
    """Turn an observation into the evaluator's value domain (bool, int, float, str, tuple).

    Checkers may return numpy scalars, 0-d tensors or arrays; anything with ``tolist()`` is
    converted, every other numeric type through ``numbers``.
    """
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        if len(value) > MAX_SEQUENCE:
            raise EvalError(f"sequence of {len(value)} items is longer than {MAX_SEQUENCE}")
        return tuple(coerce(v) for v in value)
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return coerce(tolist())
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if value is None:
        raise EvalError("value is None")
    raise EvalError(f"values of type {type(value).__name__} cannot be used in an expression")


def coerce_or_none(value: Value) -> Value:
    try:
        return coerce(value) if value is not None else None
    except EvalError:
        return None


def format_value(value: Value, limit: int = 60, digits: int | None = None) -> str:
    """How a value is written into :meth:`Expression.substitute` output: exact floats (for failure
    messages), or ``digits`` significant digits (for reports), and short lists."""
    try:
        value = coerce(value)
    except EvalError:
        return f"<{type(value).__name__}>"
    text = f"{value:.{digits}g}" if digits is not None and isinstance(value, float) else repr(value)
    if isinstance(value, tuple) and len(text) > limit:
        text = f"[{len(value)} items: {text[: limit - 20]}…]"
    return text


@dataclass(frozen=True)
class Expression:
    """A parsed, whitelisted expression."""

    text: str
    tree: ast.Expression = field(repr=False, compare=False)
    names: frozenset[str]  # observation / param names it reads (functions and constants excluded)
    functions: frozenset[str] = frozenset()

    def evaluate(self, env: Mapping[str, Value]) -> Value:
        """Evaluate over ``env`` (observations and params); raise :class:`EvalError` on failure."""
        return _Evaluator(self.text, env).visit(self.tree.body)

    def holds(self, env: Mapping[str, Value]) -> bool:
        """Evaluate a predicate; its result must be a boolean (``x <= 0.05``, not ``x``)."""
        result = self.evaluate(env)
        if not isinstance(result, bool):
            raise EvalError(f"the expression evaluated to {format_value(result)}, not to true or false", 1, self.text)
        return result

    def names_in_order(self) -> list[str]:
        """:attr:`names` in the order they first appear in the text."""
        return _by_position(self.tree, self.names)

    def deciding_name(self, env: Mapping[str, Value], candidates: Collection[str]) -> str | None:
        """The name among ``candidates`` (the observations) whose comparison decides the verdict.

        For a predicate that fails, the first clause of its top-level ``and`` that is false; for
        one that holds, the comparison with the smallest relative margin to its bound (the one
        closest to failing).  Falls back to the first candidate named in the text.
        """
        observed = {n for n in self.names if n in candidates}
        tightest: tuple[float, str] | None = None
        for clause in _conjuncts(self.tree.body):
            first = _first_name(clause, observed)
            if first is None:
                continue
            try:
                value = _Evaluator(self.text, env).visit(clause)
            except EvalError:
                continue
            if value is False:
                return first
            for margin, name in _margins(self.text, clause, env, observed):
                if tightest is None or margin < tightest[0]:
                    tightest = (margin, name)
        return tightest[1] if tightest is not None else _first_name(self.tree.body, observed)

    def substitute(self, env: Mapping[str, Value], digits: int | None = None, summarise: bool = False) -> str:
        """The original text with each name's value written after it: ``x(=0.31) <= 0.05``.

        ``summarise``: a call over a sequence shows its result instead of the sequence
        (``mean(loss)(=3.52)``), which is what a reader of an aggregate over many cases needs."""
        raw = self.text.encode("utf-8")
        prefix = _prefix_bytes(self.text)
        inserts: list[tuple[int, str]] = []
        covered: list[tuple[int, int]] = []
        if summarise:
            for node in ast.walk(self.tree):
                if not isinstance(node, ast.Call) or node.end_col_offset is None:
                    continue
                if any(covered_start <= node.col_offset < end for covered_start, end in covered):
                    continue
                over_sequence = any(
                    isinstance(n, ast.Name) and isinstance(coerce_or_none(env.get(n.id)), tuple)
                    for a in node.args
                    for n in ast.walk(a)
                )
                if not over_sequence:
                    continue
                try:
                    value = _Evaluator(self.text, env).visit(node)
                except EvalError:
                    continue
                covered.append((node.col_offset, node.end_col_offset))
                inserts.append((node.end_col_offset + prefix, f"(={format_value(value, digits=digits)})"))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in self.names and node.end_col_offset is not None:
                if any(start <= node.col_offset < end for start, end in covered):
                    continue
                shown = format_value(env[node.id], digits=digits) if node.id in env else "?"
                inserts.append((node.end_col_offset + prefix, f"(={shown})"))
        out = bytearray()
        last = 0
        for offset, text in sorted(inserts):
            out += raw[last:offset]
            out += text.encode("utf-8")
            last = offset
        out += raw[last:]
        return out.decode("utf-8").strip()

    def __str__(self) -> str:
        return self.text


def _conjuncts(node: ast.AST) -> Iterator[ast.AST]:
    """The clauses of a top-level ``a and b and c`` (the node itself when it is not one)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            yield from _conjuncts(value)
    else:
        yield node


def _by_position(node: ast.AST, names: Collection[str]) -> list[str]:
    """Those of ``names`` that ``node`` reads, in the order they first appear in its text (by
    position, not by a substring search: ``a`` is not found inside ``rate``)."""
    found = sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names), key=lambda n: (n.lineno, n.col_offset)
    )
    return list(dict.fromkeys(n.id for n in found))


def _first_name(node: ast.AST, names: Collection[str]) -> str | None:
    """The one of ``names`` that comes first in ``node``'s text."""
    return next(iter(_by_position(node, names)), None)


def _margins(
    text: str, clause: ast.AST, env: Mapping[str, Value], candidates: Collection[str]
) -> Iterator[tuple[float, str]]:
    """(relative distance to the bound, name) for each ``name <op> bound`` pair of a comparison."""
    if not isinstance(clause, ast.Compare):
        return
    operands = [clause.left, *clause.comparators]
    for (left, right), op in zip(itertools.pairwise(operands), clause.ops, strict=True):
        if not isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE):
            continue  # an equality holds with no margin at all: it is not a bound to be near
        for side, other in ((left, right), (right, left)):
            if not (isinstance(side, ast.Name) and side.id in candidates):
                continue
            try:
                a, b = (_Evaluator(text, env).visit(n) for n in (side, other))
            except EvalError:
                continue
            numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (a, b))
            if not numeric or not (math.isfinite(a) and math.isfinite(b)):
                continue
            yield abs(float(a) - float(b)) / max(abs(float(a)), abs(float(b)), 1e-12), side.id


def _prefix_bytes(text: str) -> int:
    """Bytes of leading whitespace stripped before parsing (AST offsets are relative to the rest)."""
    stripped = _normalise(text)
    return len(stripped.encode("utf-8")) - len(stripped.lstrip().encode("utf-8"))


def _normalise(text: str) -> str:
    # A YAML block scalar brings line breaks, which end an expression in Python's eval mode; a
    # blank keeps every column where it was.  A tab is a blank to Python already, and inside a
    # string literal it is the tab the contract wrote (YAML's "\t"): it stays.
    return text.replace("\r", " ").replace("\n", " ")


def _line_break_in_literal(text: str, source: str) -> int | None:
    """The column of the first string literal that holds a line break as ``text`` wrote it, if
    one does: parsing ``source`` (``text`` normalised, character for character) read it as a
    blank, so the string compared would not be the one the contract wrote."""
    lead = len(source) - len(source.lstrip())
    tokens = tokenize.generate_tokens(io.StringIO(source.strip()).readline)
    for token in tokens:
        if token.type == tokenize.STRING:
            first, last = lead + token.start[1], lead + token.end[1]
            if "\n" in text[first:last] or "\r" in text[first:last]:
                return first + 1
    return None


def _col(text: str, node: ast.AST) -> int:
    """1-based character column of ``node`` inside the original ``text``."""
    byte_offset = getattr(node, "col_offset", 0) + _prefix_bytes(text)
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1


def parse(text: str) -> Expression:
    """Parse and whitelist ``text``; raise :class:`ExprError` (with a column) if it is not allowed."""
    if not isinstance(text, str):
        raise ExprError(f"expected an expression string, got {type(text).__name__}", 1, str(text))
    if not text.strip():
        raise ExprError("the expression is empty", 1, text)
    if len(text) > MAX_LENGTH:
        raise ExprError(f"the expression is {len(text)} characters long; the limit is {MAX_LENGTH}", 1, text)
    if "\0" in text:  # Python's parser says only that it ran off the end, which it did not
        raise ExprError("the expression holds a NUL character", text.index("\0") + 1, text)
    source = _normalise(text)
    lead = len(source) - len(source.lstrip())
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        # SyntaxError.offset is a 1-based character column in the stripped text; 0 or None means
        # the parser ran off the end, which is where the user has to look.
        stripped = source.strip()
        if not exc.offset:
            col, msg = lead + len(stripped) + 1, "the expression ends early"
        else:
            col, msg = exc.offset + lead, exc.msg
        raise ExprError(f"syntax error: {msg}", min(col, len(text) + 1), text) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"cannot parse the expression: {type(exc).__name__}", 1, text) from None
    names: set[str] = set()
    functions: set[str] = set()
    _check(text, tree.body, names, functions, depth=0)
    broken = _line_break_in_literal(text, source)
    if broken is not None:
        raise ExprError("a string literal holds a line break; write it as \\n", broken, text)
    return Expression(text=text, tree=tree, names=frozenset(names), functions=frozenset(functions))


def _check(text: str, node: ast.AST, names: set[str], functions: set[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ExprError(f"the expression nests deeper than {MAX_DEPTH} levels", _col(text, node), text)
    why = _FORBIDDEN_WHY.get(type(node))
    if why is not None:
        raise ExprError(why, _col(text, node), text)
    children: Iterator[ast.AST]
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, bytes | complex) or node.value is Ellipsis:
            raise ExprError(f"the literal {node.value!r} is not allowed", _col(text, node), text)
        return
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ExprError(f"{node.id!r} is a function; call it as {node.id}(...)", _col(text, node), text)
        if node.id not in CONSTANTS:
            names.add(node.id)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            # name the real offence (``x.f()`` is attribute access) before the generic refusal
            _check(text, node.func, set(), set(), depth + 1)
            raise ExprError("only the whitelisted functions can be called", _col(text, node), text)
        fname = node.func.id
        if fname not in FUNCTIONS:
            allowed = ", ".join(sorted(FUNCTIONS))
            raise ExprError(f"call to {fname!r} is not allowed (allowed: {allowed})", _col(text, node), text)
        if node.keywords:
            raise ExprError("keyword arguments are not allowed", _col(text, node.keywords[0]), text)
        _, lo, hi = FUNCTIONS[fname]
        if not lo <= len(node.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise ExprError(f"{fname}() takes {want} argument(s), got {len(node.args)}", _col(text, node), text)
        functions.add(fname)
        children = iter(node.args)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.UAdd | ast.USub | ast.Not):
            raise ExprError("bitwise operators are not allowed", _col(text, node), text)
        children = iter([node.operand])
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS and not isinstance(node.op, ast.Pow):
            raise ExprError("only + - * / // % ** are allowed", _col(text, node), text)
        children = iter([node.left, node.right])
    elif isinstance(node, ast.BoolOp):
        children = iter(node.values)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _CMPOPS:
                raise ExprError("'is' comparisons are not allowed; use == or !=", _col(text, node), text)
        children = iter([node.left, *node.comparators])
    elif isinstance(node, ast.IfExp):
        children = iter([node.test, node.body, node.orelse])
    elif isinstance(node, ast.List | ast.Tuple):
        children = iter(node.elts)
    else:
        raise ExprError(f"{type(node).__name__} is not allowed in an expression", _col(text, node), text)
    for child in children:
        _check(text, child, names, functions, depth + 1)


class _Evaluator:
    def __init__(self, text: str, env: Mapping[str, Value]) -> None:
        self.text = text
        self.env = env

    def fail(self, message: str, node: ast.AST) -> EvalError:
        return EvalError(message, _col(self.text, node), self.text)

    def visit(self, node: ast.AST) -> Value:
        try:
            return self._visit(node)
        except EvalError:
            raise
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"{type(exc).__name__}: {exc}", node) from None
        except RecursionError:
            raise self.fail("the expression is too deeply nested", node) from None

    def _visit(self, node: ast.AST) -> Value:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                try:
                    return coerce(self.env[node.id])
                except EvalError as exc:
                    raise self.fail(f"{node.id}: {exc.message}", node) from None
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            raise UnknownName(node.id, _col(self.text, node), self.text)
        if isinstance(node, ast.List | ast.Tuple):
            return tuple(self.visit(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            operand = self.visit(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            _number(operand, node, self)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            left, right = self.visit(node.left), self.visit(node.right)
            if not (_is_number(left) and _is_number(right)):
                sym = _BINOP_TEXT[type(node.op)]
                raise self.fail(f"{sym} needs numbers, got {type(left).__name__} and {type(right).__name__}", node)
            if isinstance(node.op, ast.Pow):
                return _power(left, right, node, self)
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            result: Value = None
            for value_node in node.values:
                result = self.visit(value_node)
                if bool(result) is not is_and:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.visit(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.visit(comparator)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)  # guaranteed by parse()
            func = FUNCTIONS[node.func.id][0]
            return func(*(self.visit(a) for a in node.args))
        raise self.fail(f"{type(node).__name__} is not allowed in an expression", node)


def _is_number(value: Value) -> bool:
    return isinstance(value, int | float)  # bool is an int: True + 1 == 2, as in Python


def _number(value: Value, node: ast.AST, ev: _Evaluator) -> None:
    if not _is_number(value):
        raise ev.fail(f"a number is needed here, got {type(value).__name__}", node)


def _power(base: Value, exponent: Value, node: ast.AST, ev: _Evaluator) -> Value:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = exponent * math.log2(abs(base))
        if bits > MAX_INT_BITS:
            raise ev.fail(f"{base} ** {exponent} is too large (over {MAX_INT_BITS} bits)", node)
    result = base**exponent
    if isinstance(result, complex):
        raise ev.fail(f"{base} ** {exponent} is not a real number", node)
    return result
