"""Which code wrote a trace (actors.core.trace.provenance), and older formats converted as a
trace is read (actors.core.trace.compat)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from actors.core.trace import compat, provenance
from actors.core.trace.compat import Converters
from actors.core.trace.reader import read_trace
from actors.core.trace.writer import TRACE_VERSION, TraceWriter

REPO = Path(__file__).resolve().parents[3]
HERE_CODE = {"product": "kubelet-actors", "version": "1.0.0", "commit": "a" * 40}


def test_the_header_names_the_product_its_version_and_the_checkouts_commit(
        tmp_path: Path) -> None:
    provenance.current.cache_clear()  # read once a process: HEAD may have moved since
    writer = TraceWriter(tmp_path)
    writer.close()
    header = read_trace(tmp_path).header
    assert header["v"] == TRACE_VERSION
    assert header["product"] == "kubelet-actors"
    assert header["version"] == importlib.metadata.version("kubelet-actors")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert header["commit"] == head


def test_outside_a_git_checkout_the_commit_is_absent(tmp_path: Path) -> None:
    assert provenance._commit(tmp_path) == ""
    writer = TraceWriter(tmp_path / "trace", provenance={"product": "p", "version": "1"})
    writer.close()
    header = read_trace(tmp_path / "trace").header
    assert (header["product"], header["version"], "commit" in header) == ("p", "1", False)


@pytest.mark.parametrize(("recorded", "other"), [
    (HERE_CODE, False),
    ({**HERE_CODE, "commit": "b" * 40}, True),
    ({**HERE_CODE, "version": "0.9.0"}, True),
    ({"product": "kubelet-actors", "version": "1.0.0"}, False),  # no commit: the version says
    ({}, True),  # a header from before headers named their code
])
def test_a_trace_by_other_code_is_told_apart(recorded: dict[str, str], other: bool) -> None:
    why = provenance.other_code({"k": "header", **recorded}, HERE_CODE)
    assert (why is not None) is other
    if why is not None:
        assert why.startswith("this trace was recorded by ")
        assert "this is kubelet-actors 1.0.0 at commit aaaaaaaaaaaa" in why


def test_converters_run_from_the_files_version_up_in_turn() -> None:
    ran: list[str] = []

    def step(name: str) -> compat.Converter:
        def convert(header: dict[str, Any], records: list[dict[str, Any]]) -> None:
            ran.append(name)
            records.append({"k": "note", "by": name})
        return convert

    converters = Converters()
    for version in range(1, TRACE_VERSION):
        converters.register(version, step(f"{version}->{version + 1}"))
    records: list[dict[str, Any]] = []
    converters.upgrade({"v": 2}, records)
    assert ran == [f"{v}->{v + 1}" for v in range(2, TRACE_VERSION)]
    ran.clear()
    converters.upgrade({}, [])  # no v: format 1
    assert ran == [f"{v}->{v + 1}" for v in range(1, TRACE_VERSION)]
    ran.clear()
    converters.upgrade({"v": TRACE_VERSION}, [])
    assert ran == []
    with pytest.raises(ValueError):
        converters.register(TRACE_VERSION, step("none"))


def test_the_reader_converts_each_file_from_its_own_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    converters = Converters()

    def renamed(header: dict[str, Any], records: list[dict[str, Any]]) -> None:
        for record in records:
            record["what"] = "converted"

    converters.register(TRACE_VERSION - 1, renamed)
    monkeypatch.setattr(compat, "CONVERTERS", converters)
    monkeypatch.setattr("actors.core.trace.reader.CONVERTERS", converters)
    for n, version in enumerate((TRACE_VERSION - 1, TRACE_VERSION), 1):
        lines = [{"k": "header", "v": version, "run": "r", "part": n},
                 {"k": "input", "what": "as recorded"}]
        (tmp_path / f"trace-{n:06d}.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines))
    trace = read_trace(tmp_path)
    assert [r["what"] for r in trace.records] == ["converted", "as recorded"]
    assert trace.version == TRACE_VERSION - 1  # as written: the first file's format
    assert f"converted to format {TRACE_VERSION}" in "\n".join(trace.notes())
