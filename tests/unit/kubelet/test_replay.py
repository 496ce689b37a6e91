"""Trace replay: recorded runs replay without divergence; changed behaviour is caught."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.core.messages import DeadLetter
from actors.core.trace import replay as replay_cli
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace, read_trace
from actors.core.trace.replay import format_report, replay
from actors.core.trace.stubs import decode_message
from actors.core.trace.writer import TRACE_VERSION
from actors.kubelet import names
from actors.kubelet.messages import UpdatePod
from actors.kubelet.trace import KubeletWorld
from actors.kubelet.tree import ReplayConfig
from runtime.kuberuntime import actions
from runtime.kuberuntime.host_paths import HOST_PATHS_TARGET
from tests.traces.scenarios import HERE, SCENARIOS, restart_and_remove

WORLD = KubeletWorld()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("trace") / "restart-and-remove"
    restart_and_remove(directory)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_fresh_recording_replays_without_divergence(recorded: Path) -> None:
    report = replay(read_trace(recorded), WORLD)
    assert report.ok, format_report(report)
    assert report.replayed > 20
    assert {"supervisor", "pod/u1", "pleg", "status", "runtime-monitor"} <= report.actors
    assert format_report(report).startswith("no divergence: replayed ")


KEPT = sorted(p.name for p in HERE.iterdir() if p.is_dir() and any(p.glob("trace-*.jsonl")))


def test_every_scenario_has_a_kept_trace() -> None:
    assert set(SCENARIOS) <= set(KEPT)


@pytest.mark.parametrize("name", KEPT)
def test_kept_regression_traces_still_replay(name: str) -> None:
    """Recorded runs (scenarios, and real drill runs that once found a replay bug)."""
    report = replay(read_trace(HERE / name), WORLD)
    assert report.ok, format_report(report)


def test_a_changed_restart_decision_is_the_first_divergence(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actions, "should_container_be_restarted", lambda *args: False)
    report = replay(read_trace(recorded), WORLD)
    assert report.divergence is not None
    text = format_report(report)
    assert report.divergence.actor == "pod/u1"
    assert "runtime call" in report.divergence.step
    # The causal chain leads back to the relist that saw the container die.
    assert any("Relisted pleg -> supervisor" in link for link in report.divergence.chain)
    # What was recorded and what was replayed, side by side, field by field.
    assert "  recorded: " in text and "  replayed: " in text
    assert any(line.split("|")[0].strip() == "field" for line in text.splitlines())


def test_until_and_actor_filters(recorded: Path) -> None:
    trace = read_trace(recorded)
    full = replay(trace, WORLD)
    first_ids = sorted(r["id"] for r in trace.records if r["k"] == "begin")[:10]
    partial = replay(trace, WORLD, until=first_ids[-1])
    assert 0 < partial.replayed < full.replayed
    only = replay(trace, WORLD, only_actor="pleg")
    assert only.ok and only.actors == {"pleg"}


def test_a_torn_trace_replays_up_to_its_last_whole_record(recorded: Path,
                                                          tmp_path: Path) -> None:
    (source,) = sorted(recorded.glob("trace-*.jsonl"))
    data = source.read_bytes()
    cut = tmp_path / source.name
    # Ends in the middle of a line: 10 bytes into the line that starts after 2/3 of the
    # file (2/3 itself may fall on a line's end, depending on what was recorded).
    start = data.index(b"\n", len(data) * 2 // 3) + 1
    cut.write_bytes(data[: start + 10])
    trace = read_trace(cut)
    assert trace.torn and "torn" in trace.torn[0]
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)
    assert report.replayed > 0


def test_the_command_says_no_divergence_or_exits_1(
    recorded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert replay_cli.main([str(recorded)], WORLD) == 0
    assert "no divergence" in capsys.readouterr().out
    monkeypatch.setattr(actions, "should_container_be_restarted", lambda *args: False)
    assert replay_cli.main([str(recorded)], WORLD) == 1
    assert "divergence at delivery #" in capsys.readouterr().out
    assert replay_cli.main(["/nonexistent/trace"], WORLD) == 1


def test_traces_name_messages_by_registered_names(recorded: Path) -> None:
    """Type names survive a class moving: no module paths for the kubelet's messages."""
    types = {r["type"] for r in read_trace(recorded).messages()}
    assert {"UpdatePod", "Tick", "Relisted", "PodObserved"} <= types
    assert not [t for t in types if "." in t]


def test_old_traces_name_module_paths_that_still_resolve(recorded: Path,
                                                         tmp_path: Path) -> None:
    """Traces recorded before the floors (issue 8, format 2 and older) name message types
    by module path (``actors.messages.UpdatePod``): reading one converts them to the
    registered names (actors.kubelet.trace_compat), and it replays. (The kept traces were
    recorded again since: one is rewritten here into the old names.)"""
    import json

    from actors.kubelet.trace_compat import LEGACY_TYPES

    old_name = {name: recorded for recorded, name in LEGACY_TYPES.items()}
    assert all(MESSAGES.names()[name] for name in old_name)
    old = tmp_path / "old"
    old.mkdir()
    renamed = 0
    for path in sorted(recorded.glob("trace-*.jsonl")):
        lines = []
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("k") == "header":
                record["v"] = 2
            elif record.get("k") == "msg" and record["type"] in old_name:
                record["type"] = old_name[record["type"]]
                renamed += 1
            lines.append(json.dumps(record, separators=(",", ":")) + "\n")
        (old / path.name).write_text("".join(lines))
    assert renamed
    trace = read_trace(old)
    assert trace.version == 2
    assert not [r for r in trace.messages() if r["type"] in LEGACY_TYPES]
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)


def _without_remove(trace: Trace) -> Trace:
    """The trace as if UpdatePod had no ``remove`` field when it was recorded (an older
    schema): the key is gone wherever it held the default the code fills in."""
    for record in trace.messages():
        if record["type"] == "UpdatePod" and record["body"]["remove"] is False:
            del record["body"]["remove"]
    return trace


def test_a_version_1_trace_lacking_a_newer_field_still_replays(recorded: Path) -> None:
    trace = read_trace(recorded)
    assert trace.version == TRACE_VERSION == 4
    old = _without_remove(trace)
    old.header["v"] = 1
    report = replay(old, WORLD)
    assert report.ok, format_report(report)


def test_a_version_2_trace_lacking_a_field_at_its_default_replays(recorded: Path) -> None:
    """A field added with a default since the recording: where the replay sends that
    default, it behaves as the recording code did."""
    report = replay(_without_remove(read_trace(recorded)), WORLD)
    assert report.ok, format_report(report)


def test_a_version_2_trace_lacking_a_field_not_at_its_default_diverges(recorded: Path) -> None:
    trace = read_trace(recorded)
    stripped = 0
    for record in trace.messages():
        if record["type"] == "UpdatePod" and record["body"]["remove"] is True:
            del record["body"]["remove"]
            stripped += 1
    assert stripped, "the recorded run removes a pod"
    report = replay(trace, WORLD)
    assert report.divergence is not None
    assert report.divergence.step.endswith("UpdatePod to pod/u1, different content")
    assert report.divergence.actual["body"]["remove"] is True


# Issue 16: the sync loop's handling of held mail and dead letters replays as recorded.


def _handled(trace: Trace, message_type: str) -> list[int]:
    return [r["id"] for r in trace.records if r["k"] == "msg" and r["to"] == names.SYNC_LOOP
            and r["type"] == message_type]


def _sent_by(trace: Trace, delivery: int) -> list[str]:
    return [MESSAGES.short(r["type"]) for r in trace.records
            if r["k"] == "msg" and r.get("parent") == delivery and r["from"] != "dispatch"]


def test_a_held_update_is_rebuilt_as_an_update_and_dropped_on_replay(tmp_path: Path) -> None:
    """A pod worker's update held while it is down is redundant after its restart. Its
    DeadLetter records what it carries, so replay rebuilds an UpdatePod (not a dict, which
    the redundancy rule does not drop) and sends only the rebuild, as recorded."""
    directory = tmp_path / "worker-mail-while-down"
    SCENARIOS["worker-mail-while-down"](directory)
    trace = read_trace(directory)
    letters = [r for r in trace.records if r["k"] == "msg" and r["type"] == "DeadLetter"
               and r["body"]["to"] == names.worker_name("u3")]
    assert letters and letters[0]["carried"] == {"message": "UpdatePod"}
    letter = decode_message(letters[0])
    assert isinstance(letter, DeadLetter) and isinstance(letter.message, UpdatePod)
    (restart,) = _handled(trace, "RestartChild")
    assert _sent_by(trace, restart) == ["UpdatePod"]  # the rebuild; the held one dropped
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)


def test_a_dead_letter_taken_after_its_child_restarted_replays(tmp_path: Path) -> None:
    """Ticks told to pleg while the sync loop is still restarting its group are dead
    letters it takes after pleg runs again: it passes them on. Whether the child runs is
    read from the live actor, so it is a recorded input, and replay answers the same."""
    directory = tmp_path / "dead-letter-during-group-restart"
    SCENARIOS["dead-letter-during-group-restart"](directory)
    trace = read_trace(directory)
    alive = {r["in"]: r["value"] for r in trace.records
             if r["k"] == "input" and r["name"] == "child.alive"}
    passed_on = [d for d in _handled(trace, "DeadLetter") if alive.get(d) is True]
    assert passed_on and all(_sent_by(trace, d) == ["Tick"] for d in passed_on)
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)


# Issue 16: hostPath volumes are answered as recorded; a replay never reads or makes node paths.


def _host_paths_in(trace: Trace) -> list[tuple[str, str]]:
    return [(r["args"][0], r["args"][1]) for r in trace.records
            if r["k"] == "call" and r.get("target") == HOST_PATHS_TARGET]


def test_host_path_volumes_replay_as_recorded_without_touching_the_node() -> None:
    """The kept run made a DirectoryOrCreate path and found a File path, both gone now."""
    trace = read_trace(HERE / "host-path-volumes")
    paths = _host_paths_in(trace)
    assert {kind for _, kind in paths} == {"DirectoryOrCreate", "File"}
    assert not any(Path(path).exists() for path, _ in paths)
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)
    assert not any(Path(path).exists() for path, _ in paths)


# A trace names the code that recorded it; older formats are converted as read.


def _rewritten(recorded: Path, target: Path, header: Any) -> Path:
    """A copy of the trace at ``recorded`` whose file headers ``header`` changed."""
    import json

    target.mkdir()
    for path in sorted(recorded.glob("trace-*.jsonl")):
        lines = []
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("k") == "header":
                header(record)
            lines.append(json.dumps(record, separators=(",", ":")) + "\n")
        (target / path.name).write_text("".join(lines))
    return target


def _by_version(version: str) -> Any:
    def change(header: dict[str, Any]) -> None:
        header["version"] = version
    return change


def test_a_trace_recorded_by_this_code_says_nothing_of_its_code(recorded: Path) -> None:
    report = replay(read_trace(recorded), WORLD)
    assert report.other_code is None
    assert "recorded by" not in format_report(report)


def test_a_trace_recorded_by_another_version_says_so_before_anything_else(
        recorded: Path, tmp_path: Path) -> None:
    old = _rewritten(recorded, tmp_path / "old", _by_version("0.0.1"))
    report = replay(read_trace(old), WORLD)
    assert report.ok
    first, second = format_report(report).splitlines()[:2]
    assert first.startswith("note: this trace was recorded by kubelet-actors 0.0.1")
    assert "this is kubelet-actors " in first
    assert second.startswith("no divergence: ")


def test_its_first_divergence_is_reported_as_possibly_a_change_of_code(
        recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actions, "should_container_be_restarted", lambda *args: False)
    same = format_report(replay(read_trace(recorded), WORLD)).splitlines()
    assert same[0].startswith("divergence at delivery")
    assert not [line for line in same if "change of code" in line]
    old = _rewritten(recorded, tmp_path / "old", _by_version("0.0.1"))
    lines = format_report(replay(read_trace(old), WORLD)).splitlines()
    assert lines[0].startswith("note: this trace was recorded by kubelet-actors 0.0.1")
    assert lines[1].startswith("the first divergence is possibly a change of code, not a bug")
    assert lines[2] == same[0]


def test_a_format_3_start_config_is_converted_as_it_is_read(recorded: Path,
                                                            tmp_path: Path) -> None:
    """A format 3 header may hold switches that chose an older behaviour (keys this code's
    ReplayConfig does not have), and (from before admission) no node in the sync loop's
    settings: read, it holds neither the switches nor the lack, and the trace replays."""
    def format_3(header: dict[str, Any]) -> None:
        header["v"] = 3
        for key in ("product", "version", "commit"):
            header.pop(key, None)
        header["config"].update(an_old_switch=1, another_old_switch=False)
        del header["config"]["supervisor"]["node"]

    trace = read_trace(_rewritten(recorded, tmp_path / "v3", format_3))
    assert trace.version == 3
    assert not {"an_old_switch", "another_old_switch"} & set(trace.config)
    assert trace.config["supervisor"]["node"] == {"name": "node"}
    assert ReplayConfig.from_header(trace.config).supervisor.node.name == "node"
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)
    assert format_report(report).startswith("note: this trace was recorded by a version "
                                            "that did not name itself")


def test_the_kept_drill_trace_holds_what_it_is_kept_for() -> None:
    """A dead letter the dispatch point made of a pod worker's message to the probe
    manager during that worker's handler (tests/traces/record_drill.py)."""
    from tests.traces.record_drill import KEPT, worker_dead_letters

    assert worker_dead_letters(KEPT)
