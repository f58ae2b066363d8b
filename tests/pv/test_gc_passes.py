"""The collector is off inside the block and back as it was after it, nested blocks included; a
freezing block leaves what was alive out of later scans."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pv.gc_passes import without_gc_passes


def scanned(objects: list[object]) -> list[bool]:
    """Whether each object is still in the collector's generations; a frozen one is not.  (The
    freeze count is no measure: frozen objects freed by reference counting lower it at any time.)"""
    ids = {id(o) for o in gc.get_objects()}
    return [id(o) in ids for o in objects]


@pytest.fixture
def collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector")
@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_as_it_was_after(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    alive = [[]]  # a list: always tracked by the collector
    with without_gc_passes():
        assert not gc.isenabled()
        with without_gc_passes():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner block does not switch it on under an outer one
    assert gc.isenabled() is enabled
    assert scanned(alive) == [True]  # a block that does not freeze leaves it to later scans


@pytest.mark.usefixtures("collector")
def test_a_freezing_block_leaves_what_is_alive_out_of_later_scans() -> None:
    gc.enable()
    with without_gc_passes(freeze=True):
        tree = [[i] for i in range(1000)]  # lists: always tracked by the collector
    assert gc.isenabled() and not any(scanned(tree))
    later = [[]]
    assert scanned([later]) == [True]
    with pytest.raises(RuntimeError), without_gc_passes():
        raise RuntimeError("the block failed")
    assert gc.isenabled()
