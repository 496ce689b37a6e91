"""``kubelet-actors explain`` on traces recorded from the kubelet's tree on the fake runtime.

Each test runs one scenario (RecordedNode: the real actors, the fake CRI runtime, virtual
time, events recorded), reads the trace back and checks what explain says: the restart
numbers, exit codes, probe outputs, thresholds, graces, delays and reasons, and that every
sentence names messages the trace holds.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.app.tools.explain import PodExplanation, explain
from actors.app.tools.explain.model import Finding
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.core.trace.writer import encode
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ExecResult
from runtime.errors import CRIError
from runtime.pod.generated import ExecAction, Lifecycle, LifecycleHandler
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec, Probe
from tests.traces.scenarios import IMAGE, RecordedNode

pytestmark = pytest.mark.timeout(120)

UID = "u-explain"
NAME = "web"
WORKER = names.worker_name(UID)


def make_pod(*containers: Container, policy: str = "Always", grace: int = 5,
             deadline: int | None = None, node_selector: dict[str, str] | None = None) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=NAME, namespace="default", uid=UID,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=containers, restart_policy=policy,
                     termination_grace_period_seconds=grace,
                     active_deadline_seconds=deadline,
                     node_selector=node_selector or {}))


def container(**fields: Any) -> Container:
    return Container(name=fields.pop("name", "app"), image=fields.pop("image", IMAGE),
                     image_pull_policy=fields.pop("image_pull_policy", "IfNotPresent"),
                     **fields)


def exec_probe(command: str, threshold: int = 3, period: int = 1) -> Probe:
    return Probe(exec=ExecAction(command=(command,)), period_seconds=period,
                 failure_threshold=threshold)


FAIL = ExecResult(stdout=b"HTTP 500 from /healthz", stderr=b"", exit_code=1)


class Scenario:
    """A recorded node plus where its trace goes; ``explain`` reads the trace back."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.scratch = Path(tempfile.mkdtemp(prefix="explain-"))
        self.node = RecordedNode(directory, self.scratch)
        self.closed = False

    def __enter__(self) -> Scenario:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.node.settle()  # what is in flight finishes and is recorded
            self.node.close()
            shutil.rmtree(self.scratch, ignore_errors=True)

    def records(self) -> list[dict[str, Any]]:
        self.close()
        return read_trace(self.directory).records

    def messages(self) -> list[dict[str, Any]]:
        """The messages recorded so far (none while the trace cannot be read yet)."""
        self.node.writer.flush()
        self.node.settle()
        try:
            return [r for r in read_trace(self.directory).records if r["k"] == "msg"]
        except Exception:
            return []

    def explain(self, container: str | None = None) -> PodExplanation:
        records = self.records()
        (found,) = explain(records, NAME, container=container)
        ids = {r["id"] for r in records if r["k"] == "msg"}
        for finding in found.findings:
            assert finding.seqs, finding
            assert set(finding.seqs) <= ids, finding  # every sentence names real messages
        return found

    def running(self) -> list[str]:
        return [str(c) for c in self.node.running(UID)]

    def wait_running(self, other_than: list[str] | None = None) -> str:
        self.node.until("the container to run", lambda: len(self.running()) == 1
                        and self.running() != (other_than or []))
        return self.running()[0]


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[Scenario]:
    with Scenario(tmp_path / "trace") as made:
        yield made


def kinds(found: PodExplanation, kind: str) -> list[Finding]:
    return [f for f in found.findings if f.kind == kind]


# Scenarios this module and test_explain_evidence both record, each returning what
# explain says of it (the one checks the sentences, the other the evidence).

MISSING_IMAGE = "127.0.0.1:5000/nowhere/missing:1"


def failed_post_start_hook(scenario: Scenario) -> PodExplanation:
    """A postStart hook exits 2 with "cache not found": the container is killed and
    created again."""
    node = scenario.node
    hook = Lifecycle(post_start=LifecycleHandler(exec=ExecAction(command=("warmup",))))
    node.fake.set_exec_result(None, ("warmup",), ExecResult(
        stdout=b"", stderr=b"cache not found", exit_code=2))
    node.snapshot(make_pod(container(lifecycle=hook)))
    node.until("a restart after the hook failed",
               lambda: node.fake.called("create_container") >= 2)
    node.until("the sync to settle", lambda: True)
    return scenario.explain()


def failed_pulls(scenario: Scenario) -> PodExplanation:
    """MISSING_IMAGE fails to pull twice, with the back-off after them."""
    node = scenario.node
    node.snapshot(make_pod(container(image=MISSING_IMAGE)))
    node.until("two pull attempts and a back-off",
               lambda: node.fake.called("pull_image") >= 2)
    node.until("the back-off after them", lambda: True)
    return scenario.explain()


def failing_readiness(scenario: Scenario, exit_code: int) -> PodExplanation:
    """A readiness exec probe (threshold 2) passes, then fails twice with
    "warming up: 40%" and ``exit_code``."""
    node = scenario.node
    node.snapshot(make_pod(container(readiness_probe=exec_probe("ready", threshold=2))))
    scenario.wait_running()
    node.until("ready", lambda: node.fake.called("exec_sync") >= 1)
    node.advance(2.0)
    node.fake.set_exec_result(None, ("ready",), ExecResult(
        stdout=b"warming up: 40%", stderr=b"", exit_code=exit_code))
    node.until("two failures", lambda: node.fake.called("exec_sync") >= 4)
    node.advance(2.0)
    return scenario.explain()


def test_crash_loop_tells_exit_codes_back_offs_and_restart_numbers(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container()))
    first = scenario.wait_running()
    node.fake.exit_container(first, 3)  # type: ignore[arg-type]
    second = scenario.wait_running([first])
    node.fake.exit_container(second, 2)  # type: ignore[arg-type]
    third = scenario.wait_running([second])
    node.fake.exit_container(third, 1)  # type: ignore[arg-type]
    scenario.wait_running([third])

    found = scenario.explain()
    restarts = kinds(found, "restart")
    assert [f.text.split(" of app at ")[0] for f in restarts] == [
        "restart 1", "restart 2", "restart 3"]
    assert "exited with code 3 (Error)" in restarts[0].text
    assert "no back-off" in restarts[0].text  # the first restart does not wait
    assert "exited with code 2 (Error)" in restarts[1].text
    assert "back-off 10 s" in restarts[1].text
    assert "exited with code 1 (Error)" in restarts[2].text
    assert "back-off 20 s" in restarts[2].text
    assert all(f.container == "app" for f in restarts)
    assert kinds(found, "state")[-1].text.startswith("now Running, ready")


def test_liveness_kill_tells_probe_output_threshold_and_grace(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(liveness_probe=exec_probe("live", threshold=3)),
                           grace=7))
    first = scenario.wait_running()
    node.fake.set_exec_result(None, ("live",), FAIL)
    scenario.wait_running([first])

    (restart,) = kinds(scenario.explain(), "restart")
    # What explain reads is what the kubelet did: the trace replays without divergence.
    report = replay(read_trace(scenario.directory), KubeletWorld())
    assert report.ok, format_report(report)
    assert restart.text.startswith("restart 1 of app at ")
    assert "liveness probe failed 3 times" in restart.text
    assert '"HTTP 500 from /healthz"' in restart.text
    assert "threshold 3" in restart.text
    assert "container killed with 7 s grace" in restart.text
    assert "no back-off" in restart.text  # its first restart
    assert len(restart.seqs) >= 5  # three failed attempts, the verdict, the kill, the start


def test_liveness_kill_with_a_probe_grace_and_a_pre_stop_hook(scenario: Scenario) -> None:
    node = scenario.node
    probe = msgspec.structs.replace(exec_probe("live", threshold=2),
                                    termination_grace_period_seconds=4)
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("drain",))))
    node.snapshot(make_pod(container(liveness_probe=probe, lifecycle=hook), grace=30))
    first = scenario.wait_running()
    node.fake.set_exec_result(None, ("live",), FAIL)
    scenario.wait_running([first])

    (restart,) = kinds(scenario.explain(), "restart")
    assert "liveness probe failed 2 times" in restart.text
    assert "threshold 2" in restart.text
    assert "killed with 4 s grace (preStop took" in restart.text


def test_failed_post_start_hook(scenario: Scenario) -> None:
    found = failed_post_start_hook(scenario)
    restarts = kinds(found, "restart")
    assert restarts, found.findings
    assert "its postStart hook failed" in restarts[0].text
    assert 'its postStart hook failed (exit code 2: "cache not found")' in restarts[0].text
    assert "killed with 5 s grace" in restarts[0].text


def test_image_pull_back_off_and_why_it_is_still_pending(scenario: Scenario) -> None:
    found = failed_pulls(scenario)
    (image,) = kinds(found, "image")
    assert f'image "{MISSING_IMAGE}" of container app' in image.text
    assert "ErrImagePull: Failed to pull image" in image.text
    assert "ImagePullBackOff" in image.text
    assert "back-off 10 s" in image.text
    assert "still failing" in image.text
    state = kinds(found, "state")[-1]
    assert state.text.startswith("now Pending")
    assert "app waiting: ImagePullBackOff" in state.text or "app waiting: ErrImagePull" in \
        state.text


def test_sandbox_failures_keep_it_pending(scenario: Scenario) -> None:
    node = scenario.node
    node.fake.fail_always("run_pod_sandbox", CRIError(
        "RunPodSandbox", "failed to setup network for sandbox: no IP addresses available"))
    node.snapshot(make_pod(container()))
    node.until("two sandbox attempts", lambda: node.fake.called("run_pod_sandbox") >= 2)

    state = kinds(scenario.explain(), "state")[-1]
    assert state.text.startswith("now Pending")
    assert "creating its sandbox failed" in state.text
    assert "no IP addresses available" in state.text
    assert "app waiting: ContainerCreating" in state.text


def test_admission_failure(scenario: Scenario) -> None:
    scenario.node.snapshot(make_pod(container(), node_selector={"disk": "ssd"}))
    scenario.node.until("the rejection", lambda: any(
        r.get("type") == "PodRejected" for r in scenario.messages()))

    found = scenario.explain()
    (admission,) = kinds(found, "admission")
    assert "rejected at admission" in admission.text
    assert "NodeAffinity" in admission.text
    assert "node(s) didn't match Pod's node affinity/selector" in admission.text
    assert kinds(found, "state")[-1].text == "now Failed: rejected at admission (NodeAffinity)"


def test_active_deadline_exceeded(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(), deadline=3))
    scenario.wait_running()
    node.until("the deadline's kill", lambda: node.fake.called("stop_pod_sandbox") >= 1)

    found = scenario.explain()
    (deadline,) = kinds(found, "deadline")
    assert "activeDeadlineSeconds (3 s) exceeded" in deadline.text
    assert "Pod was active on the node longer than the specified deadline" in deadline.text
    assert "app killed with 5 s grace" in deadline.text
    assert kinds(found, "state")[-1].text.startswith("now Failed: DeadlineExceeded")


def test_removed_from_its_source(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(), grace=6))
    scenario.wait_running()
    node.snapshot()
    node.until("the pod to be gone", lambda: node.dispatch.ref(WORKER) is None)

    found = scenario.explain()
    (deletion,) = kinds(found, "deletion")
    assert "removed from its source (file)" in deletion.text
    assert "app killed with 6 s grace" in deletion.text
    assert "terminated at" in deletion.text
    assert kinds(found, "state")[-1].text.startswith("now gone")


def test_deleted_through_the_api_with_its_grace(scenario: Scenario) -> None:
    node = scenario.node
    pod = make_pod(container(), grace=30)
    node.snapshot(pod)
    scenario.wait_running()
    deleting = msgspec.structs.replace(pod, metadata=msgspec.structs.replace(
        pod.metadata, deletion_timestamp="2026-01-01T00:00:00Z",
        deletion_grace_period_seconds=3))
    node.snapshot(deleting)
    node.until("the kill", lambda: node.fake.called("stop_container") >= 1)

    (deletion,) = kinds(scenario.explain(), "deletion")
    assert "deleted through the API" in deletion.text
    assert "grace period of 3 s" in deletion.text
    assert "app killed with 3 s grace" in deletion.text


def _append(records: list[dict[str, Any]], type_: str, to: str, body: object,
            after: dict[str, Any]) -> dict[str, Any]:
    record = {"k": "msg", "id": max(r.get("id", 0) for r in records if r["k"] == "msg") + 1,
              "from": "eviction", "seq": 1, "to": to, "inc": 0, "parent": None,
              "dead": False, "type": type_, "body": msgspec.json.decode(encode(body)),
              "t": after["t"] + 1.0, "m": after["m"] + 1.0}
    records.append(record)
    return record


def test_evicted_status_is_told_generically(scenario: Scenario) -> None:
    """No eviction manager records here yet: a pod worker's report and a cluster status
    with reason Evicted are added to a recorded trace, as one would send them."""
    from actors.kubelet.cluster.messages import PodStatusChanged
    from actors.kubelet.messages import PodObserved
    from runtime.status.types import PodStatus

    node = scenario.node
    node.snapshot(make_pod(container()))
    scenario.wait_running()
    records = scenario.records()
    last = next(r for r in reversed(records) if r["k"] == "msg" and r["type"] == "PodObserved"
                and r["to"] == "status")
    observed = msgspec.convert(last["body"], PodObserved)
    message = "The node was low on resource: memory. Threshold quantity: 100Mi."
    evicted = msgspec.structs.replace(observed, failed_reason="Evicted", failed_message=message)
    added = _append(records, "PodObserved", "status", evicted, records[-1])
    found, = explain(records, NAME)
    (eviction,) = kinds(found, "eviction")
    assert eviction.text.startswith("the pod was evicted at")
    assert message in eviction.text
    assert added["id"] in eviction.seqs
    assert kinds(found, "state")[-1].text.startswith("now Failed: Evicted")

    status = PodStatus(phase="Failed", reason="Evicted", message=message)
    records = [r for r in records if r is not added]
    added = _append(records, "PodStatusChanged", "api/pods",
                    PodStatusChanged(observed.pod, status), records[-1])
    found, = explain(records, NAME)
    (eviction,) = kinds(found, "eviction")
    assert "Failed" in eviction.text and message in eviction.text
    assert eviction.seqs == (added["id"],)


def test_why_not_ready_readiness_probe(scenario: Scenario) -> None:
    found = failing_readiness(scenario, exit_code=1)
    assert kinds(found, "ready"), found.findings
    not_ready = [f for f in kinds(found, "not-ready") if "probe failed" in f.text]
    assert not_ready, found.findings
    assert "readiness probe failed 2 times" in not_ready[-1].text
    assert '"warming up: 40%"' in not_ready[-1].text
    assert "threshold 2" in not_ready[-1].text
    state = kinds(found, "state")[-1]
    assert state.text.startswith("now Running, not ready")
    assert "readiness probe failing since" in state.text
    assert "warming up: 40%" in state.text


def test_container_filter_keeps_the_pods_own_findings(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container(), grace=6))
    scenario.wait_running()
    node.snapshot()
    node.until("the pod to be gone", lambda: node.dispatch.ref(WORKER) is None)
    found = scenario.explain(container="other")
    assert {f.container for f in found.findings} == {""}
    assert kinds(found, "deletion")



def test_pending_while_its_image_is_pulled(scenario: Scenario) -> None:
    """The fake runtime pulls at once: the trace is cut where the pull began, as the
    trace of a daemon still pulling ends there."""
    node = scenario.node
    image = "127.0.0.1:5000/slow/big:1"
    node.fake.make_pullable(image)
    node.snapshot(make_pod(container(image=image, image_pull_policy="Always")))
    scenario.wait_running()
    records = scenario.records()
    pulling = next(r for r in records if r["k"] == "msg" and r["type"] == "RecordEvent"
                   and r["body"]["reason"] == "Pulling")
    cut = records[:records.index(pulling) + 1]
    (found,) = explain(cut, NAME)
    state = kinds(found, "state")[-1]
    assert state.text.startswith("now Pending: admitted, its first sync has not finished")
    assert f'app: pulling image "{image}" since' in state.text
    assert pulling["id"] in state.seqs

    (found,) = explain(records, NAME)  # the whole trace: pulled, running
    assert kinds(found, "state")[-1].text.startswith("now Running, ready")


def test_startup_probe_kill(scenario: Scenario) -> None:
    node = scenario.node
    node.fake.set_exec_result(None, ("started",), ExecResult(
        stdout=b"not yet", stderr=b"", exit_code=1))
    node.snapshot(make_pod(container(startup_probe=exec_probe("started", threshold=2))))
    first = scenario.wait_running()
    scenario.wait_running([first])

    (restart,) = kinds(scenario.explain(), "restart")[:1]
    assert restart.text.startswith("restart 1 of app at ")
    assert 'startup probe failed 2 times ("not yet", threshold 2, every 1 s)' in restart.text
    assert "container killed with 5 s grace" in restart.text


def test_restart_after_the_sandbox_died(scenario: Scenario) -> None:
    node = scenario.node
    node.snapshot(make_pod(container()))
    first = scenario.wait_running()
    (sandbox,) = node.fake.list_pod_sandbox()
    node.fake.stop_pod_sandbox(sandbox.id)  # the sandbox dies under the kubelet
    scenario.wait_running([first])

    found = scenario.explain()
    (restart,) = kinds(found, "restart")
    assert restart.text.startswith("restart 1 of app at ")
    assert "exited with code 137 (Error), the pod's sandbox changed and was re-created, " \
        "no back-off" in restart.text
