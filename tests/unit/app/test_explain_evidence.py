"""``kubelet-actors explain``: the evidence under each finding, quoted from the trace.

Each test records a scenario on the fake runtime (test_explain_scenarios' Scenario: the
real actors, virtual time), reads the trace back and checks that the finding carries, as
fields with their trace references, what a person would otherwise dig for: the exit code,
signal, OOM and termination message, the back-off and the next start, the probe's
Unhealthy message, output and exit code or HTTP status, the hook's failure, the pull, the
admission and mount errors verbatim, the init container a Pending pod waits for.
"""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.app.tools.explain import PodExplanation
from actors.app.tools.explain.model import Finding, iso_time
from actors.app.tools.explain_cli import evidence_line
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet.events import RecordEvent
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ExecResult
from runtime.pod.generated import (
    ExecAction,
    HTTPGetAction,
    Lifecycle,
    LifecycleHandler,
    ResourceRequirements,
)
from runtime.pod.model import Container, HostPathVolumeSource, Probe, Volume, VolumeMount
from tests.helpers import serve
from tests.unit.app.test_explain_scenarios import (
    MISSING_IMAGE,
    NAME,
    UID,
    WORKER,
    Scenario,
    container,
    exec_probe,
    failed_post_start_hook,
    failed_pulls,
    failing_readiness,
    kinds,
    make_pod,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[Scenario]:
    with Scenario(tmp_path / "trace") as made:
        yield made


def fields(finding: Finding) -> dict[str, Any]:
    """The finding's evidence by field, each checked to name a message of the finding."""
    for piece in finding.evidence:
        assert piece.seq is not None and piece.time is not None, piece
    return {piece.field: piece.value for piece in finding.evidence}


def seq_of(finding: Finding, field: str) -> int | None:
    return next(p.seq for p in finding.evidence if p.field == field)


def test_exit_code_signal_reason_termination_message_back_off_and_next_start(
        scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container()))
    first = scenario.wait_running()
    node.fake.exit_container(first, 42, message="config file /etc/app.conf missing")  # type: ignore[arg-type]
    second = scenario.wait_running([first])
    node.fake.exit_container(second, 137, reason="OOMKilled")  # type: ignore[arg-type]
    third = scenario.wait_running([second])
    node.fake.exit_container(third, 42)  # type: ignore[arg-type]
    node.until("the back-off after the third exit", lambda: node.fake.called(
        "start_container") >= 3)
    node.advance(1.0)

    found = scenario.explain()
    restarts = kinds(found, "restart")
    first_restart = fields(restarts[0])
    assert first_restart["exitCode"] == 42
    assert first_restart["reason"] == "Error"
    assert first_restart["terminationMessage"] == "config file /etc/app.conf missing"
    assert "signal" not in first_restart and "backOff" not in first_restart
    oom = fields(restarts[1])
    assert oom["exitCode"] == 137 and oom["signal"] == "SIGKILL"
    assert oom["reason"] == "OOMKilled" and oom["oomKilled"] is True
    assert oom["backOff"] == 10.0
    assert oom["backOffMessage"].startswith("back-off 10s restarting failed container=app ")
    # The exit the evidence was read from is the one the trace reported.
    assert seq_of(restarts[1], "exitCode") in restarts[1].seqs

    (exit_,) = kinds(found, "exit")
    waiting = fields(exit_)
    assert waiting["exitCode"] == 42 and waiting["backOff"] == 20.0
    finished = waiting["finishedAt"]
    assert waiting["nextStart"] == iso_time(_seconds(finished) + 20.0)
    assert f"next start at {waiting['nextStart'][11:19]}" in exit_.text
    json = {piece["field"]: piece for piece in exit_.to_json()["evidence"]}
    assert json["exitCode"]["value"] == 42 and json["exitCode"]["seq"] == seq_of(exit_, "exitCode")
    assert json["exitCode"]["container"] == "app"


def _seconds(iso: str) -> float:
    import datetime

    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.UTC).timestamp()


def test_readiness_exec_probe_message_output_and_exit_code(scenario: Scenario) -> None:
    found = failing_readiness(scenario, exit_code=3)
    not_ready = [f for f in kinds(found, "not-ready") if "probe failed" in f.text][-1]
    probe = fields(not_ready)
    assert probe["probeMessage"] == "Readiness probe failed: warming up: 40%"
    assert probe["probeOutput"] == "warming up: 40%"
    assert probe["probeExitCode"] == 3
    assert probe["probeFailures"] == 2 and probe["failureThreshold"] == 2
    assert "httpStatus" not in probe


class _Unwell(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"database unreachable"
        self.send_response(503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def unwell() -> Iterator[int]:
    """A health endpoint on 127.0.0.1 answering 503; its port."""
    yield from serve(http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unwell))


def test_readiness_http_probe_status(scenario: Scenario, unwell: int) -> None:
    node = scenario.node
    probe = Probe(http_get=HTTPGetAction(port=unwell, host="127.0.0.1", path="/healthz"),
                  period_seconds=1, failure_threshold=1)
    node.snapshot(make_pod(container(readiness_probe=probe)))
    scenario.wait_running()
    node.until("a failed attempt", lambda: any(
        "HTTP probe failed" in str(r.get("body", {}).get("message", ""))
        for r in scenario.messages() if r.get("type") == "RecordEvent"))
    node.advance(1.0)

    # Never ready: the state says why, with the attempts since the container started.
    state = kinds(scenario.explain(), "state")[-1]
    assert state.text.startswith("now Running, not ready")
    assert '("HTTP probe failed with statuscode: 503")' in state.text
    probe_fields = fields(state)
    assert probe_fields["probeFailures"] >= 1
    assert probe_fields["probeMessage"] == \
        "Readiness probe failed: HTTP probe failed with statuscode: 503"
    assert probe_fields["httpStatus"] == 503
    assert "probeExitCode" not in probe_fields


def test_liveness_kill_quotes_the_unhealthy_and_killing_events(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(liveness_probe=exec_probe("live", threshold=2))))
    first = scenario.wait_running()
    node.fake.set_exec_result(None, ("live",), ExecResult(
        stdout=b"", stderr=b"deadlock detected", exit_code=7))
    scenario.wait_running([first])

    (restart,) = kinds(scenario.explain(), "restart")
    probe = fields(restart)
    assert probe["probeMessage"] == "Liveness probe failed: deadlock detected"
    assert probe["probeExitCode"] == 7 and probe["probeFailures"] == 2
    assert probe["killMessage"] == "Container app failed liveness probe, will be restarted"
    assert probe["exitCode"] == 137 and probe["signal"] == "SIGKILL"


def test_failed_post_start_hook_message_and_output(scenario: Scenario) -> None:
    restart = kinds(failed_post_start_hook(scenario), "restart")[0]
    hooked = fields(restart)
    assert hooked["hookMessage"] == "PostStartHook failed"
    assert "cache not found" in hooked["hookOutput"]


def test_pending_on_its_image_quotes_the_pull_error(scenario: Scenario) -> None:
    found = failed_pulls(scenario)
    (image,) = kinds(found, "image")
    pulled = fields(image)
    assert pulled["image"] == MISSING_IMAGE
    assert pulled["pullError"] == "ErrImagePull"
    assert pulled["pullMessage"].startswith(f'Failed to pull image "{MISSING_IMAGE}"')
    assert pulled["backOff"] == 10.0
    state = fields(kinds(found, "state")[-1])
    assert state["waitingReason"] in ("ImagePullBackOff", "ErrImagePull")
    assert MISSING_IMAGE in state["waitingMessage"]


def test_pending_on_a_volume_quotes_the_mount_error(scenario: Scenario, tmp_path: Path) -> None:
    node = scenario.node
    absent = tmp_path / "no-such-file"
    pod = make_pod(container(volume_mounts=(VolumeMount(name="cfg", mount_path="/cfg"),)))
    pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, volumes=(
        Volume(name="cfg", host_path=HostPathVolumeSource(path=str(absent), type="File")),)))
    node.snapshot(pod)
    node.until("a mount failure", lambda: any(
        r.get("type") == "RecordEvent" and r["body"]["reason"] == "FailedMount"
        for r in scenario.messages()))

    state = kinds(scenario.explain(), "state")[-1]
    assert state.text.startswith("now Pending")
    mount = fields(state)["mountError"]
    assert mount.startswith('Unable to attach or mount volumes: unmounted volumes=[cfg]: ')
    assert str(absent) in mount


def test_admission_refusal_verbatim(scenario: Scenario) -> None:
    greedy = container(resources=ResourceRequirements(requests={"cpu": "1000"}))
    scenario.node.snapshot(make_pod(greedy))
    scenario.node.until("the rejection", lambda: any(
        r.get("type") == "PodRejected" for r in scenario.messages()))

    found = scenario.explain()
    (admission,) = kinds(found, "admission")
    refused = fields(admission)
    # What kubectl describe shows: Reason, and Message as upstream's rejectPod writes it.
    assert refused["admissionReason"] == "OutOfcpu"
    assert refused["admissionMessage"].startswith(
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: ")
    assert "Reason: OutOfcpu, Message: Pod was rejected: Node didn't" in admission.text
    state = fields(kinds(found, "state")[-1])
    assert state["admissionReason"] == "OutOfcpu"
    assert state["admissionMessage"] == refused["admissionMessage"]


def test_pending_on_an_init_container(scenario: Scenario) -> None:
    init = Container(name="setup", image=container().image, image_pull_policy="IfNotPresent")
    pod = make_pod(container())
    pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(
        pod.spec, init_containers=(init,)))
    scenario.node.snapshot(pod)
    scenario.node.until("the init container to run",
                        lambda: len(scenario.running()) == 1)
    scenario.node.advance(1.0)

    found = scenario.explain()
    state = kinds(found, "state")[-1]
    assert state.text.startswith("now Pending")
    assert "waiting for init container setup (1 of 1): running" in state.text
    waiting = fields(state)
    assert waiting["initContainer"] == "setup"
    assert waiting["waitingReason"] == "PodInitializing"


def test_explain_quotes_nothing_it_did_not_read(scenario: Scenario) -> None:
    """A container that runs: no evidence of exits, probes or back-offs is invented."""
    scenario.node.snapshot(make_pod(container()))
    scenario.wait_running()
    found: PodExplanation = scenario.explain()
    assert all(not f.evidence for f in found.findings), found.findings


def test_failed_pre_stop_hook_on_a_liveness_kill(scenario: Scenario) -> None:
    node = scenario.node
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("drain",))))
    node.snapshot(make_pod(container(liveness_probe=exec_probe("live", threshold=2),
                                     lifecycle=hook)))
    first = scenario.wait_running()
    node.fake.set_exec_result(None, ("drain",), ExecResult(
        stdout=b"", stderr=b"queue busy", exit_code=1))
    node.fake.set_exec_result(None, ("live",), ExecResult(
        stdout=b"stuck", stderr=b"", exit_code=1))
    scenario.wait_running([first])

    (restart,) = kinds(scenario.explain(), "restart")
    assert "its preStop hook failed" in restart.text
    killed = fields(restart)
    assert killed["hookMessage"] == "PreStopHook failed"
    assert killed["hookOutput"] == "queue busy" and killed["hookExitCode"] == 1
    assert 'its preStop hook failed (exit code 1: "queue busy")' in restart.text
    assert killed["probeMessage"] == "Liveness probe failed: stuck"
    assert seq_of(restart, "hookMessage") in restart.seqs
    assert seq_of(restart, "hookOutput") == seq_of(restart, "hookMessage")
    report = replay(read_trace(scenario.directory), KubeletWorld())
    assert report.ok, format_report(report)


def test_failed_pre_stop_hook_of_a_removed_pod(scenario: Scenario) -> None:
    """The event says only "PreStopHook failed", as upstream's (no secrets through
    events); what the hook said is in the trace beside it, and explain quotes it under
    the pod's deletion, naming the container."""
    node = scenario.node
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("drain",))))
    node.snapshot(make_pod(container(lifecycle=hook), container(name="side")))
    node.until("both to run", lambda: len(scenario.running()) == 2)
    node.fake.set_exec_result(None, ("drain",), ExecResult(
        stdout=b"draining 3 connections\n", stderr=b"peer refused", exit_code=7))
    node.snapshot()
    node.until("the pod to be gone", lambda: node.dispatch.ref(WORKER) is None)

    records = scenario.records()
    (event,) = [r for r in records if r.get("type") == "RecordEvent"
                and r["body"]["reason"] == "FailedPreStopHook"]
    assert event["body"]["message"] == "PreStopHook failed"
    (deletion,) = kinds(scenario.explain(), "deletion")
    assert ('app killed with 5 s grace, its preStop hook failed (exit code 7: '
            '"draining 3 connections\npeer refused")') in deletion.text
    hooked = fields(deletion)
    assert hooked["hookMessage"] == "PreStopHook failed"
    assert hooked["hookOutput"] == "draining 3 connections\npeer refused"
    assert hooked["hookExitCode"] == 7
    assert {e.container for e in deletion.evidence} == {"app"}
    assert event["id"] in deletion.seqs
    # The output comes with the event the pod worker sends: a replay sends it again.
    report = replay(read_trace(scenario.directory), KubeletWorld())
    assert report.ok, format_report(report)


def test_a_hook_event_traced_before_its_output_was_kept_still_reads() -> None:
    """An older trace's RecordEvent has no ``hook``: it reads, with no output to quote."""
    ref = {"kind": "Pod", "namespace": "default", "name": NAME, "uid": UID,
           "field_path": "spec.containers{app}"}
    body: dict[str, Any] = {"ref": ref, "type": "Warning", "reason": "FailedPreStopHook",
                            "message": "PreStopHook failed"}
    event = msgspec.convert(body, RecordEvent)
    assert event.hook_output is None
    # And encodes as it did (what a replay of an older trace compares).
    assert msgspec.json.decode(msgspec.json.encode(event)) == {
        **body, "ref": {**ref, "api_version": "v1", "resource_version": ""}}


def test_a_pod_s_state_quotes_every_unready_container(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(readiness_probe=exec_probe("ready-app")),
                           container(name="web", readiness_probe=exec_probe("ready-web"))))
    node.fake.set_exec_result(None, ("ready-app",), ExecResult(b"app: warming", b"", 3))
    node.fake.set_exec_result(None, ("ready-web",), ExecResult(b"web: no db", b"", 4))
    node.until("both probes to fail", lambda: {
        r["body"]["container_name"] for r in scenario.messages()
        if r.get("type") == "ProbeVerdict" and r["to"] == "status"} == {"app", "web"})
    node.advance(1.0)

    state = kinds(scenario.explain(), "state")[-1]
    assert state.text.startswith("now Running, not ready")
    by_container = _by_container(state)
    assert set(by_container) == {"app", "web"}
    assert by_container["app"]["probeOutput"] == "app: warming"
    assert by_container["app"]["probeExitCode"] == 3
    assert by_container["web"]["probeOutput"] == "web: no db"
    assert by_container["web"]["probeExitCode"] == 4
    assert [p["container"] for p in state.to_json()["evidence"]
            if p["field"] == "probeOutput"] == ["app", "web"]

    # In text, a finding about several containers names each on its evidence lines.
    lines = [str(evidence_line(piece, len(state.containers) > 1)) for piece in state.evidence]
    assert '            web: probeOutput: "web: no db"' in [line.split("  [")[0]
                                                          for line in lines]
    alone = str(evidence_line(state.evidence[0]))
    assert alone.startswith(f"{'':12}{state.evidence[0].field}: ")


def test_a_pending_pod_s_state_quotes_every_waiting_container(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(image="127.0.0.1:5000/nowhere/one:1"),
                           container(name="web", image="127.0.0.1:5000/nowhere/two:1")))
    node.until("both pulls to fail twice", lambda: node.fake.called("pull_image") >= 4)
    node.until("the sync to settle", lambda: True)

    state = kinds(scenario.explain(), "state")[-1]
    assert state.text.startswith("now Pending")
    by_container = _by_container(state)
    assert set(by_container) == {"app", "web"}
    for name, image in (("app", "one"), ("web", "two")):
        assert by_container[name]["waitingReason"] in ("ImagePullBackOff", "ErrImagePull")
        assert f"nowhere/{image}:1" in by_container[name]["waitingMessage"]


def _by_container(finding: Finding) -> dict[str, dict[str, Any]]:
    """The finding's evidence by container, then field (each once per container)."""
    out: dict[str, dict[str, Any]] = {}
    for piece in finding.evidence:
        assert piece.seq is not None, piece
        assert piece.field not in out.get(piece.container, {}), piece
        out.setdefault(piece.container, {})[piece.field] = piece.value
    return out
