"""tests.traces.migrate carries argument changes into a kept trace, and nothing else."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from actors.core.trace.reader import read_trace, trace_files
from actors.core.trace.replay import replay
from actors.kubelet.trace import KubeletWorld
from tests.traces.migrate import NotAnArgumentChange, migrate_call_arguments
from tests.traces.scenarios import HERE

KEPT = HERE / "drill-kill-probes-dead-letter"


def _edit_first(directory: Path, method: str, edit: str) -> object:
    """Change the first recorded ``method`` call: its args ("args") or drop it ("drop")."""
    (path,) = trace_files(directory)
    lines = path.read_text().splitlines(keepends=True)
    for number, line in enumerate(lines):
        record = json.loads(line)
        if record.get("k") == "call" and record.get("method") == method:
            original = copy.deepcopy(record)
            if edit == "drop":
                del lines[number]
            else:
                record["args"][1]["working_dir"] = "/somewhere/else"
                lines[number] = json.dumps(record, separators=(",", ":")) + "\n"
            path.write_text("".join(lines))
            return original
    raise AssertionError(f"no {method} call in {path}")


@pytest.fixture
def kept(tmp_path: Path) -> Path:
    copy = tmp_path / "trace"
    shutil.copytree(KEPT, copy)
    return copy


def test_an_argument_change_is_carried_over(kept: Path) -> None:
    original = _edit_first(kept, "create_container", "args")
    assert not replay(read_trace(kept), KubeletWorld()).ok

    migrated = migrate_call_arguments(kept)

    assert [d.expected["method"] for d in migrated] == ["create_container"]
    assert [d.path for d in migrated[0].fields()] == ["args[1].working_dir"]
    assert replay(read_trace(kept), KubeletWorld()).ok
    records = [json.loads(line) for line in trace_files(kept)[0].read_text().splitlines()]
    assert original in records  # back to what the kubelet sends


def test_a_missing_call_is_not_an_argument_change(kept: Path) -> None:
    _edit_first(kept, "start_container", "drop")
    with pytest.raises(NotAnArgumentChange, match=r"not in the recording|did not make|differs"):
        migrate_call_arguments(kept)
