"""No passes of Python's cyclic garbage collector while a command builds a large tree.

Loading and checking a contract tree allocates hundreds of mostly acyclic objects per file and
keeps them alive to the end, so the collector's passes rescan the same survivors again and again:
on a cold ``pv lint`` of 1,000 contracts, a tenth of the run went to collections that freed
nothing.  Reference counting still frees whatever the tree drops.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def without_gc_passes(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block; the collector is switched back on, if it was, on
    the way out.  ``freeze``: what is alive then is left out of every later collection's scan
    (``gc.freeze``), for a command whose tree lives until the process ends; the first collection
    after the block would otherwise walk all of it.  A frozen object is still freed by reference
    counting; only a cycle among frozen objects waits for ``gc.unfreeze``."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
