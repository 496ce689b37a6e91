"""Upstream's graceful_node_shutdown_state (runtime.nodeshutdown_state): the JSON Go's
encoding/json writes for two time.Time values, in the local time zone, the zero time for
"not yet"; read back; a missing file is the zero state, a broken one an error naming it;
written atomically with mode 0644 and no temporary file left."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.errors import ShutdownStateError
from runtime.nodeshutdown_state import (
    ShutdownState,
    ShutdownStateFile,
    go_time,
    load_shutdown_state,
    parse_go_time,
    state_path,
    timestamp,
)

# 2026-12-08T02:49:15.25Z
MOMENT = 1796698155.25


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run in a fixed time zone (restored after)."""
    yield
    monkeypatch.undo()
    time.tzset()


def in_zone(monkeypatch: pytest.MonkeyPatch, tz: str) -> None:
    monkeypatch.setenv("TZ", tz)
    time.tzset()


def test_times_are_written_as_go_writes_them(zone: None, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    in_zone(monkeypatch, "UTC")
    assert go_time(MOMENT) == "2026-12-08T02:49:15.25Z"
    assert go_time(float(int(MOMENT))) == "2026-12-08T02:49:15Z"
    assert go_time(0.0) == "0001-01-01T00:00:00Z"
    in_zone(monkeypatch, "CET-1")
    assert go_time(MOMENT) == "2026-12-08T03:49:15.25+01:00"
    in_zone(monkeypatch, "EST+5")
    assert go_time(MOMENT) == "2026-12-07T21:49:15.25-05:00"


def test_times_read_back_from_any_offset() -> None:
    assert parse_go_time("2026-12-08T02:49:15.25Z") == MOMENT
    assert parse_go_time("2026-12-07T21:49:15.250000000-05:00") == MOMENT
    assert parse_go_time("0001-01-01T00:00:00Z") == 0.0
    with pytest.raises(ValueError, match="RFC 3339"):
        parse_go_time("yesterday")


def test_the_metric_value_is_whole_seconds() -> None:
    assert timestamp(MOMENT) == 1796698155.0
    assert timestamp(0.0) == 0.0


def test_stored_as_upstream_and_read_back(tmp_path: Path, zone: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    in_zone(monkeypatch, "UTC")
    path = state_path(tmp_path)
    assert path.name == "graceful_node_shutdown_state"
    assert load_shutdown_state(path) == ShutdownState()  # no file yet: the zero state
    sink = ShutdownStateFile(path)
    sink.store(ShutdownState(MOMENT))
    assert json.loads(path.read_text()) == {"startTime": "2026-12-08T02:49:15.25Z",
                                            "endTime": "0001-01-01T00:00:00Z"}
    sink.store(ShutdownState(MOMENT, MOMENT + 20))
    assert path.read_text() == ('{"startTime":"2026-12-08T02:49:15.25Z",'
                                '"endTime":"2026-12-08T02:49:35.25Z"}')
    assert load_shutdown_state(path) == ShutdownState(MOMENT, MOMENT + 20)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graceful_node_shutdown_state"]


def test_a_broken_file_names_itself(tmp_path: Path) -> None:
    path = state_path(tmp_path)
    path.write_text("{not json")
    with pytest.raises(ShutdownStateError, match=str(path)):
        load_shutdown_state(path)
    path.write_text('{"startTime": "soon"}')
    with pytest.raises(ShutdownStateError, match="parsing time 'soon' as RFC 3339"):
        load_shutdown_state(path)


def test_a_store_that_cannot_write_says_where(tmp_path: Path) -> None:
    sink = ShutdownStateFile(tmp_path / "missing" / "graceful_node_shutdown_state")
    with pytest.raises(ShutdownStateError, match="failed to create temp file for atomic "
                                                 "write"):
        sink.store(ShutdownState(MOMENT))
