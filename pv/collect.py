"""Collection: a contract file becomes one pytest item per ``FALSIFY-*`` entry.

Node ids read ``contracts/<contract-id>.yaml::<FALSIFY-ID>``; an item's location is the YAML line
of its falsifier.  A contract that does not load or validate becomes a single failing item that
lists its diagnostics, so a bad file never crashes collection nor hides the other contracts.

Items are :class:`pytest.Function` subclasses so that a checker can receive any pytest fixture by
naming it as a parameter; the fixtures are fetched by name when the item runs, which keeps
collection from importing checker modules (and, with them, torch).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pv.cases import Case, CaseError, case_params, expand, item_name
from pv.diagnostics import Diagnostic
from pv.dialect import relax
from pv.evidence.code_binding import CodeScope
from pv.hypothesis_support import PropertyRunner, PropertySettings
from pv.model import FalsificationTest
from pv.outcomes import ContractFailure, InvalidContract, raise_outcome
from pv.paths import shown
from pv.pytest_settings import project_of
from pv.requirements import needs_gpu
from pv.results import ContractRun, FalsifierResult, Verdict
from pv.rules import DUPLICATE_FALSIFIER
from pv.run_checker import DEFAULT_SEED
from pv.runner import FalsifierRun, run_falsifier
from pv.validate import check_file

if TYPE_CHECKING:
    from pv.hypothesis_support import PropertyRunner
    from pv.loader import LoadedContract
    from pv.runner import FalsifierRun

YAML_SUFFIXES = (".yaml", ".yml")
INVALID_ITEM_NAME = "invalid-contract"


def _locate(loaded: LoadedContract, *keypath: str | int) -> tuple[int, int]:
    """The (line, col) of ``keypath`` (the loader falls back to the nearest existing ancestor)."""
    return loaded.locate(keypath)


def collection_diagnostics(
    loaded: LoadedContract, packages: Sequence[str], fault_packages: Sequence[str] = (), max_nproc: int | None = None
) -> list[Diagnostic]:
    """``pv validate``'s per-file rules, plus what the plugin itself needs to build items.

    Tree-wide rules (ids repeated across files, ``depends_on``) stay with ``pv validate``: they
    need every contract, and collection of one file must not depend on the others.  Within one
    file a repeated FALSIFY id would give two items one node id, so it is checked here.
    """

    found = check_file(loaded, packages, fault_packages, max_nproc if max_nproc is not None else 8)
    contract = loaded.contract
    if contract is None:
        return found
    seen: set[str] = set()
    for i, f in enumerate(contract.falsification_tests):
        if f.id in seen:
            found.append(
                loaded.diagnostic(
                    DUPLICATE_FALSIFIER, ("falsification_tests", i, "id"), f"{f.id} is declared twice in this contract"
                )
            )
        seen.add(f.id)
    return found


def contract_run(loaded: LoadedContract, root: Path, scope: CodeScope | None = None) -> ContractRun:
    """The contract as the run starts on it; with ``scope``, the code its evidence will be bound to."""
    contract = loaded.contract
    assert contract is not None
    return ContractRun(
        contract_id=loaded.id,
        path=shown(loaded.path, root),
        sha256=loaded.sha256 or "",
        version=contract.metadata.version,
        status=contract.metadata.status.value,
        declared=[f.id for f in contract.falsification_tests],
        ship_blocking=[f.id for f in contract.falsification_tests if f.ship_blocking],
        cases=declared_cases(contract.falsification_tests),
        code=scope.snapshot(loaded.path, loaded.data) if scope is not None else None,
    )


def declared_cases(falsifiers: Sequence[FalsificationTest]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in falsifiers:
        try:
            ids = [c.id for c in expand(f)]
        except CaseError:  # validation reports it; such a contract collects as one invalid item
            continue
        if ids:
            out[f.id] = ids
    return out


class ContractFile(pytest.File):
    """A contract YAML file; its children are its falsifiers."""

    def collect(self) -> Iterator[pytest.Item]:
        project = project_of(self.config)
        settings = project.config
        loaded = project.contract(self.path).loaded
        assert loaded is not None  # ProjectContract.read keeps the loader's result
        if loaded.skipped:
            return  # a data file beside the contracts (Rust dialect): nothing to collect
        diagnostics = list(loaded.diagnostics) + collection_diagnostics(
            loaded, settings.checker_packages, settings.fault_packages, settings.max_nproc
        )
        if settings.dialect == "rust":
            diagnostics = relax(diagnostics)
        root = self.config.rootpath
        errors = [replace(d, path=shown(d.path, root)) for d in diagnostics if d.is_error]
        if loaded.contract is None or errors:
            yield InvalidContractItem.from_parent(
                self, name=INVALID_ITEM_NAME, contract_id=loaded.id, diagnostics=errors
            )
            return
        run = contract_run(loaded, root, CodeScope.of(settings))
        for i, falsifier in enumerate(loaded.contract.falsification_tests):
            line, _ = _locate(loaded, "falsification_tests", i, "id")
            cases: list[Case | None] = [*expand(falsifier)] or [None]
            for case in cases:
                yield FalsifierItem.from_parent(
                    self,
                    name=item_name(falsifier.id, case.id if case else None),
                    callobj=falsify,
                    falsifier=falsifier,
                    contract=run,
                    line=line,
                    case=case,
                )


def falsify() -> None:
    """Stands in for a test function so that the item takes part in fixture resolution."""


class FalsifierItem(pytest.Function):
    """One ``FALSIFY-*`` entry, run by :func:`pv.plugin` hooks through :meth:`runtest`."""

    def __init__(
        self, *, falsifier: FalsificationTest, contract: ContractRun, line: int, case: Case | None = None, **kw: Any
    ) -> None:
        super().__init__(**kw)
        self.falsifier = falsifier
        self.contract = contract
        self.yaml_line = line
        self.case = case  # one case of a parametrized falsifier (pv.cases); None: not parametrized
        self.params = case_params(falsifier, case)  # what the checker and expect see
        self.pv_result: FalsifierResult | None = None
        self.extra_keyword_matches.add(contract.contract_id)
        self.add_marker(pytest.mark.contract(contract.contract_id, id=contract.contract_id))
        self.add_marker(pytest.mark.ship_blocking if falsifier.ship_blocking else pytest.mark.advisory)
        if needs_gpu(falsifier.requires):
            self.add_marker(pytest.mark.requires_gpu)
        if falsifier.slow:
            self.add_marker(pytest.mark.slow)

    @property
    def label(self) -> str:
        return f"{self.contract.contract_id}::{self.name}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.yaml_line - 1, self.label

    @property
    def seed(self) -> int:
        return _seed_of(self.params)

    def new_result(self, verdict: Verdict = Verdict.NOT_RUN) -> FalsifierResult:
        f = self.falsifier
        return FalsifierResult(
            contract_id=self.contract.contract_id,
            falsify_id=f.id,
            verdict=verdict,
            ship_blocking=f.ship_blocking,
            expect=f.expect,
            params=dict(self.params),
            seed=self.seed,
            worker=os.environ.get("PYTEST_XDIST_WORKER", "master"),
            case=self.case.id if self.case is not None else None,
            aggregate=f.aggregate if self.case is not None else None,
        )

    def falsifier_run(self) -> FalsifierRun:
        """This item as the runner sees it: no pytest, only what the run needs from it."""

        getfixture = self._request.getfixturevalue
        return FalsifierRun(
            label=self.label,
            falsifier=self.falsifier,
            params=self.params,
            seed=self.seed,
            result=self.new_result(),
            settings=project_of(self.config).config,
            contract_path=self.path,
            item_name=self.name,
            contract_sha256=self.contract.sha256 or None,
            rootpath=self.config.rootpath,
            fixture=getfixture,
            fixture_collisions=self.fixture_collisions,
            artifact_dir=lambda suffix: new_artifact_dir(self, getfixture("tmp_path_factory"), suffix),
            property_runner=lambda: property_runner(self),
        )

    def fixture_collisions(self, names: Iterable[str]) -> list[str]:
        """The names a fixture visible to this item has (``tmp_path``, ``pv_artifacts``, a conftest's)."""
        manager = self.session._fixturemanager
        found = []
        for name in sorted(names):
            try:
                defs = manager.getfixturedefs(name, self)
            except TypeError:  # pytest 8.0: (argname, nodeid)
                defs = manager.getfixturedefs(name, self.nodeid)  # type: ignore[arg-type]
            if defs:
                found.append(name)
        return found

    def runtest(self) -> None:
        run = self.falsifier_run()
        self.pv_result = run.result  # there for the report even if the run is interrupted
        run_falsifier(run)
        raise_outcome(run)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, ContractFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def _prunetraceback(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        return None


def _seed_of(params: dict[str, Any]) -> int:
    seed = params.get("seed", DEFAULT_SEED)
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else DEFAULT_SEED


class InvalidContractItem(pytest.Item):
    """A contract that failed to load or validate: fails with its ``path:line:col`` diagnostics.

    It carries the ``ship_blocking`` marker so that ``-m ship_blocking`` cannot pass while a
    contract it would have run is broken.
    """

    def __init__(self, *, contract_id: str, diagnostics: Sequence[Diagnostic], **kw: Any) -> None:
        super().__init__(**kw)
        self.contract_id = contract_id
        self.diagnostics = sorted(diagnostics, key=lambda d: d.sort_key())
        self.extra_keyword_matches.add(contract_id)
        self.add_marker(pytest.mark.contract(contract_id, id=contract_id))
        self.add_marker(pytest.mark.ship_blocking)

    def runtest(self) -> None:
        n = len(self.diagnostics)
        lines = [f"INVALID contract {self.contract_id}: {n} error{'s' if n != 1 else ''}; none of its falsifiers ran"]
        lines += [d.format(hint=True) for d in self.diagnostics]
        raise InvalidContract("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, ContractFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        line = self.diagnostics[0].line if self.diagnostics else 1
        return self.path, max(line, 1) - 1, f"{self.contract_id} (invalid contract)"


def new_artifact_dir(node: pytest.Item, factory: pytest.TempPathFactory, suffix: str = "") -> Path:
    label = getattr(node, "label", node.name)
    return factory.mktemp(safe_name(f"pv-{label}{suffix}"), numbered=True)


def property_runner(node: pytest.Item) -> PropertyRunner:
    """A :class:`pv.hypothesis_support.PropertyRunner` with the falsifier's ``hypothesis:`` settings."""

    falsifier = getattr(node, "falsifier", None)
    if falsifier is None:
        return PropertyRunner()
    return PropertyRunner(settings=PropertySettings.from_model(falsifier.hypothesis), examples=list(falsifier.examples))


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    return _SAFE_NAME.sub("_", text)[:80]
