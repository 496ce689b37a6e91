"""The cyclic garbage collector during a start: off while the program's modules and its
actor tree are built, back on (with the survivors frozen) once it serves.

A start allocates some 50,000 objects that live as long as the process (modules, classes,
functions, the actors); while they pile up, the collector's generation-2 passes walk all
of them and find next to nothing, about a seventh of the start's CPU. ``bin.main`` turns
the collector off before its first import; ``end_of_start`` turns it back on. Frozen
objects (``gc.freeze``) are left out of every later pass, which the steady state gains
from too.
"""

from __future__ import annotations

import gc


def end_of_start() -> None:
    """The start is over: freeze what it made and collect again from here on.

    Does nothing when the collector is on (a test that calls ``main`` in-process never
    turned it off, and its objects must stay collectable).
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
