"""The CRI log reader, with upstream's tables (pkg/kubelet/kuberuntime/logs/logs_test.go:
TestReadLogs, TestParseLog, TestWriteLogs, TestWriteLogsWithBytesLimit,
TestReadLogsLimitsWithTimestamps, TestReadRotatedLog) ported to the CRI format this
kubelet reads (upstream's docker-JSON rows have no counterpart: containerd writes CRI)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.kuberuntime.log_reader import open_log, read_log, rotated_logs
from runtime.kuberuntime.logs import (
    LogOptions,
    LogRenderer,
    Record,
    format_timestamp,
    parse_record,
    parse_timestamp,
    render_logs,
)

THREE_LINES = (
    b"2020-09-27T11:18:01.00000000Z stdout F line1\n"
    b"2020-09-27T11:18:02.00000000Z stdout F line2\n"
    b"2020-09-27T11:18:03.00000000Z stdout F line3\n"
)


def _ns(text: str) -> int:
    value = parse_timestamp(text.encode())
    assert value is not None
    return value


@pytest.mark.parametrize(("options", "expected"), [
    (LogOptions(), "line1\nline2\nline3\n"),  # default options: all lines
    (LogOptions(tail_lines=2), "line2\nline3\n"),
    (LogOptions(tail_lines=4), "line1\nline2\nline3\n"),  # fewer lines than asked
    (LogOptions(tail_lines=0), ""),
    (LogOptions(limit_bytes=9), "line1\nlin"),
    (LogOptions(limit_bytes=100), "line1\nline2\nline3\n"),
    (LogOptions(since_ns=_ns("2020-09-27T11:18:02Z")), "line2\nline3\n"),  # on or after
    (LogOptions(since_ns=_ns("2030-01-01T00:00:00Z")), ""),  # since now: nothing
    (LogOptions(follow=True), "line1\nline2\nline3\n"),
    (LogOptions(follow=True, tail_lines=2), "line2\nline3\n"),
    (LogOptions(follow=True, since_ns=_ns("2020-09-27T11:18:02Z")), "line2\nline3\n"),
])
def test_read_logs(tmp_path: Path, options: LogOptions, expected: str) -> None:
    """TestReadLogs; a followed container has exited, so the follow ends at the end."""
    log = tmp_path / "0.log"
    log.write_bytes(THREE_LINES)
    out = b"".join(read_log(str(log), options, running=lambda: False))
    assert out.decode() == expected


@pytest.mark.parametrize(("line", "record"), [
    (b"2016-10-20T18:39:20.57606443Z stdout F cri stdout test log",
     Record(b"2016-10-20T18:39:20.57606443Z", b"stdout", True, b"cri stdout test log")),
    (b"2016-10-20T18:39:20.57606443Z stderr F cri stderr test log",
     Record(b"2016-10-20T18:39:20.57606443Z", b"stderr", True, b"cri stderr test log")),
    (b"unsupported log format test log", None),
    (b"2016-10-20T18:39:20.57606443Z stdout P cri stdout partial test log",
     Record(b"2016-10-20T18:39:20.57606443Z", b"stdout", False,
            b"cri stdout partial test log")),
    (b"2016-10-20T18:39:20.57606443Z stdout P:TAG1:TAG2 cri stdout partial test log",
     Record(b"2016-10-20T18:39:20.57606443Z", b"stdout", False,
            b"cri stdout partial test log")),
    (b"2016-10-20T18:39:20.57606443Z console F other stream", None),
    (b"yesterday stdout F not a time", None),
    (b"2016-10-20T18:39:20Z stdout F", None),  # no delimiter after the tag
])
def test_parse_log(line: bytes, record: Record | None) -> None:
    """TestParseLog (the CRI rows)."""
    assert parse_record(line) == record


TIME = b"1970-01-01T00:20:34.00004321Z"  # time.Unix(1234, 43210)
FIXED = b"1970-01-01T00:20:34.000043210Z"


@pytest.mark.parametrize(("stream", "options", "expected"), [
    ("stderr", LogOptions(), b"abcdefg\n"),
    ("stdout", LogOptions(), b"abcdefg\n"),
    ("stdout", LogOptions(since_ns=_ns(TIME.decode()) + 1_000_000_000), b""),
    ("stderr", LogOptions(timestamps=True), FIXED + b" abcdefg\n"),
    ("stderr", LogOptions(stream="Stdout"), b""),
    ("stderr", LogOptions(stream="Stderr"), b"abcdefg\n"),
])
def test_write_logs(stream: str, options: LogOptions, expected: bytes) -> None:
    """TestWriteLogs, and the split streams of the newer API."""
    record = TIME + b" " + stream.encode() + b" F abcdefg\n"
    assert LogRenderer(options).feed(record) == expected


LINE = b"abcdefg\n"


@pytest.mark.parametrize(("stdout_lines", "stderr_lines", "limit", "timestamps", "expected"), [
    (3, 0, 3, False, b"abc"),  # less than one line
    (3, 0, len(LINE) + 3, False, b"abcdefg\nabc"),  # across lines
    (3, 0, 3 * len(LINE), False, b"abcdefg\nabcdefg\nabcdefg\n"),  # more than all lines
    (0, 3, len(LINE) + 3, False, b"abcdefg\nabc"),  # stderr
    (1, 2, len(LINE) + 3, False, b"abcdefg\nabc"),  # both streams, stdout first
    (3, 0, len(FIXED) + 1 + len(LINE) + 2, True, FIXED + b" " + LINE + FIXED[:2]),
])
def test_write_logs_with_bytes_limit(stdout_lines: int, stderr_lines: int, limit: int,
                                     timestamps: bool, expected: bytes) -> None:
    """TestWriteLogsWithBytesLimit, one record at a time as upstream's writer gets them."""
    renderer = LogRenderer(LogOptions(limit_bytes=limit, timestamps=timestamps))
    records = [TIME + b" stdout F abcdefg\n"] * stdout_lines + [
        TIME + b" stderr F abcdefg\n"] * stderr_lines
    out = b"".join(renderer.feed(r) for r in records)
    assert out == expected


def test_read_logs_limits_with_timestamps(tmp_path: Path) -> None:
    """TestReadLogsLimitsWithTimestamps: two lines of 10000 P records each; with
    timestamps, one time in front of each line, each line ending with 9999."""
    record = "2022-10-29T16:10:22.592603036-05:00 stdout P {}\n"
    newline = "2022-10-29T16:10:22.592603036-05:00 stdout F \n"
    text = ("".join(record.format(i) for i in range(10000)) + newline) * 2
    log = tmp_path / "log.txt"
    log.write_text(text)
    out = b"".join(read_log(str(log), LogOptions(timestamps=True)))
    lines = out.splitlines()
    assert len(lines) == 2
    for line in lines:
        stamp, _, rest = line.partition(b" ")
        assert stamp == b"2022-10-29T16:10:22.592603036-05:00"
        assert rest.endswith(b"9999")


def test_tail_counts_whole_lines(tmp_path: Path) -> None:
    """A line split in P records counts once (upstream counts records)."""
    data = (b"2024-05-01T10:00:00Z stdout F one\n"
            b"2024-05-01T10:00:01Z stdout P tw\n"
            b"2024-05-01T10:00:02Z stdout F o\n"
            b"2024-05-01T10:00:03Z stdout F three\n")
    assert render_logs(data, LogOptions(tail_lines=2)) == b"two\nthree\n"
    log = tmp_path / "0.log"
    log.write_bytes(data * 5000)  # tail reads back block by block
    assert b"".join(read_log(str(log), LogOptions(tail_lines=2))) == b"two\nthree\n"


def test_timestamps_format() -> None:
    assert format_timestamp(b"2024-05-01T10:00:00.12+02:00") == (
        b"2024-05-01T10:00:00.120000000+02:00")
    assert format_timestamp(b"2024-05-01T10:00:00+00:00") == b"2024-05-01T10:00:00.000000000Z"
    assert parse_timestamp(b"2024-05-01T12:00:00+02:00") == parse_timestamp(
        b"2024-05-01T10:00:00Z")
    assert parse_timestamp(b"2024-13-01T10:00:00Z") is None


def test_content_that_looks_like_a_record_is_content() -> None:
    """A container printing CRI records (cat of a log) keeps them: the fast path sees the
    count does not add up and the per-record path decides."""
    inner = b"2024-05-01T10:00:00Z stdout F inner"
    data = b"2024-05-01T10:00:01Z stdout F " + inner + b"\n"
    assert LogRenderer(LogOptions(follow=True)).feed(data) == inner + b"\n"


class _Container:
    """Stands in for the container and the runtime: each ask whether it runs writes
    the next batch (a callable may rotate the log), until none is left."""

    def __init__(self, batches: list[bytes | Callable[[], None]], path: Path) -> None:
        self.batches = batches
        self.path = path

    def running(self) -> bool:
        if not self.batches:
            return False
        batch = self.batches.pop(0)
        if callable(batch):
            batch()
        else:
            with self.path.open("ab") as f:
                f.write(batch)
        return True


class _Clock:
    """Each read a second later: every end of file asks whether the container runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _record(i: int, stream: str = "stdout", tag: str = "F") -> bytes:
    return f"2026-11-22T10:00:00.{i:09d}Z {stream} {tag} line{i}\n".encode()


def test_read_rotated_log(tmp_path: Path) -> None:
    """TestReadRotatedLog: a follow goes on in the new file after a rotation, and what
    the runtime wrote to the renamed file before reopening is not lost."""
    log = tmp_path / "0.log"
    log.write_bytes(_record(0))
    old = log.open("ab")

    def rotate() -> None:
        os.rename(log, tmp_path / "0.log.20261122-100000")
        old.write(_record(4))  # the runtime writes on until it reopens the log
        old.close()
        log.write_bytes(_record(5, "stderr"))

    container = _Container([_record(1), _record(2, "stderr") + _record(3), rotate,
                            _record(6), _record(7, "stdout", "P"), _record(8)], log)
    out = b"".join(read_log(str(log), LogOptions(follow=True), container.running,
                            clock=_Clock()))
    assert out == b"line0\nline1\nline2\nline3\nline4\nline5\nline6\nline7line8\n"


def test_follow_with_limit_and_tail(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(_record(0) + _record(1))
    container = _Container([_record(2), _record(3)], log)
    out = b"".join(read_log(str(log), LogOptions(follow=True, tail_lines=1, limit_bytes=12),
                            container.running, clock=_Clock()))
    assert out == b"line1\nline2\n"


def test_follow_holds_a_torn_record_until_it_is_whole(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    whole = _record(0)
    log.write_bytes(whole + _record(1)[:10])
    container = _Container([_record(1)[10:]], log)
    out = list(read_log(str(log), LogOptions(follow=True), container.running, clock=_Clock()))
    assert out == [b"line0\n", b"line1\n"]


def test_follow_stops_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(_record(0))
    out = b"".join(read_log(str(log), LogOptions(follow=True), lambda: True,
                            stop=lambda: True, clock=_Clock()))
    assert out == b"line0\n"


def test_rotated_logs_in_order_and_gzip(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(_record(2))
    (tmp_path / "0.log.20261122-090000.gz").write_bytes(gzip.compress(_record(0)))
    (tmp_path / "0.log.20261122-100000").write_bytes(_record(1))
    (tmp_path / "1.log").write_bytes(b"")
    files = rotated_logs(str(log))
    assert [Path(f).name for f in files] == ["0.log.20261122-090000.gz", "0.log.20261122-100000"]
    data = b""
    for name in (*files, str(log)):
        with open_log(name) as log_file:
            data += log_file.read()
    assert render_logs(data, LogOptions()) == b"line0\nline1\nline2\n"
