"""Reading a log across its rotated files (beyond upstream, which reads the current file
only): real files as the rotator names them (``0.log.<YYYYMMDD-hhmmss>``, the older ones
gzip-compressed to ``.gz``) with CRI records; tail, since, limit and the previous
instance's log come back from them, oldest first, even when the current file is empty
right after a rotation or not there yet (the runtime has not reopened it); a tail or a
since that the newer files answer leaves the older ones unread; a rotation racing with
the opening of the files neither loses nor repeats a line; a follow still goes on in
the new file after a rotation."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.kuberuntime import log_reader
from runtime.kuberuntime.log_reader import open_logs, read_log
from runtime.kuberuntime.log_rotator import compress_log
from runtime.kuberuntime.logs import LogOptions, parse_timestamp

GZ = "0.log.20261122-080000.gz"
PLAIN = "0.log.20261122-090000"
_EPOCH = parse_timestamp(b"2026-11-22T10:00:00Z")
assert _EPOCH is not None
EPOCH: int = _EPOCH


def _record(i: int, stream: str = "stdout", tag: str = "F") -> bytes:
    """Line ``i`` written ``i`` seconds after EPOCH."""
    return f"2026-11-22T10:00:{i:02d}.000000001Z {stream} {tag} line{i}\n".encode()


def _lines(*numbers: int) -> bytes:
    return b"".join(f"line{i}\n".encode() for i in numbers)


def _ns(i: int) -> int:
    """The time of line ``i``."""
    return EPOCH + i * 1_000_000_000 + 1


def _write(path: Path, first: int, last: int, compressed: bool = False) -> None:
    """Lines first..last in ``path``, its modification time that of its last line (as
    a rotated file's is: its last write)."""
    data = b"".join(_record(i) for i in range(first, last + 1))
    path.write_bytes(gzip.compress(data) if compressed else data)
    os.utime(path, ns=(_ns(last), _ns(last)))


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Lines 0-2 in a compressed rotated file, 3-5 in the newest rotated one, and an
    empty current file: the log was just rotated."""
    _write(tmp_path / GZ, 0, 2, compressed=True)
    _write(tmp_path / PLAIN, 3, 5)
    (tmp_path / "0.log").write_bytes(b"")
    return tmp_path / "0.log"


def _read(path: Path, **options: object) -> bytes:
    return b"".join(read_log(str(path), LogOptions(**options)))  # type: ignore[arg-type]


def _corrupt(path: Path) -> None:
    """A ``.gz`` that fails the moment it is decompressed: a read that touches it fails."""
    path.write_bytes(b"not gzip at all")


@pytest.mark.parametrize(("options", "expected"), [
    ({"tail_lines": 1}, _lines(5)),  # the last line written, though the current is empty
    ({"tail_lines": 3}, _lines(3, 4, 5)),
    ({"tail_lines": 4}, _lines(2, 3, 4, 5)),  # into the compressed file
    ({"tail_lines": 100}, _lines(0, 1, 2, 3, 4, 5)),
    ({"tail_lines": 0}, b""),
    ({}, _lines(0, 1, 2, 3, 4, 5)),  # the whole log, oldest first
    ({"since_ns": _ns(4)}, _lines(4, 5)),
    ({"since_ns": _ns(1)}, _lines(1, 2, 3, 4, 5)),
    ({"since_ns": _ns(9)}, b""),
    ({"limit_bytes": 15}, b"line0\nline1\nlin"),
    ({"limit_bytes": 21}, b"line0\nline1\nline2\nlin"),  # across files
    ({"tail_lines": 2, "limit_bytes": 8}, b"line4\nli"),
    ({"tail_lines": 3, "since_ns": _ns(4)}, _lines(4, 5)),
])
def test_options_read_across_rotated_files(log: Path, options: dict[str, object],
                                           expected: bytes) -> None:
    assert _read(log, **options) == expected


def test_the_current_file_comes_last(log: Path) -> None:
    log.write_bytes(_record(6) + _record(7))
    assert _read(log, tail_lines=3) == _lines(5, 6, 7)
    assert _read(log) == _lines(0, 1, 2, 3, 4, 5, 6, 7)
    assert _read(log, since_ns=_ns(5)) == _lines(5, 6, 7)


def test_no_current_file_between_the_rename_and_the_reopen(log: Path) -> None:
    """The runtime has not made its new file yet: the rotated ones are the log."""
    log.unlink()
    assert _read(log, tail_lines=1) == _lines(5)
    assert _read(log, since_ns=_ns(2)) == _lines(2, 3, 4, 5)


def test_no_file_at_all_is_the_current_files_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_log(str(tmp_path / "0.log"), LogOptions())


def test_a_tail_the_current_file_answers_reads_no_older_file(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted back from the newest file: neither the compressed file is decompressed
    nor the newest rotated one read when the current file holds the lines."""
    _corrupt(log.parent / GZ)
    log.write_bytes(_record(6) + _record(7))
    looked_into: list[str] = []
    seekable = log_reader.LogFile.seekable

    def recorded(self: log_reader.LogFile) -> object:
        looked_into.append(os.path.basename(self.name))
        return seekable(self)

    monkeypatch.setattr(log_reader.LogFile, "seekable", recorded)
    assert _read(log, tail_lines=1) == _lines(7)
    assert looked_into == ["0.log"]
    # Exactly the lines asked for: the older file's last record says whether the first
    # of them began there (a P record); that is read from its end, nothing before it.
    looked_into.clear()
    assert _read(log, tail_lines=2) == _lines(6, 7)
    assert looked_into == ["0.log", PLAIN]


def test_a_tail_into_the_newest_rotated_file_leaves_the_compressed_one(log: Path) -> None:
    _corrupt(log.parent / GZ)
    assert _read(log, tail_lines=2) == _lines(4, 5)
    with pytest.raises(gzip.BadGzipFile):  # the check itself: it is read when needed
        _read(log, tail_lines=4)


def test_since_skips_the_files_written_before_it(log: Path) -> None:
    """A rotated file last modified (well) before the time holds nothing for it."""
    _corrupt(log.parent / GZ)
    os.utime(log.parent / GZ, ns=(_ns(2), _ns(2)))
    assert _read(log, since_ns=_ns(4)) == _lines(4, 5)


def test_since_reads_a_file_modified_within_the_slack(log: Path) -> None:
    """Its last record may carry a time a little after the file's modification time
    (the kernel's coarse clock): a file modified just before ``since`` is read."""
    gz = log.parent / GZ
    gz.write_bytes(gzip.compress(_record(0) + _record(4)))  # line4's time, written "at" 3.5
    os.utime(gz, ns=(_ns(4) - 500_000_000, _ns(4) - 500_000_000))
    (log.parent / PLAIN).write_bytes(_record(5))
    assert _read(log, since_ns=_ns(4)) == _lines(4, 5)


def test_limit_bytes_stops_before_the_later_files(log: Path) -> None:
    (log.parent / "0.log.20261122-070000.gz").write_bytes(gzip.compress(_record(9)))
    _corrupt(log.parent / GZ)
    assert _read(log, limit_bytes=4) == b"line"


def test_a_line_split_across_a_rotation_counts_once(log: Path) -> None:
    """P records at the end of a rotated file, its F record in the next: one line."""
    _write(log.parent / PLAIN, 3, 4)
    with (log.parent / PLAIN).open("ab") as f:
        f.write(_record(5, tag="P"))
    log.write_bytes(_record(6) + _record(7))
    assert _read(log, tail_lines=2) == b"line5line6\nline7\n"
    assert _read(log, tail_lines=1) == b"line7\n"
    assert _read(log, tail_lines=3, timestamps=True) == (
        b"2026-11-22T10:00:04.000000001Z line4\n"
        b"2026-11-22T10:00:05.000000001Z line5line6\n"
        b"2026-11-22T10:00:07.000000001Z line7\n")


def test_a_tail_reads_back_block_by_block(tmp_path: Path) -> None:
    """Far more than one block of records in each file."""
    many = 20000
    plain = tmp_path / PLAIN
    plain.write_bytes(b"".join(_record(i % 60) for i in range(many)))
    log = tmp_path / "0.log"
    log.write_bytes(_record(1) * 3)
    every = [i % 60 for i in range(many)] + [1, 1, 1]
    assert _read(log, tail_lines=many - 1) == _lines(*every[-(many - 1):])
    assert _read(log, tail_lines=many + 3) == _lines(*every)


def test_the_previous_instance_is_read_across_its_own_rotated_files(log: Path) -> None:
    """The previous instance's log (``0.log``) beside the running one's (``1.log``,
    rotated too): each is read with its own files only."""
    (log.parent / "1.log.20261122-110000").write_bytes(_record(40))
    (log.parent / "1.log").write_bytes(_record(41))
    assert _read(log, tail_lines=1) == _lines(5)
    assert _read(log.parent / "1.log", tail_lines=2) == _lines(40, 41)
    assert _read(log.parent / "1.log") == _lines(40, 41)


def _rotate(directory: Path, line: int) -> None:
    """A rotation as the rotator does it: the newest rotated file compressed, the
    current renamed, a new current made (the runtime's reopen) holding ``line``."""
    compress_log(str(directory / PLAIN))
    os.rename(directory / "0.log", directory / "0.log.20261122-100000")
    (directory / "0.log").write_bytes(_record(line))


@pytest.mark.parametrize("when", [1, 2])
def test_a_rotation_while_the_files_are_opened_loses_and_repeats_nothing(
        log: Path, monkeypatch: pytest.MonkeyPatch, when: int) -> None:
    """The files listed, then a rotation before (1) or after (2) they are opened: the
    listings differ, so they are listed and opened again; every line comes once."""
    log.write_bytes(_record(6))
    real = log_reader._log_files
    calls = 0

    def racing(path: str) -> tuple[str, ...]:
        nonlocal calls
        names = real(path)
        calls += 1
        if calls == 1 and when == 1:
            _rotate(log.parent, 7)
        return names

    opened = log_reader.LogFile.__init__

    def open_then_rotate(self: log_reader.LogFile, name: str) -> None:
        opened(self, name)
        if when == 2 and calls == 1 and name.endswith(PLAIN):
            _rotate(log.parent, 7)

    monkeypatch.setattr(log_reader, "_log_files", racing)
    monkeypatch.setattr(log_reader.LogFile, "__init__", open_then_rotate)
    assert _read(log) == _lines(0, 1, 2, 3, 4, 5, 6, 7)
    assert calls >= 3  # listed, re-checked, listed again


def test_a_log_that_keeps_rotating_is_an_error(log: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lists = iter(range(100))
    real = log_reader._log_files
    monkeypatch.setattr(log_reader, "_log_files",
                        lambda path: (*real(path), f"{path}.{next(lists)}"))
    with pytest.raises(OSError, match="kept rotating"):
        open_logs(str(log))


def test_the_files_opened_are_closed(log: Path) -> None:
    chunks = read_log(str(log), LogOptions(tail_lines=4))
    assert next(chunks)
    fds = os.listdir("/proc/self/fd")
    chunks.close()  # type: ignore[attr-defined]
    assert len(os.listdir("/proc/self/fd")) <= len(fds) - 3


class _Writer:
    """Stands in for the container and the runtime: each ask whether it runs does the
    next step (write to the current file, rotate), until none is left."""

    def __init__(self, steps: list[Callable[[], None]]) -> None:
        self.steps = steps

    def running(self) -> bool:
        if not self.steps:
            return False
        self.steps.pop(0)()
        return True


def _append(path: Path, data: bytes) -> Callable[[], None]:
    def write() -> None:
        with path.open("ab") as f:
            f.write(data)
    return write


def _follow(path: Path, options: LogOptions, writer: _Writer) -> bytes:
    ticks = iter(range(1, 1000))
    return b"".join(read_log(str(path), options, writer.running,
                             clock=lambda: float(next(ticks))))


def test_a_follow_after_a_rotation_starts_in_the_rotated_files(log: Path) -> None:
    """tail 1 of a log just rotated, then what the container writes next, across one
    more rotation (the follow itself is upstream's: it goes on in the new file)."""
    writer = _Writer([_append(log, _record(6)), lambda: _rotate(log.parent, 8),
                      _append(log, _record(9))])
    assert _follow(log, LogOptions(follow=True, tail_lines=1), writer) == _lines(5, 6, 8, 9)


def test_a_follow_from_a_missing_current_file_goes_on_in_the_new_one(log: Path) -> None:
    """Begun between the rename and the reopen: it reads the rotated file the runtime
    still writes to, then the new file once it is there."""
    log.unlink()
    writer = _Writer([_append(log.parent / PLAIN, _record(6)),
                      _append(log, _record(7)), _append(log, _record(8))])
    assert _follow(log, LogOptions(follow=True, tail_lines=2), writer) == _lines(4, 5, 6, 7, 8)
