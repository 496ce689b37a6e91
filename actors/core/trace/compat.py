"""Older trace formats, converted to the current one as a trace is read.

A trace file says which format it was written in (its header's ``v``, see
actors.core.trace.writer.TRACE_VERSION). Reading it, the reader hands each file's header
and records to ``CONVERTERS.upgrade``, which runs the converters of every version from the
file's to the current one in turn: version 1's bring it to 2, version 2's to 3, and so on
(as upstream's kubelet keeps its checkpoint formats and converts an old one on load). What
the records mean is the program's business, so a program registers its own converters
(``CONVERTERS.register``, from its trace plug-in); the actors run one behaviour only and
never ask which format a trace was.

A converter changes the shape of what was recorded (a renamed message type, a header key
a start config no longer has), never what the recorded code did: a trace recorded by
other code may still diverge where that code behaved otherwise, and the replay says the
trace was recorded by other code (actors.core.trace.provenance). The header's ``v`` is
left as recorded: it still tells which format the file was written in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from actors.core.trace.writer import TRACE_VERSION

Record = dict[str, Any]
Converter = Callable[[Record, list[Record]], None]
"""(a file's header, its records): brings both, in place, one format version up."""


def recorded_version(header: Record) -> int:
    """The format a file was written in (its header's ``v``; 1 when it has none)."""
    version = header.get("v", 1)
    return version if isinstance(version, int) else 1


class Converters:
    """The converters of each format version, in the order they were registered."""

    def __init__(self) -> None:
        self._steps: dict[int, list[Converter]] = defaultdict(list)

    def register(self, version: int, converter: Converter) -> None:
        """``converter`` brings a file of format ``version`` to ``version + 1``."""
        if not 1 <= version < TRACE_VERSION:
            raise ValueError(f"format {version}: converters go from 1 to {TRACE_VERSION - 1} "
                             f"(format {TRACE_VERSION} is the current one)")
        self._steps[version].append(converter)

    def upgrade(self, header: Record, records: list[Record]) -> None:
        """Bring one file's header and records, in place, to the current format."""
        for version in range(recorded_version(header), TRACE_VERSION):
            for converter in self._steps.get(version, ()):
                converter(header, records)


CONVERTERS = Converters()
"""The process's converters: each plug-in registers its own."""
