"""Pausing Python's cyclic garbage collector while a batch is worked on.

Batch work here (recording a published message, reading a page of the log, folding it
into a read model) allocates tens of thousands of container objects that all live
until the batch is done. With the collector on, each few hundred allocations start a
collection that walks those live objects again, and promotes them into older
generations that are walked again later: measured, 40% of the recorder's CPU and 35%
of a page read (bench/ingest.py, bench/rebuild.py). Reference counting still frees
every batch when it is dropped; only reference cycles wait for the next collection,
which runs as usual once the batch is over.
"""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block.

    Safe across threads: a block that turned the collector off turns it back on when
    it ends, so the collector is on once every block has ended (a block ending while
    another runs only makes the other one slower). Nested blocks do nothing.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
