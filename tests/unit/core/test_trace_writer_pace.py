"""When the trace writer writes: every ``write_every`` while records wait, else asleep.

A record is in the file within ``write_every`` of its making, however many keep coming (a
hook never wakes a writer that is already timing its next write), and an idle writer
sleeps untimed until a record comes. The tests give the writer a ``write_every`` of a
tenth of a second and wait for its writes for half the default (SOONER): only the timed
wake at the given ``write_every`` writes them in time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actors.core.trace.reader import read_trace
from actors.core.trace.writer import DEFAULT_WRITE_EVERY, TraceWriter
from tests.helpers import wait_for

SOONER = DEFAULT_WRITE_EVERY / 2
"""How long the tests wait for a write: a writer at its default pace would not be done."""


def written(directory: Path) -> int:
    files = sorted(directory.glob("trace-*.jsonl"))  # none until the writer opens one
    return len(read_trace(directory).records) if files else 0


def written_is(directory: Path, count: int) -> Callable[[], bool]:
    return lambda: written(directory) == count


def test_records_that_keep_coming_are_written_every_write_every(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, write_every=0.05)
    made = 0

    def one_more_and_any_written() -> bool:
        nonlocal made
        made += 1
        writer.spawn(f"actor/{made}", 0)
        return written(tmp_path) > 0

    try:
        wait_for(one_more_and_any_written, SOONER, "records written while they keep coming",
                 interval=0.01)
    finally:
        writer.close()
    assert written(tmp_path) == made


def test_a_quiet_spells_first_record_wakes_the_sleeping_writer(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, write_every=0.1)
    try:
        for spell in range(2):  # the writer starts asleep, and is asleep again after each
            for n in range(3):
                writer.spawn(f"actor/{spell}-{n}", 0)
            wait_for(written_is(tmp_path, 3 * (spell + 1)), SOONER,
                     f"spell {spell}'s records in the file")
            wait_for(lambda: writer._idle, 10.0, "the writer asleep, nothing left to write")
    finally:
        writer.close()
