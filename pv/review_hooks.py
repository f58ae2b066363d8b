"""pytest's side of the review: ``--pv-changed-since REF`` marks each falsifier the working tree
changes against ``REF`` (its contract entry, its checker and what that imports, the code under test;
:mod:`pv.review.changed`) with ``pv_changed``, so that a pull request runs what it changes,
advisory claims included: ``pytest contracts -m "ship_blocking or pv_changed" --pv-changed-since origin/main``.
"""

from __future__ import annotations

import pytest

MARKER = "pv_changed"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pv", "pv contract falsification")
    group.addoption(
        "--pv-changed-since",
        default=None,
        metavar="REF",
        help=f"mark the falsifiers the working tree changes against git REF with `{MARKER}` "
        f'(select them with -m "ship_blocking or {MARKER}")',
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a falsifier the change touches (--pv-changed-since REF)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marker must be there when it is read
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    base = config.getoption("--pv-changed-since")
    if not base:
        return
    # the review's modules (git, the code scope) load only when the option is given
    from pv.collect import FalsifierItem
    from pv.git import GitError
    from pv.project import Project
    from pv.review.changed import changed_falsifiers

    try:
        found = changed_falsifiers(Project.open(config.rootpath), base)
    except GitError as exc:
        raise pytest.UsageError(f"--pv-changed-since {base}: {exc}") from None
    wanted = {(c.contract_id, c.falsifier_id) for c in found}
    for item in items:
        if isinstance(item, FalsifierItem) and (item.contract.contract_id, item.falsifier.id) in wanted:
            item.add_marker(MARKER)
