"""``kubelet-actors explain``: the command over the kept traces, its output, its errors,
and how it finds the running daemon's trace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml_rs

from actors.app.root_lock import LOCK_NAME
from actors.app.tools.explain import known_pods
from actors.app.tools.explain.model import EVIDENCE_FIELDS
from actors.app.tools.explain_cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    TRACE_FLAG,
    ExplainError,
    daemon_trace_dir,
    main,
)
from actors.core.trace.reader import read_trace
from tests.helpers import wait_for

TRACES = Path(__file__).resolve().parents[2] / "traces"
KEPT = sorted(p.parent for p in TRACES.glob("*/trace-*.jsonl"))


def test_the_kept_traces_are_there() -> None:
    assert len(KEPT) >= 5, KEPT


@pytest.mark.parametrize("trace", KEPT, ids=lambda p: p.name)
def test_explain_every_pod_of_every_kept_trace(trace: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    records = read_trace(trace).records
    ids = {r["id"] for r in records if r["k"] == "msg"}
    pods = known_pods(records)
    assert pods, trace
    for pod in pods:
        assert main([pod.uid, "--trace-dir", str(trace), "-o", "json"]) == EXIT_OK
        data = json.loads(capsys.readouterr().out)
        (explained,) = data["pods"]
        assert explained["uid"] == pod.uid
        findings = explained["findings"]
        assert findings[-1]["kind"] == "state"
        for finding in findings:
            assert finding["text"] and set(finding["seqs"]) <= ids, finding
            for piece in finding["evidence"]:
                assert piece["field"] in EVIDENCE_FIELDS and piece["seq"] in ids, piece
                # Each piece names its container: the finding's own, or "" for the pod.
                assert piece["container"] == finding["container"] or (
                    finding["container"] == "" and isinstance(piece["container"], str)), piece
        assert main([pod.uid, "--trace-dir", str(trace), "-o", "yaml"]) == EXIT_OK
        assert yaml_rs.loads(capsys.readouterr().out, parse_datetime=False) == data
        assert main([pod.uid, "--trace-dir", str(trace)]) == EXIT_OK
        text = capsys.readouterr().out
        assert f"(uid {pod.uid})" in text and " now " in text


def test_text_output_names_the_pod_and_each_sentence_s_messages(
        capsys: pytest.CaptureFixture[str]) -> None:
    trace = TRACES / "restart-and-remove"
    assert main(["web", "--trace-dir", str(trace)]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "pod default/web (uid u1)"
    at = next(index for index, line in enumerate(out) if "restart 1 of c at" in line)
    restart = out[at]
    assert "exited with code 1 (Error)" in restart and "[#" in restart
    # Under it, the evidence, each piece with the message it was read from.
    assert re.fullmatch(r" {12}exitCode: 1  \[#\d+ \d\d:\d\d:\d\d\]", out[at + 1]), out[at + 1]
    assert re.fullmatch(r' {12}reason: "Error"  \[#\d+ .*\]', out[at + 2]), out[at + 2]
    assert any("removed from its source (file)" in line for line in out)
    assert "now gone" in out[-1]


def test_namespace_and_container_filters(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(TRACES / "restart-and-remove")
    assert main(["web", "-n", "kube-system", "--trace-dir", trace]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "names no pod 'web' in namespace kube-system (its pods: default/web; " \
        "-A looks in every namespace)" in err
    assert main(["web", "-A", "-n", "kube-system", "--trace-dir", trace]) == EXIT_OK
    assert "pod default/web (uid u1)" in capsys.readouterr().out
    assert main(["default/web", "-c", "other", "--trace-dir", trace, "-o", "json"]) == EXIT_OK
    findings = json.loads(capsys.readouterr().out)["pods"][0]["findings"]
    assert findings and all(f["container"] == "" for f in findings)


HOW_TO = "to record one, start the daemon with --trace-dir DIR"


def test_the_flag_it_names_is_the_daemon_s() -> None:
    """What explain tells a person to pass is a flag the daemon takes, with a directory."""
    from actors.app.config.flags import build_parser

    assert TRACE_FLAG == "--trace-dir"
    assert build_parser().parse_args([TRACE_FLAG, "/some/dir"]).trace_dir == "/some/dir"


def test_usage_and_unreadable_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EXIT_USAGE
    assert main(["web", "--trace-dir", str(tmp_path / "none")]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "no such trace file or directory" in err and HOW_TO in err
    assert main(["web", "--trace-dir", str(tmp_path)]) == EXIT_FAILED  # a directory, no trace
    err = capsys.readouterr().err
    assert "no trace-*.jsonl files in this directory" in err and HOW_TO in err
    assert "then run `kubelet-actors explain POD --trace-dir DIR`" in err


def test_without_trace_dir_it_needs_a_daemon_on_the_root_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["web", "--root-dir", str(tmp_path)]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f"no --trace-dir given and no daemon on --root-dir {tmp_path}" in err
    assert HOW_TO in err
    (tmp_path / LOCK_NAME).write_text(str(os.getpid()))  # this process: no --trace-dir
    with pytest.raises(ExplainError) as raised:
        daemon_trace_dir(str(tmp_path))
    assert f"records no trace (it runs without --trace-dir); {HOW_TO}" in str(raised.value)


def test_the_daemon_s_trace_dir_from_its_command_line(tmp_path: Path) -> None:
    """A process standing in for the daemon: its --trace-dir, relative to its cwd."""
    ready = tmp_path / "ready"
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch();"
         " time.sleep(60)", str(ready), "--trace-dir", "rel/trace"], cwd=tmp_path)
    try:
        wait_for(ready.exists, 30.0, "the stand-in to start")
        (tmp_path / LOCK_NAME).write_text(str(stand_in.pid))
        assert daemon_trace_dir(str(tmp_path)) == str(tmp_path / "rel" / "trace")
    finally:
        stand_in.kill()
        stand_in.wait(timeout=10)
    with pytest.raises(ExplainError, match="is not running"):
        daemon_trace_dir(str(tmp_path))


def test_a_trace_dir_kept_across_daemon_restarts_is_read_per_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each daemon process numbers its deliveries from 1: its messages are read apart."""
    lines = (TRACES / "restart-and-remove" / "trace-000001.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    for index, pid in enumerate((4001, 4002), 1):
        again = {**header, "pid": pid}
        (tmp_path / f"trace-{index:06d}.jsonl").write_text(
            "\n".join([json.dumps(again), *lines[1:]]) + "\n")
    assert main(["web", "--trace-dir", str(tmp_path), "-o", "json"]) == EXIT_OK
    pods = json.loads(capsys.readouterr().out)["pods"]
    assert [p["pid"] for p in pods] == [4001, 4002]
    assert pods[0]["findings"] == pods[1]["findings"]
    assert main(["web", "--trace-dir", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "pod default/web (uid u1), daemon pid 4001" in out
    assert "pod default/web (uid u1), daemon pid 4002" in out


def test_a_container_the_trace_did_not_see_start_was_adopted() -> None:
    """A daemon restarted on running containers (it adopts them) starts none of them: the
    trace holds no StartContainer for them."""
    from actors.app.tools.explain import explain

    records = [r for r in read_trace(TRACES / "restart-and-remove").records
               if not (r["k"] == "call" and r.get("method") == "start_container")]
    (found,) = explain(records, "web")
    first = found.findings[0]
    assert first.kind == "start"
    assert first.text.startswith("container c was started before this trace began")
