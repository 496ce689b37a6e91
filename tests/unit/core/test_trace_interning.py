"""Large values in a trace: written once per file, read back whole.

What recording costs is pinned here by what can be counted: how many times a file holds a
value that many records carry, and that every record reads back as the plain encoding of
what was recorded (what replay compares), file by file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.core.trace.interning import INTERN_MIN_BYTES
from actors.core.trace.reader import TraceError, read_trace
from actors.core.trace.stubs import plain
from actors.core.trace.writer import TRACE_VERSION, TraceWriter
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from tests.helpers import wait_for


@dataclass(frozen=True, slots=True)
class Carries:
    """A message with a large field, a tuple of them and a small one."""

    pod: Pod
    pods: tuple[Pod, ...]
    note: str


class CarriesStruct(msgspec.Struct, frozen=True):
    """Carries as a Struct, as most messages are: taken apart the same way."""

    pod: Pod
    pods: tuple[Pod, ...]
    note: str


class OwnEncoding(msgspec.Struct, frozen=True, rename="camel"):
    """A message type whose encoding is not its fields by name: written as it is."""

    pod_spec: Pod


def big_pod(uid: str) -> Pod:
    containers = tuple(Container(name=f"c{n}", image=f"registry.example/app-{n}:1.0",
                                 command=("sh", "-c", "sleep 3600"))
                       for n in range(4))
    return Pod(metadata=ObjectMeta(name=f"web-{uid}", namespace="default", uid=uid),
               spec=PodSpec(containers=containers))


def lines(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text().splitlines()]


def values_in(file: Path) -> int:
    return sum(1 for record in lines(file) if record["k"] == "val")


@pytest.mark.parametrize("kind", [Carries, CarriesStruct])
def test_a_value_many_messages_carry_is_written_once_and_reads_back_whole(
        tmp_path: Path, kind: type[Carries] | type[CarriesStruct]) -> None:
    pod, other = big_pod("a"), big_pod("b")
    assert len(msgspec.json.encode(pod)) >= INTERN_MIN_BYTES
    sent = [kind(pod, (pod, other), f"n{n}") for n in range(50)]
    writer = TraceWriter(tmp_path)
    for n, message in enumerate(sent):
        writer.delivery(n + 1, "a", n + 1, "b", 0, None, message, dead=False)
    writer.close()

    (file,) = sorted(tmp_path.glob("trace-*.jsonl"))
    assert values_in(file) == 2 and writer.values == 2  # each pod once, not 150 times
    raw = [r for r in lines(file) if r["k"] == "msg"]
    assert raw[0]["interned"] == {"body.pod": 1, "body.pods": [1, 2]}
    assert raw[0]["body"] == {"pod": None, "pods": [None, None], "note": "n0"}
    trace = read_trace(tmp_path)
    assert trace.version == TRACE_VERSION
    assert [r["body"] for r in trace.messages()] == [plain(m) for m in sent]
    assert not any("interned" in r for r in trace.records)


def test_the_same_value_in_a_new_object_is_found_by_its_content(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path)
    for n in range(5):
        writer.delivery(n + 1, "a", n + 1, "b", 0, None, Carries(big_pod("a"), (), ""), False)
    writer.close()
    assert writer.values == 1


def test_small_values_and_types_of_their_own_encoding_are_written_in_place(
        tmp_path: Path) -> None:
    small = Pod(metadata=ObjectMeta(name="p", uid="u"), spec=PodSpec())
    own = OwnEncoding(big_pod("c"))
    writer = TraceWriter(tmp_path)
    writer.delivery(1, "a", 1, "b", 0, None, Carries(small, (small,), ""), False)
    writer.delivery(2, "a", 2, "b", 0, None, own, False)
    writer.delivery(3, "a", 3, "b", 0, None, own, False)
    writer.close()
    assert writer.values == 0
    bodies = [r["body"] for r in read_trace(tmp_path).messages()]
    assert bodies == [plain(Carries(small, (small,), "")), plain(own), plain(own)]
    assert "podSpec" in bodies[1]


def test_a_call_answered_alike_again_and_again_holds_its_answer_once(tmp_path: Path) -> None:
    answer = tuple(big_pod(str(n)) for n in range(3))
    writer = TraceWriter(tmp_path)
    for _ in range(10):
        writer.call("runtime", "list_pods", (), 0.001, answer, None)
    writer.call("runtime", "list_pods", (), 0.001, None, RuntimeError("down"))
    writer.close()
    assert writer.values == 1
    calls = [r for r in read_trace(tmp_path).records if r["k"] == "call"]
    assert [c["result"] for c in calls[:10]] == [plain(answer)] * 10
    assert calls[10]["error"] == {"type": "RuntimeError", "detail": "down"}
    assert "result" not in calls[10]


def test_every_file_holds_the_values_its_records_use(tmp_path: Path) -> None:
    pod = big_pod("a")
    writer = TraceWriter(tmp_path, max_bytes=8192, max_files=100)
    for n in range(200):
        writer.delivery(n + 1, "a", n + 1, "b", 0, None, Carries(pod, (), f"{n}"), False)
    writer.close()
    files = sorted(tmp_path.glob("trace-*.jsonl"))
    assert len(files) > 3
    assert [values_in(f) for f in files] == [1] * len(files)
    for file in files:  # each file reads on its own: retention may delete the ones before
        assert all(r["body"] == plain(Carries(pod, (), r["body"]["note"]))
                   for r in read_trace(file).messages())
    assert len(list(read_trace(tmp_path).messages())) == 200


def test_a_record_naming_a_value_its_file_lacks_is_a_clear_error(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path)
    writer.delivery(1, "a", 1, "b", 0, None, Carries(big_pod("a"), (), ""), False)
    writer.close()
    (file,) = sorted(tmp_path.glob("trace-*.jsonl"))
    kept = [line for line in file.read_text().splitlines() if '"k":"val"' not in line]
    file.write_text("\n".join(kept) + "\n")
    with pytest.raises(TraceError, match=r"trace-000001.jsonl: line 2: value 1 is not in"):
        read_trace(tmp_path)


def test_flush_writes_what_was_recorded_so_far(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path)
    try:
        for n in range(20):
            writer.spawn(f"actor/{n}", 0)
        assert writer.flush()
        assert len(read_trace(tmp_path).records) == 20
    finally:
        writer.close()


def test_a_mutable_answer_is_recorded_as_it_was_each_time(tmp_path: Path) -> None:
    answer = {"items": [f"item-{n}-{'x' * 40}" for n in range(8)]}
    writer = TraceWriter(tmp_path)
    try:
        writer.call("kubeapi", "list", (), 0.001, answer, None)
        assert writer.flush()
        answer["items"] = answer["items"][:1]  # a cache the answer came from, changed
        writer.call("kubeapi", "list", (), 0.001, answer, None)
    finally:
        writer.close()
    first, second = (r["result"] for r in read_trace(tmp_path).records)
    assert len(first["items"]) == 8 and len(second["items"]) == 1


def test_a_record_after_a_quiet_spell_wakes_the_sleeping_writer(tmp_path: Path) -> None:
    # A short write_every: the quiet spell is one write_every with nothing to write, and
    # the default's seconds would only make the test wait.
    writer = TraceWriter(tmp_path, write_every=0.2)

    def written() -> int:
        files = sorted(tmp_path.glob("trace-*.jsonl"))  # none until the writer opens one
        return len(read_trace(tmp_path).records) if files else 0

    try:
        writer.spawn("first", 0)
        wait_for(lambda: written() == 1, 10.0, "the first record in the file")
        wait_for(lambda: writer._idle, 10.0, "the writer to sleep, nothing coming")
        writer.spawn("second", 0)  # no flush: the record itself wakes the writer
        wait_for(lambda: written() == 2, 10.0, "the second record in the file")
    finally:
        writer.close()
    assert [r["actor"] for r in read_trace(tmp_path).records] == ["first", "second"]


def test_a_value_the_writer_let_go_is_written_again_under_a_new_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.core.trace import interning

    pods = [big_pod(str(n)) for n in range(3)]
    monkeypatch.setattr(interning, "_KNOWN_BYTES", 2 * len(msgspec.json.encode(pods[0])))
    sent = [Carries(pods[n % 3], (), str(n)) for n in range(6)]  # a, b, c, a, b, c
    writer = TraceWriter(tmp_path)
    for n, message in enumerate(sent):
        writer.delivery(n + 1, "a", n + 1, "b", 0, None, message, dead=False)
    writer.close()
    (file,) = sorted(tmp_path.glob("trace-*.jsonl"))
    assert [r["id"] for r in lines(file) if r["k"] == "val"] == [1, 2, 3, 4, 5, 6]
    assert [r["body"] for r in read_trace(tmp_path).messages()] == [plain(m) for m in sent]
