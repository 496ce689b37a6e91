"""/containerLogs?follow=true: what is written while following arrives, then it ends."""

from __future__ import annotations

from pathlib import Path

from runtime.kuberuntime.logs import LogOptions, follow_log


def record(text: str, tag: str = "F", stream: str = "stdout") -> bytes:
    return f"2026-11-22T10:00:00.000000001Z {stream} {tag} {text}\n".encode()


class Writer:
    """Stands in for the container: each wait of the follower appends the next records."""

    def __init__(self, path: Path, batches: list[bytes]) -> None:
        self.path = path
        self.batches = batches
        self.waits = 0

    def sleep(self, _seconds: float) -> None:
        self.waits += 1
        if self.batches:
            with self.path.open("ab") as f:
                f.write(self.batches.pop(0))

    def running(self) -> bool:
        return bool(self.batches)


def test_follow_streams_new_records_until_the_container_stops(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    initial = record("one") + record("two")
    log.write_bytes(initial)
    writer = Writer(log, [record("three"), record("fo", "P") + record("ur")])
    chunks = list(follow_log(str(log), initial, LogOptions(), writer.running,
                             sleep=writer.sleep))
    assert b"".join(chunks) == b"one\ntwo\nthree\nfour\n"
    assert chunks[0] == b"one\ntwo\n"


def test_follow_waits_for_a_torn_record_to_be_whole(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    whole, torn = record("done"), record("half")[:-6]
    log.write_bytes(whole + torn)
    writer = Writer(log, [record("half")[-6:]])
    out = b"".join(follow_log(str(log), whole + torn, LogOptions(), writer.running,
                              sleep=writer.sleep))
    assert out == b"done\nhalf\n"


def test_follow_honours_tail_and_limit_bytes_across_the_stream(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    initial = record("a") + record("b") + record("c")
    log.write_bytes(initial)
    writer = Writer(log, [record("dddd"), record("eeee")])
    out = b"".join(follow_log(str(log), initial, LogOptions(tail_lines=1, limit_bytes=6),
                              writer.running, sleep=writer.sleep))
    assert out == b"c\ndddd"  # the last line, then new output cut at 6 bytes in all


def test_follow_of_a_stopped_container_ends_after_the_log(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    initial = record("last words")
    log.write_bytes(initial)
    out = list(follow_log(str(log), initial, LogOptions(timestamps=True), lambda: False,
                          sleep=lambda _: None))
    assert out == [b"2026-11-22T10:00:00.000000001Z last words\n"]
