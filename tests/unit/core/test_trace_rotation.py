"""Trace files: size-capped rotation, retention, runs, and reading or replaying what is kept.

Every file starts with a header (the run's id and which file of it this is), so the reader
knows a run whose beginning retention deleted, ``trace show`` says so, and replay replays
only what it can (the actors that started within the kept files) instead of diverging.
"""

from __future__ import annotations

import json
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from actors.app.tools import trace_cli
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.core.trace.writer import TraceWriter
from actors.kubelet.trace import KubeletWorld
from tests.traces.scenarios import RecordedNode, pod

WORLD = KubeletWorld()


def headers(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(f.read_text().split("\n", 1)[0])
            for f in sorted(directory.glob("trace-*.jsonl"))]


def write(directory: Path, records: int, max_bytes: int = 4096, max_files: int = 3) -> TraceWriter:
    writer = TraceWriter(directory, max_bytes=max_bytes, max_files=max_files,
                         config={"node": {"node_name": "n"}})
    for n in range(records):
        writer.decision("supervisor", "restart", {"n": n, "pad": "x" * 100})
    writer.close()
    return writer


def test_files_rotate_at_the_size_and_the_oldest_go_past_retention(tmp_path: Path) -> None:
    writer = write(tmp_path, 400)
    files = sorted(tmp_path.glob("trace-*.jsonl"))
    assert len(files) == 3  # many more were written: the oldest were deleted
    assert files[-1].name != "trace-000003.jsonl"
    for file in files[:-1]:  # a full file ends at the first record past the size
        assert 4096 <= file.stat().st_size < 4096 + 400
    found = headers(tmp_path)
    assert all(h["k"] == "header" and h["run"] == writer.run for h in found)
    parts = [h["part"] for h in found]
    assert parts == list(range(parts[0], parts[0] + 3)) and parts[0] > 1
    assert all(h["config"] == {"node": {"node_name": "n"}} for h in found)


def test_a_second_run_on_the_same_directory_is_a_new_run(tmp_path: Path) -> None:
    first = write(tmp_path, 10, max_files=10)
    second = write(tmp_path, 10, max_files=10)
    assert [(h["run"], h["part"]) for h in headers(tmp_path)] == [(first.run, 1),
                                                                  (second.run, 1)]
    trace = read_trace(tmp_path)
    runs = trace.runs()
    assert [len(r.records) for r in runs] == [10, 10]
    assert not any(r.begins_mid_run for r in runs)
    assert any("2 runs" in note for note in trace.notes())


def test_the_reader_says_when_a_run_begins_after_deleted_files(tmp_path: Path) -> None:
    write(tmp_path, 400)
    trace = read_trace(tmp_path)
    assert trace.begins_mid_run
    first = sorted(tmp_path.glob("trace-*.jsonl"))[0]
    [note] = trace.notes()
    assert first.name in note and "deleted (--trace-max-files)" in note


@pytest.mark.parametrize(("flag", "given", "field", "value", "default", "bad", "rule"), [
    ("--trace-max-files", "7", "trace_max_files", 7, 50, "0", "must be at least 1"),
    ("--trace-flush-frequency", "1s", "trace_flush_frequency", 1.0, 5.0, "0s",
     "must be greater than 0"),
])
def test_retention_and_flush_frequency_are_flags(
        tmp_path: Path, flag: str, given: str, field: str, value: object, default: object,
        bad: str, rule: str) -> None:
    from actors.app.config.flags import parse_flags
    from runtime.errors import ConfigError

    base = ["--pod-manifest-path", str(tmp_path)]
    assert getattr(parse_flags([*base, flag, given]), field) == value
    assert getattr(parse_flags(base), field) == default
    with pytest.raises(ConfigError, match=f"{flag} {bad}: {rule}"):
        parse_flags([*base, flag, bad])


def test_the_header_states_how_long_a_record_may_have_waited(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "trace", write_every=1.0)
    writer.close()
    assert read_trace(tmp_path / "trace").header["write_every"] == 1.0


def test_a_trace_is_readable_by_its_owner_alone(tmp_path: Path) -> None:
    # It holds what the API server answered (Secret data, service account tokens).
    writer = TraceWriter(tmp_path / "trace", max_bytes=256)
    for i in range(20):
        writer.input("test", "x" * 64 + str(i))
    writer.close()
    files = sorted((tmp_path / "trace").glob("trace-*.jsonl"))
    assert len(files) > 1
    assert stat.S_IMODE((tmp_path / "trace").stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}


# --- a real kubelet trace, rotated --------------------------------------------------------


@pytest.fixture(scope="module")
def rotated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubelet run recorded in 4 KiB files: one pod, then (much later) a second one."""
    directory = tmp_path_factory.mktemp("rotated") / "trace"
    scratch = Path(tempfile.mkdtemp(prefix="rotation-"))
    node = RecordedNode(directory, scratch, trace_max_bytes=4096)
    node.writer.max_files = 100_000  # keep all: the tests delete what retention would
    try:
        node.snapshot(pod("u1", "one"))
        node.until("the first pod to run", lambda: len(node.running("u1")) == 1)
        node.advance(10.0)
        node.snapshot(pod("u1", "one"), pod("u2", "two"))
        node.until("the second pod to run", lambda: len(node.running("u2")) == 1)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return directory


def test_a_rotated_trace_replays_whole(rotated: Path) -> None:
    trace = read_trace(rotated)
    assert len(trace.files) > 3 and not trace.begins_mid_run
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)
    assert {"pod/u1", "pod/u2", "supervisor", "status"} <= report.actors


def _without_files_before_spawn_of(source: Path, target: Path, actor: str) -> Path:
    """A copy of ``source`` with every file before the one that spawns ``actor`` deleted,
    as retention would have done."""
    files = sorted(source.glob("trace-*.jsonl"))
    spawning = next(i for i, f in enumerate(files) if f'"k":"spawn","actor":"{actor}"'
                    in f.read_text())
    assert spawning > 0
    target.mkdir()
    for file in files[spawning:]:
        shutil.copy(file, target / file.name)
    return target


def test_a_run_whose_beginning_was_deleted_replays_what_started_later(
        rotated: Path, tmp_path: Path) -> None:
    kept = _without_files_before_spawn_of(rotated, tmp_path / "kept", "pod/u2")
    trace = read_trace(kept)
    assert trace.begins_mid_run
    report = replay(trace, WORLD)
    text = format_report(report)
    assert report.ok, text  # never a divergence the code did not make
    assert "pod/u2" in report.actors
    assert "supervisor" in report.before_start and "pod/u1" not in report.actors
    assert "started before the first kept trace file" in text
    assert "were deleted (--trace-max-files)" in text


def test_trace_show_on_a_rotated_directory_says_what_is_missing(
        rotated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert trace_cli.main(["show", str(rotated), "--pod", "two", "--limit", "5"]) == 0
    whole = capsys.readouterr().out
    assert "trace " in whole and "deleted" not in whole
    kept = _without_files_before_spawn_of(rotated, tmp_path / "kept", "pod/u2")
    assert trace_cli.main(["show", str(kept), "--pod", "two", "--limit", "5"]) == 0
    shown = capsys.readouterr().out
    assert "note: " in shown and "deleted (--trace-max-files)" in shown
    assert "UpdatePod" in shown


def test_two_runs_in_one_directory_replay_each_on_its_own(tmp_path: Path) -> None:
    directory = tmp_path / "trace"
    for uid in ("u1", "u2"):
        scratch = Path(tempfile.mkdtemp(prefix="runs-"))
        node = RecordedNode(directory, scratch)
        try:
            node.snapshot(pod(uid, uid))
            node.until("the pod to run",
                       lambda uid=uid, node=node: len(node.running(uid)) == 1)
        finally:
            node.close()
            shutil.rmtree(scratch, ignore_errors=True)
    report = replay(read_trace(directory), WORLD)
    text = format_report(report)
    assert report.ok, text
    assert {"pod/u1", "pod/u2"} <= report.actors
    assert "run 1 of 2" in text and "run 2 of 2" in text
