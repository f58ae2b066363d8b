"""Fault registries: planted defects that a falsifier's mutant switches on.

A system under test owns one :class:`FaultRegistry` (the engine's is ``engine.faults:FAULTS``).
Its code asks ``FAULTS.active("name")`` at the place where the defect would live; faults are off
by default and only a ``with FAULTS.enabled("name"):`` block turns one on, so a fault can never
leak into a normal run.  A contract names a mutant as ``module:fault``; the module must expose a
registry called ``FAULTS`` (or any object with the same small interface).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pv.diagnostics import suggest

REGISTRY_ATTR = "FAULTS"
ENV_VAR = "PV_FAULTS"  # comma-separated faults a child process (torchrun, subprocess) starts with


@dataclass(frozen=True)
class Fault:
    name: str
    description: str


@runtime_checkable
class FaultRegistryLike(Protocol):
    def names(self) -> list[str]: ...

    def enabled(self, name: str) -> AbstractContextManager[None]: ...

    def active(self, name: str) -> bool: ...


class UnknownFault(KeyError):
    pass


class FaultRegistry:
    """A named set of faults, all off unless switched on inside :meth:`enabled`."""

    def __init__(self, system: str) -> None:
        self.system = system
        self._faults: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._on: set[str] = set()
        env = os.environ.get(ENV_VAR, "")
        self._env_on = {n.strip() for n in env.split(",") if n.strip()}

    def register(self, name: str, description: str) -> Fault:
        if name in self._faults:
            raise ValueError(f"fault {name!r} registered twice in {self.system}")
        fault = Fault(name, description)
        self._faults[name] = fault
        return fault

    def names(self) -> list[str]:
        return sorted(self._faults)

    def describe(self, name: str) -> str:
        return self._get(name).description

    def __contains__(self, name: object) -> bool:
        return name in self._faults

    def _get(self, name: str) -> Fault:
        try:
            return self._faults[name]
        except KeyError:
            raise UnknownFault(f"{self.system} has no fault {name!r}; known: {', '.join(self.names())}") from None

    def active(self, name: str) -> bool:
        """True only inside ``enabled(name)`` (or in a child started with it in ``PV_FAULTS``)."""
        self._get(name)
        return name in self._on or name in self._env_on

    def active_names(self) -> list[str]:
        return sorted(self._on | self._env_on)

    @contextmanager
    def enabled(self, name: str) -> Iterator[None]:
        self._get(name)
        with self._lock:
            if name in self._on:
                raise RuntimeError(f"fault {name!r} is already on")
            self._on.add(name)
        try:
            yield
        finally:
            with self._lock:
                self._on.discard(name)


def resolve_mutant(ref: str, allowed: Iterable[str] | None = None) -> tuple[FaultRegistry, str]:
    """Resolve ``module:fault`` to its registry and fault name; raises LookupError if unknown.

    With ``allowed`` (the checker and fault packages), a module outside them is refused before
    anything is imported: a contract must not be able to make pv import arbitrary code."""
    module, sep, name = ref.partition(":")
    if not sep or not module or not name:
        raise LookupError(f"mutant reference {ref!r} is not of the form module:fault")
    if allowed is not None:
        packages = list(allowed)
        if not any(module == p or module.startswith(p + ".") for p in packages):
            raise LookupError(
                f"module {module!r} is outside the checker and fault packages ({', '.join(packages) or 'none'}); "
                "it was not imported"
            )
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        raise LookupError(f"fault module {module!r} failed to import: {exc}") from exc
    registry = getattr(mod, REGISTRY_ATTR, None)
    if registry is None or not hasattr(registry, "enabled") or not hasattr(registry, "names"):
        raise LookupError(f"module {module!r} exposes no fault registry named {REGISTRY_ATTR}")
    if name not in registry.names():
        close = suggest(name, registry.names())
        hint = f"; did you mean `{module}:{close}`?" if close else ""
        raise LookupError(f"{module}:{REGISTRY_ATTR} has no fault {name!r}{hint}")
    verify = getattr(registry, "verify", None)
    if callable(verify):  # a registry that patches the system checks its targets still exist
        verify(name)
    return registry, name
