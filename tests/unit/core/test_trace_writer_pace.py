"""When the trace writer writes: its two paces and its sleep.

A record is in the file within WRITE_IDLE of its making, within WRITE_WITHIN while records
keep coming (a hook that finds WRITE_BATCH of them waiting and the oldest that old wakes
the writer), and an idle writer sleeps until a record comes. Each test makes one pace
unreachable (60 s) so only the path it pins can write the records within its deadline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.core.trace import writer as trace_writer
from actors.core.trace.reader import read_trace
from actors.core.trace.writer import TraceWriter
from tests.helpers import wait_for

NEVER = 60.0
"""A pace no test waits for."""


def written(directory: Path) -> int:
    files = sorted(directory.glob("trace-*.jsonl"))  # none until the writer opens one
    return len(read_trace(directory).records) if files else 0


def test_records_that_keep_coming_are_written_when_the_oldest_is_write_within_old(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_writer, "WRITE_IDLE", NEVER)
    monkeypatch.setattr(trace_writer, "WRITE_WITHIN", 0.05)
    monkeypatch.setattr(trace_writer, "WRITE_BATCH", 4)
    writer = TraceWriter(tmp_path)
    made = 0

    def one_more_and_any_written() -> bool:
        nonlocal made
        made += 1
        writer.spawn(f"actor/{made}", 0)
        return written(tmp_path) > 0

    try:
        wait_for(one_more_and_any_written, 10.0, "records written while they keep coming",
                 interval=0.01)
    finally:
        writer.close()
    assert written(tmp_path) == made


def test_a_few_records_are_written_within_write_idle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_writer, "WRITE_IDLE", 0.1)
    monkeypatch.setattr(trace_writer, "WRITE_WITHIN", NEVER)
    writer = TraceWriter(tmp_path)
    try:
        for n in range(3):  # fewer than WRITE_BATCH: the writer's own timed wake writes them
            writer.spawn(f"actor/{n}", 0)
        wait_for(lambda: written(tmp_path) == 3, 10.0, "the three records in the file")
        wait_for(lambda: writer._idle, 10.0, "the writer asleep, nothing left to write")
    finally:
        writer.close()


def test_a_burst_below_write_batch_does_not_wake_the_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_writer, "WRITE_IDLE", NEVER)
    monkeypatch.setattr(trace_writer, "WRITE_WITHIN", 0.0)
    writer = TraceWriter(tmp_path)
    try:
        for n in range(trace_writer.WRITE_BATCH - 1):
            writer.spawn(f"actor/{n}", 0)
        assert not writer._due  # fewer than WRITE_BATCH: not busy, however old
        writer.spawn("actor/last", 0)  # the WRITE_BATCH-th wakes the writer
        wait_for(lambda: written(tmp_path) == trace_writer.WRITE_BATCH, 10.0,
                 "the burst in the file")
    finally:
        writer.close()
