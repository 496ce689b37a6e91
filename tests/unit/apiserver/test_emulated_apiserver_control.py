"""The emulated API server's control endpoint (tests/apiserver/control.py), driven by the
product's drill client (actors.app.drills.emulator.Emulator) as the API drills drive it:
faults, watch cuts and 410s, partitions, the request log, objects and the pod history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.drills.emulator import Emulator, EmulatorError, emulator_missing
from runtime import errors
from runtime.kubeapi.client import PODS, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    emu = Emulator(tmp_path_factory.mktemp("emu"), "n1")
    yield emu
    emu.stop()


@pytest.fixture
def client(emulator: Emulator) -> Iterator[KubeClient]:
    transport = Transport(load_kubeconfig(str(emulator.kubeconfig)), max_retries=0)
    yield KubeClient(transport)
    transport.close()
    emulator.clear_faults()


def _pod(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}


def test_the_emulator_runs_from_this_checkout() -> None:
    assert emulator_missing() is None


def test_emulated_apiserver_control_faults_and_request_log(emulator: Emulator,
                                                          client: KubeClient) -> None:
    emulator.create("pods", "default", _pod("a"))
    emulator.inject(verb="get", resource="pods", code=429, retry_after=2, times=1)
    with pytest.raises(errors.APITooManyRequests):
        client.get(PODS, "a", "default")
    assert client.get(PODS, "a", "default")["metadata"]["name"] == "a"
    gets = [r for r in emulator.requests() if r.verb == "get" and r.name == "a"]
    assert [r.fault_code for r in gets][-2:] == [429, 0]
    emulator.inject(code=500)
    with pytest.raises(errors.APIServerError):
        client.list(PODS, "default")
    emulator.clear_faults()
    assert client.list(PODS, "default").items


def test_emulated_apiserver_control_watches_compaction_and_partition(
        emulator: Emulator, client: KubeClient) -> None:
    listed = client.list(PODS, "default")
    emulator.create("pods", "default", _pod("w"))  # history past the list's version
    with client.watch(PODS, "default", resource_version=listed.resource_version,
                      timeout_seconds=30) as stream:
        events = iter(stream)
        assert next(events).object["metadata"]["name"] == "w"  # the watch is open
        assert emulator.open_watches("pods") >= 1
        assert emulator.compact() >= int(listed.resource_version)
        assert emulator.expire_watches("pods") >= 1
        with pytest.raises(errors.APIGone):
            next(events)
    gone = client.watch(PODS, "default", resource_version=listed.resource_version,
                        timeout_seconds=5)
    with gone, pytest.raises(errors.APIGone):  # the history before it is compacted
        next(iter(gone))
    emulator.partition()
    try:
        with pytest.raises(errors.APIUnreachable):
            client.list(PODS, "default")
        assert emulator.get("pods", "default", "a") is not None  # control still answers
    finally:
        emulator.heal()
    assert client.list(PODS, "default").items


def test_emulated_apiserver_control_pod_history_and_errors(emulator: Emulator) -> None:
    emulator.create("pods", "default", _pod("h"))
    history = [h for h in emulator.pod_history() if h["name"] == "h"]
    assert history and history[0]["type"] == "ADDED" and history[0]["uid"]
    assert emulator.get("pods", "default", "nope") is None
    with pytest.raises(EmulatorError, match="unknown fault field"):
        emulator.call("POST", "/faults", {"colour": "red"})
    with pytest.raises(EmulatorError, match="no resource"):
        emulator.call("GET", "/objects/widgets/default/x")


def test_emulator_refuses_clearly_without_the_source_tree(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import actors.app.drills.emulator as module

    monkeypatch.setattr(module, "code_root", lambda: tmp_path)
    missing = module.emulator_missing()
    assert missing is not None and "source checkout" in missing
    with pytest.raises(EmulatorError, match="source checkout"):
        module.Emulator(tmp_path / "w", "n1")
