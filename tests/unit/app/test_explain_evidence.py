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
    json = exit_.to_json()["evidence"]
    assert json["exitCode"]["value"] == 42 and json["exitCode"]["seq"] == seq_of(exit_, "exitCode")


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
    assert refused["admissionReason"] == "OutOfcpu"
    assert refused["admissionMessage"].startswith(
        "Node didn't have enough resource: cpu, requested: 1000000, used: ")
    assert fields(kinds(found, "state")[-1])["admissionReason"] == "OutOfcpu"


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
    assert killed["probeMessage"] == "Liveness probe failed: stuck"
    assert seq_of(restart, "hookMessage") in restart.seqs
