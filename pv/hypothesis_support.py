"""Property falsifiers: run a Hypothesis property with the contract's settings, and only measure.

A checker asks for the ``pv_hypothesis`` fixture (a :class:`PropertyRunner` bound to its
falsifier) and returns what :meth:`PropertyRunner.run` measures::

    @checker(observes=["counterexamples"])
    def rmsnorm_scale_invariant(pv_hypothesis, dim):
        def prop(scale):
            assert close(rmsnorm(x * scale), rmsnorm(x))
        return pv_hypothesis.run(prop, scale=st.floats(0.1, 10))

with ``expect: counterexamples == 0`` in the contract.  The property never decides the verdict:
the harness does, from the observation.  The runner replays the contract's ``examples:`` first,
then runs ``@given`` with deterministic settings (``derandomize=True``, no deadline, no example
database, unless the contract's ``hypothesis:`` block says otherwise), records the settings and
any counterexample, and renders a ready-to-paste ``examples:`` entry for the failure report.

A pasted example must run as it was found.  A checker may run several properties: each example is
replayed only on the properties whose parameters it names (all the required ones, nothing else),
and one that fits none of them is reported by the harness as an error.  Values are written so
that they can be read back: a dataclass becomes a mapping of its fields and is rebuilt from the
property's annotation, ``bytes`` become ``{__bytes__: <hex>}``.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

DEFAULT_MAX_EXAMPLES = 100


@dataclass(frozen=True)
class PropertySettings:
    max_examples: int = DEFAULT_MAX_EXAMPLES
    derandomize: bool = True
    deadline_ms: int | None = None

    @classmethod
    def from_model(cls, block: Any) -> PropertySettings:
        """From a contract's ``hypothesis:`` block (a pydantic model, a dict, or None)."""
        if block is None:
            return cls()
        data = block if isinstance(block, Mapping) else block.model_dump()
        return cls(
            max_examples=int(data.get("max_examples", DEFAULT_MAX_EXAMPLES)),
            derandomize=bool(data.get("derandomize", True)),
            deadline_ms=data.get("deadline_ms"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "max_examples": self.max_examples,
            "derandomize": self.derandomize,
            "deadline_ms": self.deadline_ms,
            "database": None,
        }


BYTES_KEY = "__bytes__"


def plain(value: Any) -> Any:
    """A YAML/JSON-friendly copy of a generated value that :func:`revive` can read back.

    Tuples and arrays become lists, a dataclass the mapping of its fields, ``bytes`` a one-key
    mapping holding their hex; anything else is written as its ``repr`` (and cannot be replayed).
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return {BYTES_KEY: value.hex()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return plain(tolist())
    return repr(value)


def revive(value: Any, annotation: Any = Any) -> Any:
    """Undo :func:`plain` for a value read from YAML, guided by the parameter's annotation."""
    if isinstance(value, Mapping) and set(value) == {BYTES_KEY}:
        return bytes.fromhex(str(value[BYTES_KEY]))
    if isinstance(value, Mapping):
        cls = _dataclass_in(annotation)
        if cls is not None:
            hints = typing.get_type_hints(cls)
            return cls(**{k: revive(v, hints.get(k, Any)) for k, v in value.items()})
        return {k: revive(v) for k, v in value.items()}
    if isinstance(value, list):
        args = typing.get_args(annotation)
        item = args[0] if args and typing.get_origin(annotation) in (list, Sequence) else Any
        revived = [revive(v, item) for v in value]
        return tuple(revived) if typing.get_origin(annotation) is tuple else revived
    return value


def _dataclass_in(annotation: Any) -> type | None:
    """The dataclass an annotation names, alone or in a union with None (``Scenario | None``)."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(annotation) if isinstance(a, type) and dataclasses.is_dataclass(a)]
        return found[0] if len(found) == 1 else None
    return None


def fits(prop: Callable[..., Any], example: Mapping[str, Any]) -> bool:
    """True when ``example`` names every required parameter of ``prop`` and nothing it cannot take."""
    params = inspect.signature(prop).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return True
    named = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    required = {p.name for p in params if p.default is inspect.Parameter.empty and p.kind is not p.VAR_POSITIONAL}
    return required <= set(example) <= named


def _replayable(prop: Callable[..., Any], example: Mapping[str, Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(prop)
    except Exception:  # an annotation that does not resolve: replay the values as read
        hints = {}
    return {k: revive(v, hints.get(k, Any)) for k, v in example.items()}


def examples_snippet(example: Mapping[str, Any]) -> str:
    """The YAML to paste under the falsifier so this counterexample is replayed on every run."""
    body = yaml.safe_dump([plain(dict(example))], sort_keys=True, default_flow_style=None, width=100)
    return "examples:\n" + "".join(f"  {line}\n" for line in body.splitlines())


@dataclass
class PropertyRecord:
    """What one :meth:`PropertyRunner.run` did, kept for the falsifier's result."""

    settings: PropertySettings
    examples_replayed: int = 0
    counterexample: dict[str, Any] | None = None
    counterexample_source: str | None = None  # "examples" (a listed example failed) or "search"
    error: str | None = None  # the property's failure, last lines of its traceback
    snippet: str | None = None
    parameters: tuple[str, ...] = ()  # the property's, to say which examples fit it
    replayed: tuple[int, ...] = ()  # indices into the falsifier's examples replayed on it

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_json(),
            "examples_replayed": self.examples_replayed,
            "counterexample": self.counterexample,
            "counterexample_source": self.counterexample_source,
            "error": self.error,
            "examples_snippet": self.snippet,
        }


def _short_error(exc: BaseException) -> str:
    # Only the exception itself: Hypothesis' notes repeat the example under the wrapper's name.
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text.strip()[:2000]


@dataclass
class PropertyRunner:
    """Runs properties for one falsifier; the plugin gives each checker run a fresh one."""

    settings: PropertySettings = field(default_factory=PropertySettings)
    examples: Sequence[Mapping[str, Any]] = ()
    records: list[PropertyRecord] = field(default_factory=list)

    def pv_child_state(self) -> list[PropertyRecord]:
        """What a run in a forked process recorded, sent back to the parent's runner."""
        return list(self.records)

    def pv_restore_state(self, state: list[PropertyRecord]) -> None:
        self.records[:] = state

    def run(self, prop: Callable[..., Any], **strategies: Any) -> dict[str, Any]:
        """Replay the examples, then search with ``@given(**strategies)``; return observations.

        Observations: ``counterexamples`` (0 or 1: the search stops at the first, shrunk),
        ``examples_replayed``.  An exception raised by the property is a counterexample; any
        other failure of the machinery (a bad strategy, a health check) propagates and the
        harness reports it as ``error``.
        """
        # hypothesis loads only for a contract that declares a property falsifier
        from hypothesis import HealthCheck, given, settings

        record = PropertyRecord(settings=self.settings, parameters=tuple(inspect.signature(prop).parameters))
        self.records.append(record)
        for index, example in enumerate(self.examples):
            if not fits(prop, example):
                continue  # written for another property of the same checker
            record.examples_replayed += 1
            record.replayed += (index,)
            try:
                prop(**_replayable(prop, example))
            except Exception as exc:
                record.counterexample = plain(dict(example))
                record.counterexample_source = "examples"
                record.error = _short_error(exc)
                return self._observations(record)

        failing: list[dict[str, Any]] = []

        def recorded(**kwargs: Any) -> None:
            try:
                prop(**kwargs)
            except Exception:
                # The last failing call is Hypothesis' final replay of the shrunk example.
                failing.append(dict(kwargs))
                raise

        ms = self.settings.deadline_ms
        deadline = None if ms is None else datetime.timedelta(milliseconds=ms)
        configured = settings(
            max_examples=self.settings.max_examples,
            derandomize=self.settings.derandomize,
            deadline=deadline,
            database=None,
            print_blob=False,
            suppress_health_check=[HealthCheck.too_slow],
        )
        test = configured(given(**strategies)(recorded))
        try:
            test()
        except Exception as exc:
            if not failing:
                raise  # the machinery failed before the property ever did: an error, not a finding
            record.counterexample = plain(failing[-1])
            record.counterexample_source = "search"
            record.error = _short_error(exc)
            record.snippet = examples_snippet(failing[-1])
        return self._observations(record)

    @staticmethod
    def _observations(record: PropertyRecord) -> dict[str, Any]:
        return {
            "counterexamples": 0 if record.counterexample is None else 1,
            "examples_replayed": record.examples_replayed,
        }

    def unmatched_examples(self) -> list[str]:
        """Each ``examples:`` entry that fits none of the properties the checker ran, explained."""
        if not self.records:
            return []
        used = {i for r in self.records for i in r.replayed}
        shapes = " or ".join(f"({', '.join(r.parameters)})" for r in self.records)
        return [
            f"examples[{i}] {plain(dict(e))} names parameters no property takes; the properties take {shapes}"
            for i, e in enumerate(self.examples)
            if i not in used
        ]

    def summary(self) -> dict[str, Any] | None:
        """What goes into ``FalsifierResult.hypothesis``; None when no property was run."""
        if not self.records:
            return None
        data = self.records[-1].to_json()
        if len(self.records) > 1:
            data["runs"] = [r.to_json() for r in self.records]
        return data

    def failure_text(self) -> str:
        """Counterexamples and their ``examples:`` snippets, for the failure report."""
        parts = []
        for r in self.records:
            if r.counterexample is None:
                continue
            parts.append(f"  counterexample ({r.counterexample_source}): {r.counterexample}")
            if r.error:
                parts.append(f"  property failed with: {r.error}")
            if r.snippet:
                parts.append("  add it to the falsifier so it is replayed on every run:")
                parts.extend("    " + line for line in r.snippet.splitlines())
        return "\n".join(parts)
