"""The statement's predicate is JSON data whatever Python values the bundle holds: a tuple a
checker observed is a list there, as it is in bundle.json."""

from __future__ import annotations

from pv.bundle import intoto
from pv.bundle.model import FalsifierEntry, MutantEntry
from tests.pv.bundle.test_intoto_statement import _bundle


def test_a_tuple_in_the_bundle_is_a_list_in_the_predicate() -> None:
    entry = FalsifierEntry(
        id="F-1",
        ship_blocking=True,
        selected=True,
        verdict="survived",
        observations={"pair": (1, 2)},
        mutant=MutantEntry(declared=None, verdict=None),
    )
    bundle = _bundle().model_copy(update={"falsifiers": [entry]})
    predicate = intoto.statement(bundle)["predicate"]
    assert predicate["falsifiers"][0]["observations"] == {"pair": [1, 2]}
