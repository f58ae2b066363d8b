"""The checker registry: which functions a contract's ``check: module:function`` may bind to.

A checker measures and returns observations; it never judges.  Only functions decorated with
:func:`checker` inside the configured checker packages can be bound, so a contract naming
``os:system`` is rejected without importing or calling anything.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pv.config import DEFAULT_CHECKER_PACKAGES
from pv.diagnostics import suggest

F = TypeVar("F", bound=Callable[..., Any])

CHECKER_ATTR = "__pv_checker__"
HARNESS_PARAMS = frozenset({"seed"})  # consumed by the harness whether or not the checker takes them


@dataclass(frozen=True)
class CheckerSpec:
    """What a registered checker declares about itself, readable without running it."""

    func: Callable[..., Any]
    observes: tuple[str, ...]
    ids: tuple[str, ...] = ()
    ref: str = ""
    artifacts: bool = field(default=False)

    @property
    def module(self) -> str:
        return self.ref.partition(":")[0]


def checker(*, observes: Sequence[str], ids: Sequence[str] = ()) -> Callable[[F], F]:
    """Register a function as a checker that returns the observation names in ``observes``.

    ``ids`` optionally names the FALSIFY ids the checker was written for, so that lint can report
    checkers that no contract declares.
    """

    def wrap(func: F) -> F:
        spec = CheckerSpec(
            func=func,
            observes=tuple(observes),
            ids=tuple(ids),
            ref=f"{func.__module__}:{func.__name__}",
        )
        setattr(func, CHECKER_ATTR, spec)
        return func

    return wrap


class CheckerBindingError(LookupError):
    """A ``check:`` reference that does not resolve to a registered checker."""


def in_packages(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def resolve(ref: str, packages: Iterable[str] = DEFAULT_CHECKER_PACKAGES) -> CheckerSpec:
    """Resolve ``module:function`` to its :class:`CheckerSpec`, importing only allowed modules."""
    module, sep, name = ref.partition(":")
    if not sep or not module or not name:
        raise CheckerBindingError(f"checker reference {ref!r} is not of the form module:function")
    packages = tuple(packages)
    if not in_packages(module, packages):
        raise CheckerBindingError(
            f"checker module {module!r} is outside the configured checker packages "
            f"({', '.join(packages)}); it was not imported"
        )
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:  # the checker module exists; something it imports does not
            raise CheckerBindingError(f"checker module {module!r} failed to import: {exc}") from exc
        raise CheckerBindingError(
            f"no checker module {module!r}" + _did_you_mean(module, _sibling_modules(module), sep=":" + name)
        ) from exc
    except Exception as exc:  # an import error in user code is a binding defect, not a crash
        raise CheckerBindingError(f"checker module {module!r} failed to import: {exc}") from exc
    obj = getattr(mod, name, None)
    if obj is None:
        registered = [n for n, o in vars(mod).items() if isinstance(getattr(o, CHECKER_ATTR, None), CheckerSpec)]
        raise CheckerBindingError(
            f"module {module!r} has no attribute {name!r}" + _did_you_mean(name, registered, prefix=module + ":")
        )
    spec = getattr(obj, CHECKER_ATTR, None)
    if not isinstance(spec, CheckerSpec):
        raise CheckerBindingError(f"{ref} exists but is not registered with @pv.checker")
    return spec


def unaccepted_params(func: Callable[..., Any], params: Iterable[str]) -> dict[str, str]:
    """Each param ``func`` cannot take by keyword, mapped to ``"; did you mean `x`?"`` (or ``""``).

    A checker with ``**kwargs`` takes anything; :data:`HARNESS_PARAMS` are always allowed.
    """
    sig = inspect.signature(func)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return {}
    named = [
        n
        for n, p in sig.parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    return {k: _did_you_mean(k, named) for k in params if k not in named and k not in HARNESS_PARAMS}


def _did_you_mean(word: str, choices: Iterable[str], *, prefix: str = "", sep: str = "") -> str:
    """``"; did you mean `x`?"`` for the choice :func:`pv.diagnostics.suggest` finds, else ``""``."""
    close = suggest(word, choices)
    return f"; did you mean `{prefix}{close}{sep}`?" if close else ""


def _sibling_modules(module: str) -> list[str]:
    """The importable modules next to ``module`` (``pkg.a`` for ``pkg.b``), found without importing them."""
    parent, _, _ = module.rpartition(".")
    if not parent:
        return []
    try:
        pkg = importlib.import_module(parent)
    except Exception:
        return []
    return [f"{parent}.{info.name}" for info in pkgutil.iter_modules(getattr(pkg, "__path__", []))]


def discover(packages: Iterable[str] = DEFAULT_CHECKER_PACKAGES) -> dict[str, CheckerSpec]:
    """Import every module of the checker packages and return their registered checkers by ref."""
    found: dict[str, CheckerSpec] = {}
    for pkg_name in packages:
        try:
            pkg = importlib.import_module(pkg_name)
        except Exception as exc:
            raise CheckerBindingError(f"checker package {pkg_name!r} failed to import: {exc}") from exc
        modules = [pkg]
        for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=pkg_name + "."):
            try:
                modules.append(importlib.import_module(info.name))
            except Exception as exc:
                raise CheckerBindingError(f"checker module {info.name!r} failed to import: {exc}") from exc
        for mod in modules:
            for obj in vars(mod).values():
                spec = getattr(obj, CHECKER_ATTR, None)
                if isinstance(spec, CheckerSpec) and spec.func.__module__ == mod.__name__:
                    found[spec.ref] = spec
    return found
