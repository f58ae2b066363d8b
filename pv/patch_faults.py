"""Mutants that need no hook in the system under test: each fault is a patch of a named attribute.

A :class:`~pv.faults.FaultRegistry` asks the system's own code to branch on ``FAULTS.active(...)``,
which makes pv a runtime dependency of production code.  A :class:`PatchFaults` registry lives in
the *checker* package instead and plants each defect from outside, with ``unittest.mock.patch``
semantics, only while the mutant runs::

    # mychecks/mutants.py -- the system under test (mysystem) is not touched
    from pv import PatchFaults

    FAULTS = PatchFaults("mysystem")

    @FAULTS.replace("mysystem.math:double", "doubles one too many")
    def double_off_by_one(x):
        return 2 * x + 1

    FAULTS.set("eps_too_big", "mysystem.norm:EPS", 1e-2, "the norm's epsilon is 10,000 times too big")

and the contract names ``mutant: mychecks.mutants:double_off_by_one`` exactly as it would name a
hooked fault.  The patch goes where the name is looked up, as with ``mock.patch``: a module that did
``from mysystem.math import double`` holds its own reference, so list it in ``also=``.

The patches are declared in Python by the project, never in a contract: a contract can only name a
patch that the checker package registered, so it cannot make the harness replace arbitrary code.
Targets are resolved when lint or the harness resolves the mutant, so a target that moved is a
broken mutant reference (PVL402), not a vacuous falsifier.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from unittest import mock

from pv.faults import Fault, FaultRegistry

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Patch:
    """What one fault replaces while it is on: each target (``module:attr.path``) gets ``value``."""

    targets: tuple[str, ...]
    value: Any


def locate(target: str) -> tuple[Any, str]:
    """The object that owns ``target``'s last attribute, and that attribute's name.

    ``pkg.mod:Class.method`` gives ``(pkg.mod.Class, "method")``.  Raises LookupError naming what
    is missing.
    """
    module, sep, path = target.partition(":")
    if not sep or not module or not path:
        raise LookupError(f"patch target {target!r} is not of the form module:attribute")
    try:
        owner: Any = importlib.import_module(module)
    except Exception as exc:
        raise LookupError(f"patch target module {module!r} failed to import: {exc}") from exc
    *parents, attr = path.split(".")
    for part in parents:
        if not hasattr(owner, part):
            raise LookupError(f"patch target {target!r}: {owner!r} has no attribute {part!r}")
        owner = getattr(owner, part)
    if not hasattr(owner, attr):
        raise LookupError(f"patch target {target!r}: {getattr(owner, '__name__', owner)!r} has no attribute {attr!r}")
    return owner, attr


class PatchFaults(FaultRegistry):
    """A fault registry whose faults are patches applied by the harness, not branches in the system."""

    def __init__(self, system: str) -> None:
        super().__init__(system)
        self._patches: dict[str, Patch] = {}
        self._started: list[Any] = []  # patches applied for the whole process (PV_FAULTS in a child)

    def replace(
        self, target: str, description: str, *, name: str | None = None, also: Sequence[str] = ()
    ) -> Callable[[F], F]:
        """Register the decorated function as the fault that replaces ``target`` (and ``also``).

        The fault's name is the function's unless ``name`` says otherwise.  A method target gets the
        function as its replacement, so it receives ``self`` as the original does.
        """

        def wrap(func: F) -> F:
            self._add(name or func.__name__, description, Patch((target, *also), func))
            return func

        return wrap

    def set(self, name: str, target: str, value: Any, description: str, *, also: Sequence[str] = ()) -> Fault:
        """Register a fault under which ``target`` (a constant, a default, a table) holds ``value``."""
        return self._add(name, description, Patch((target, *also), value))

    def verify(self, name: str) -> None:
        """Raise LookupError unless every target of fault ``name`` exists (lint and the harness ask)."""
        for target in self.patch_of(name).targets:
            locate(target)

    def patch_of(self, name: str) -> Patch:
        """The patch of fault ``name``; a fault added with :meth:`register` is a hook and patches nothing."""
        self._get(name)
        return self._patches.get(name, Patch((), None))

    @contextmanager
    def enabled(self, name: str) -> Iterator[None]:
        with super().enabled(name), ExitStack() as stack:
            for patcher in _patchers(self.patch_of(name)):
                stack.enter_context(patcher)
            yield

    def _add(self, name: str, description: str, patch: Patch) -> Fault:
        fault = self.register(name, description)
        self._patches[name] = patch
        if name in self._env_on:
            # A child process (torchrun rank, subprocess) started under this mutant: the fault is on
            # for its whole life, so the patch is applied as soon as it is known and never undone.
            for patcher in _patchers(patch):
                patcher.start()
                self._started.append(patcher)
        return fault


def _patchers(patch: Patch) -> list[Any]:
    """One ``mock.patch.object`` per target of ``patch``, every target located first."""
    return [mock.patch.object(*locate(target), patch.value) for target in patch.targets]
