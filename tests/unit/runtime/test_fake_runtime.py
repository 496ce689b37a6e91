"""FakeRuntime behaves like containerd where the kubelet can tell, and its hooks work."""

from __future__ import annotations

import threading

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerFilter,
    ContainerMetadata,
    ContainerState,
    ExecResult,
    ImageSpec,
    LinuxContainerResources,
    NamespaceMode,
    PodSandboxConfig,
    PodSandboxMetadata,
    SandboxFilter,
    SandboxState,
)
from runtime.errors import CRIError, CRINotFound, CRIUnavailable
from runtime.ids import ContainerID, SandboxID
from runtime.testing.fake_runtime import (
    STOP_EXIT_CODE,
    Call,
    FakeRuntime,
    image_id_for,
    normalize_image_ref,
)

BUSYBOX = "localhost:5000/busybox:1.35"


def sandbox_config(
    name: str = "web", attempt: int = 0, network: NamespaceMode = NamespaceMode.POD
) -> PodSandboxConfig:
    return PodSandboxConfig(
        metadata=PodSandboxMetadata(
            name=name, uid=f"uid-{name}", namespace="default", attempt=attempt
        ),
        log_directory=f"/var/log/pods/default_{name}_uid-{name}",
        labels={"io.kubernetes.pod.uid": f"uid-{name}", "io.kubernetes.pod.name": name},
        network_mode=network,
    )


def container_config(name: str = "app", attempt: int = 0, image: str = BUSYBOX) -> ContainerConfig:
    return ContainerConfig(
        metadata=ContainerMetadata(name=name, attempt=attempt),
        image=ImageSpec(image),
        labels={"io.kubernetes.container.name": name},
        log_path=f"{name}/{attempt}.log",
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_000.0)


@pytest.fixture
def fake(clock: FakeClock) -> FakeRuntime:
    return FakeRuntime(clock, images=[BUSYBOX])


def run_pod(fake: FakeRuntime, name: str = "web") -> tuple[SandboxID, ContainerID]:
    config = sandbox_config(name)
    sid = fake.run_pod_sandbox(config)
    cid = fake.create_container(sid, container_config(), config)
    fake.start_container(cid)
    return sid, cid


def test_pod_lifecycle_like_containerd(fake: FakeRuntime, clock: FakeClock) -> None:
    config = sandbox_config()
    sid = fake.run_pod_sandbox(config)
    assert sid == "sandbox-1"
    status = fake.pod_sandbox_status(sid)
    assert (status.state, status.ip, status.created_at) == (
        SandboxState.READY,
        "10.88.0.2",
        1_000.0,
    )
    assert status.labels == config.labels

    clock.step(1)
    cid = fake.create_container(sid, container_config(), config)
    assert cid == "container-1"
    created = fake.container_status(cid)
    assert (created.state, created.created_at, created.started_at) == (
        ContainerState.CREATED,
        1_001.0,
        0.0,
    )
    assert created.image_ref == image_id_for(BUSYBOX)
    assert created.log_path == "/var/log/pods/default_web_uid-web/app/0.log"

    clock.step(1)
    fake.start_container(cid)
    running = fake.container_status(cid)
    assert (running.state, running.started_at) == (ContainerState.RUNNING, 1_002.0)

    clock.step(1)
    fake.stop_container(cid, timeout=30)
    stopped = fake.container_status(cid)
    assert (stopped.state, stopped.exit_code, stopped.reason, stopped.finished_at) == (
        ContainerState.EXITED,
        STOP_EXIT_CODE,
        "Error",
        1_003.0,
    )
    fake.stop_container(cid, timeout=30)  # idempotent
    fake.remove_container(cid)
    fake.remove_container(cid)  # idempotent
    with pytest.raises(CRINotFound):
        fake.container_status(cid)

    fake.stop_pod_sandbox(sid)
    stopped_sb = fake.pod_sandbox_status(sid)
    assert (stopped_sb.state, stopped_sb.ip) == (SandboxState.NOTREADY, "")
    fake.remove_pod_sandbox(sid)
    fake.remove_pod_sandbox(sid)  # idempotent
    with pytest.raises(CRINotFound):
        fake.pod_sandbox_status(sid)
    assert fake.snapshot().sandboxes == ()


def test_host_network_sandbox_has_no_ip_and_ips_count_up(fake: FakeRuntime) -> None:
    host = fake.run_pod_sandbox(sandbox_config("host", network=NamespaceMode.NODE))
    assert fake.pod_sandbox_status(host).ip == ""
    assert fake.pod_sandbox_status(host).network_mode is NamespaceMode.NODE
    other = fake.run_pod_sandbox(sandbox_config("other"))
    assert (other, fake.pod_sandbox_status(other).ip) == ("sandbox-2", "10.88.0.3")


def test_stop_pod_sandbox_stops_its_containers(fake: FakeRuntime) -> None:
    sid, cid = run_pod(fake)
    other_sid, other_cid = run_pod(fake, "other")
    fake.stop_pod_sandbox(sid)
    assert fake.container_status(cid).state is ContainerState.EXITED
    assert fake.container_status(cid).exit_code == 137
    assert fake.container_status(other_cid).state is ContainerState.RUNNING
    with pytest.raises(CRIError, match="not ready"):
        fake.create_container(sid, container_config("late"), sandbox_config())
    fake.remove_pod_sandbox(sid)
    assert [c.id for c in fake.list_containers()] == [other_cid]
    assert fake.container_sandbox(other_cid) == other_sid


def test_create_needs_a_present_image_and_a_known_sandbox(fake: FakeRuntime) -> None:
    sid = fake.run_pod_sandbox(sandbox_config())
    with pytest.raises(CRINotFound, match="not found"):
        fake.create_container(sid, container_config(image="nginx:1"), sandbox_config())
    with pytest.raises(CRINotFound):
        fake.create_container(SandboxID("nope"), container_config(), sandbox_config())
    cid = fake.create_container(sid, container_config(), sandbox_config())
    with pytest.raises(CRIError, match="reserved"):
        fake.create_container(sid, container_config(), sandbox_config())
    fake.remove_container(cid)
    fake.create_container(sid, container_config(), sandbox_config())  # name free again
    with pytest.raises(CRIError, match="reserved"):
        fake.run_pod_sandbox(sandbox_config())
    fake.run_pod_sandbox(sandbox_config(attempt=1))


def test_start_only_from_created(fake: FakeRuntime) -> None:
    _, cid = run_pod(fake)
    with pytest.raises(CRIError, match="RUNNING"):
        fake.start_container(cid)


def test_exit_container_and_preset_stop_code(fake: FakeRuntime, clock: FakeClock) -> None:
    _, cid = run_pod(fake)
    clock.step(5)
    fake.exit_container(cid, 0)
    done = fake.container_status(cid)
    assert (done.state, done.exit_code, done.reason, done.finished_at) == (
        ContainerState.EXITED,
        0,
        "Completed",
        1_005.0,
    )
    _, oom = run_pod(fake, "oom")
    fake.exit_container(oom, 137, reason="OOMKilled")
    assert fake.container_status(oom).reason == "OOMKilled"
    fake.stop_container(oom, 10)  # already exited: unchanged
    assert fake.container_status(oom).exit_code == 137

    _, graceful = run_pod(fake, "graceful")
    fake.set_stop_exit_code(graceful, 0, "Completed")
    fake.stop_container(graceful, 30)
    assert (fake.container_status(graceful).exit_code, fake.container_status(graceful).reason) == (
        0,
        "Completed",
    )


def test_list_filters(fake: FakeRuntime) -> None:
    web_sid, web_cid = run_pod(fake, "web")
    db_sid, db_cid = run_pod(fake, "db")
    fake.stop_container(db_cid, 0)

    by_label = fake.list_pod_sandbox(SandboxFilter(label_selector={"io.kubernetes.pod.name": "db"}))
    assert [s.id for s in by_label] == [db_sid]
    assert [s.id for s in fake.list_pod_sandbox(SandboxFilter(id=web_sid))] == [web_sid]
    fake.stop_pod_sandbox(web_sid)
    ready = fake.list_pod_sandbox(SandboxFilter(state=SandboxState.READY))
    assert [s.id for s in ready] == [db_sid]
    assert len(fake.list_pod_sandbox()) == 2

    running = fake.list_containers(ContainerFilter(state=ContainerState.RUNNING))
    assert running == ()
    assert [c.id for c in fake.list_containers(ContainerFilter(pod_sandbox_id=db_sid))] == [db_cid]
    assert [c.id for c in fake.list_containers(ContainerFilter(id=web_cid))] == [web_cid]
    selector = {"io.kubernetes.container.name": "app"}
    assert len(fake.list_containers(ContainerFilter(label_selector=selector))) == 2
    none = fake.list_containers(
        ContainerFilter(label_selector={"io.kubernetes.container.name": "x"})
    )
    assert none == ()


def test_images_pull_and_remove(fake: FakeRuntime) -> None:
    assert fake.image_status(ImageSpec("nginx")) is None
    with pytest.raises(CRIError, match="not found") as info:
        fake.pull_image(ImageSpec("nginx"))
    assert info.value.method == "PullImage"

    fake.make_pullable("nginx")
    assert fake.image_status(ImageSpec("nginx:latest")) is None  # pullable, not present yet
    ref = fake.pull_image(ImageSpec("nginx"))
    assert ref == image_id_for("nginx:latest")
    image = fake.image_status(ImageSpec("nginx:latest"))
    assert image is not None and image.repo_tags == ("nginx:latest",)
    assert fake.image_status(ImageSpec(ref)) == image  # by id too
    assert fake.pull_image(ImageSpec(BUSYBOX)) == image_id_for(BUSYBOX)  # present: fine

    assert {i.id for i in fake.list_images()} == {ref, image_id_for(BUSYBOX)}
    assert fake.list_images(ImageSpec("nginx")) == (image,)
    (fs,) = fake.image_fs_info()
    assert (fs.used_bytes, fs.inodes_used) == (2_000_000, 2)

    fake.remove_image(ImageSpec("nginx"))
    fake.remove_image(ImageSpec("nginx"))  # idempotent
    assert not fake.has_image("nginx")
    assert normalize_image_ref("localhost:5000/pause") == "localhost:5000/pause:latest"


def test_exec_results(fake: FakeRuntime) -> None:
    _, cid = run_pod(fake)
    _, other = run_pod(fake, "other")
    assert fake.exec_sync(cid, ("true",), 1.0) == ExecResult(b"", b"", 0)
    fake.set_exec_result(None, ("cat",), ExecResult(b"any", b"", 0))
    fake.set_exec_result(None, ("cat", "/ready"), ExecResult(b"", b"no", 1))
    fake.set_exec_result(cid, ("cat",), ExecResult(b"mine", b"", 0))
    assert fake.exec_sync(cid, ("cat", "/ready"), 1.0).stdout == b"mine"  # container first
    assert fake.exec_sync(other, ("cat", "/ready"), 1.0).exit_code == 1  # longest prefix
    assert fake.exec_sync(other, ("cat", "/x"), 1.0).stdout == b"any"
    fake.stop_container(cid, 0)
    with pytest.raises(CRIError, match="not running"):
        fake.exec_sync(cid, ("true",), 1.0)


def test_stats_resources_and_status(fake: FakeRuntime) -> None:
    _, cid = run_pod(fake)
    assert fake.container_stats(cid).cpu_usage_core_nanoseconds is None
    fake.set_stats(cid, cpu_usage_core_nanoseconds=5, memory_working_set_bytes=7)
    (stats,) = fake.list_container_stats()
    assert (
        stats.id,
        stats.name,
        stats.cpu_usage_core_nanoseconds,
        stats.memory_working_set_bytes,
    ) == (
        cid,
        "app",
        5,
        7,
    )
    res = LinuxContainerResources(cpu_shares=512)
    fake.update_container_resources(cid, res)
    assert fake.container_resources(cid) == res
    fake.reopen_container_log(cid)

    ready = fake.status()
    assert (
        ready.condition("RuntimeReady") is not None and ready.condition("NetworkReady") is not None
    )
    fake.set_conditions(network_ready=False)
    network = fake.status().condition("NetworkReady")
    assert network is not None and not network.status
    assert fake.version().runtime_api_version == "v1"


def test_calls_are_recorded(fake: FakeRuntime) -> None:
    sid, cid = run_pod(fake)
    fake.stop_container(cid, 30)
    assert fake.called("run_pod_sandbox") == 1
    assert fake.called("stop_container") == 1
    assert fake.calls_to("stop_container") == [Call("stop_container", (cid, 30))]
    assert [c.method for c in fake.calls] == [
        "run_pod_sandbox",
        "create_container",
        "start_container",
        "stop_container",
    ]
    fake.snapshot()
    fake.sandbox_config(sid)  # hooks do not record
    assert len(fake.calls) == 4
    fake.clear_calls()
    assert fake.calls == []


def test_injected_failures(fake: FakeRuntime) -> None:
    down = CRIUnavailable("RunPodSandbox", "connection refused", "UNAVAILABLE")
    fake.fail("run_pod_sandbox", down, times=2)
    for _ in range(2):
        with pytest.raises(CRIUnavailable):
            fake.run_pod_sandbox(sandbox_config())
    assert fake.snapshot().sandboxes == ()  # a failed call changes nothing
    sid = fake.run_pod_sandbox(sandbox_config())
    assert fake.called("run_pod_sandbox") == 3

    fake.fail_always("list_containers", CRIError("ListContainers", "boom"))
    for _ in range(3):
        with pytest.raises(CRIError, match="boom"):
            fake.list_containers()
    fake.clear_failures("list_containers")
    assert fake.list_containers() == ()

    fake.fail("stop_pod_sandbox", CRIError("StopPodSandbox", "once"))
    fake.fail_always("remove_pod_sandbox", CRIError("RemovePodSandbox", "always"))
    fake.clear_failures()
    fake.stop_pod_sandbox(sid)
    fake.remove_pod_sandbox(sid)

    with pytest.raises(ValueError, match="not a CRI service method"):
        fake.fail("run_pod", down)


def test_thread_safe_under_parallel_pods(clock: FakeClock) -> None:
    fake = FakeRuntime(clock, images=[BUSYBOX])
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                name = f"pod-{n}-{i}"
                sid, _ = run_pod(fake, name)
                fake.stop_pod_sandbox(sid)
                fake.remove_pod_sandbox(sid)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert fake.snapshot().sandboxes == () and fake.snapshot().containers == ()
    assert fake.called("run_pod_sandbox") == 80
    ids = {c.args[0] for c in fake.calls_to("remove_pod_sandbox")}
    assert ids == {f"sandbox-{i}" for i in range(1, 81)}
