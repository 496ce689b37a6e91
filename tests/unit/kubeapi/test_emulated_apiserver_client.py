"""The kubelet's API client against the emulated API server over real HTTPS: the verbs,
paging, watches, the three patch types, deletion with grace and preconditions, and upstream
Status errors mapped into the project's error hierarchy."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime import errors
from runtime.clock import FakeClock
from runtime.kubeapi.client import CONFIGMAPS, NAMESPACES, NODES, PODS, SECRETS, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.strategicpatch import pod_status_patch
from runtime.kubeapi.transport import RateLimiter, Transport
from tests.apiserver import EmulatedAPIServer


def _pod(name: str, node: str = "n1") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


def test_emulated_apiserver_get_create_update(client: KubeClient) -> None:
    created = client.create(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "1"}},
                            "default")
    assert created["metadata"]["uid"]
    got = client.get(CONFIGMAPS, "a", "default")
    assert got["data"] == {"k": "1"}
    got["data"]["k"] = "2"
    updated = client.update(CONFIGMAPS, got, "default")
    assert updated["data"]["k"] == "2"
    assert int(updated["metadata"]["resourceVersion"]) > int(got["metadata"]["resourceVersion"])


def test_emulated_apiserver_errors_map_to_the_project_hierarchy(
        client: KubeClient, server: EmulatedAPIServer) -> None:
    with pytest.raises(errors.APINotFound) as nf:
        client.get(CONFIGMAPS, "missing", "default")
    assert nf.value.code == 404 and nf.value.reason == "NotFound"
    assert 'configmaps "missing" not found' in str(nf.value)
    client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "default")
    with pytest.raises(errors.APIAlreadyExists):
        client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "default")
    stale = client.get(CONFIGMAPS, "a", "default")
    client.update(CONFIGMAPS, {**stale, "data": {"x": "1"}}, "default")
    with pytest.raises(errors.APIConflict) as conflict:
        client.update(CONFIGMAPS, {**stale, "data": {"x": "2"}}, "default")
    assert conflict.value.code == 409 and conflict.value.reason == "Conflict"
    with pytest.raises(errors.APIInvalid) as invalid:
        client.create(CONFIGMAPS, {"metadata": {"name": "Bad_Name"}}, "default")
    assert invalid.value.code == 422
    server.faults.inject(verb="get", resource="configmaps", code=429, retry_after=3, times=1)
    client.transport.max_retries = 0  # here: the error itself, not client-go's retries
    with pytest.raises(errors.APITooManyRequests) as busy:
        client.get(CONFIGMAPS, "a", "default")
    assert busy.value.retry_after == 3.0
    server.faults.inject(verb="get", resource="configmaps", code=500, times=1)
    with pytest.raises(errors.APIServerError) as internal:
        client.get(CONFIGMAPS, "a", "default")
    assert internal.value.code == 500
    assert isinstance(internal.value, errors.KubeletError)


def test_emulated_apiserver_forbidden_and_unreachable(server: EmulatedAPIServer,
                                                      client: KubeClient) -> None:
    server.authorizer = lambda attrs: attrs.resource != "secrets"
    with pytest.raises(errors.APIForbidden) as forbidden:
        client.list(SECRETS, "default")
    assert forbidden.value.code == 403
    server.partition()
    with pytest.raises(errors.APIUnreachable) as cut:
        client.get(NODES, "n1")
    assert isinstance(cut.value.__cause__, OSError)
    server.heal()
    with pytest.raises(errors.APINotFound):
        client.get(NODES, "n1")


def test_emulated_apiserver_list_pages_with_continue(client: KubeClient) -> None:
    for i in range(7):
        client.create(CONFIGMAPS, {"metadata": {"name": f"cm{i}", "labels": {"i": str(i)}}},
                      "default")
    first = client.list(CONFIGMAPS, "default", limit=3)
    assert len(first.items) == 3 and first.continue_token
    everything = client.list_all(CONFIGMAPS, "default", limit=3, label_selector="i")
    assert [o["metadata"]["name"] for o in everything.items] == [f"cm{i}" for i in range(7)]
    assert everything.resource_version == first.resource_version  # no write in between


def test_emulated_apiserver_three_patch_types(client: KubeClient) -> None:
    client.create(PODS, _pod("p"), "default")
    client.patch(PODS, "p", {"metadata": {"labels": {"a": "1"}}}, namespace="default")
    client.patch(PODS, "p", {"metadata": {"labels": {"b": "2"}}}, namespace="default",
                 patch_type="merge")
    out = client.patch(PODS, "p", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
                       namespace="default", patch_type="json")
    assert out["metadata"]["labels"] == {"a": "1", "b": "2", "c": "3"}
    status = client.patch(PODS, "p", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, namespace="default", subresource="status")
    assert status["status"]["conditions"][-1]["type"] == "Ready"


def test_emulated_apiserver_delete_with_grace_and_preconditions(client: KubeClient) -> None:
    pod = client.create(PODS, _pod("p"), "default")
    graceful = client.delete(PODS, "p", "default", grace_period_seconds=30)
    assert graceful["metadata"]["deletionTimestamp"]
    assert graceful["metadata"]["deletionGracePeriodSeconds"] == 30
    with pytest.raises(errors.APIConflict) as wrong_uid:
        client.delete(PODS, "p", "default", grace_period_seconds=0, uid="not-the-uid")
    assert "Precondition failed: UID" in str(wrong_uid.value)
    client.delete(PODS, "p", "default", grace_period_seconds=0, uid=pod["metadata"]["uid"])
    with pytest.raises(errors.APINotFound):
        client.get(PODS, "p", "default")


def test_emulated_apiserver_watch_events_and_gone(client: KubeClient,
                                                  server: EmulatedAPIServer) -> None:
    listed = client.list(PODS, "default")
    with client.watch(PODS, "default", resource_version=listed.resource_version,
                      field_selector="spec.nodeName=n1", timeout_seconds=5) as stream:
        client.create(PODS, _pod("other", node="n2"), "default")
        client.create(PODS, _pod("mine"), "default")
        events = iter(stream)
        first = next(e for e in events if e.type != "BOOKMARK")
        assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "mine")
        bookmark = next(e for e in events if e.type == "BOOKMARK")
        assert int(bookmark.resource_version) >= int(first.resource_version)
    server.compact()
    stream = client.watch(PODS, "default", resource_version=listed.resource_version)
    with pytest.raises(errors.APIGone) as gone:
        list(stream)
    assert gone.value.code == 410 and gone.value.reason == "Expired"


def test_emulated_apiserver_retry_after_is_honoured_ten_times(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    clock = FakeClock()
    transport = Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "kc")),
                          clock=clock)
    client = KubeClient(transport)
    server.faults.inject(verb="get", resource="namespaces", code=429, retry_after=3, times=2)
    start = clock.monotonic()
    client.get(NAMESPACES, "default")
    assert clock.monotonic() - start == 6 and transport.retries == 2
    rule = server.faults.inject(verb="get", resource="namespaces", code=503, retry_after=1)
    with pytest.raises(errors.APIServerError) as unavailable:
        client.get(NAMESPACES, "default")
    assert rule.hits == 11 and unavailable.value.retry_after == 1.0
    server.faults.remove(rule)
    rule = server.faults.inject(verb="get", resource="namespaces", code=500)
    with pytest.raises(errors.APIServerError):
        client.get(NAMESPACES, "default")
    assert rule.hits == 1  # no Retry-After: no retry


def test_rate_limiter_is_a_token_bucket_of_qps_and_burst() -> None:
    clock = FakeClock()
    limiter = RateLimiter(50, 100, clock)
    assert sum(limiter.take() for _ in range(100)) == 0  # the burst
    assert limiter.take() == pytest.approx(0.02)  # then 50 a second
    clock.step(1)
    assert sum(limiter.take() for _ in range(49)) == 0


def test_emulated_apiserver_pod_status_patch_with_uid_precondition(client: KubeClient) -> None:
    pod = client.create(PODS, _pod("p"), "default")
    uid = pod["metadata"]["uid"]
    old = pod.get("status") or {}
    new = {**old, "phase": "Running",
           "conditions": [{"type": "Ready", "status": "True"}]}
    patch = pod_status_patch(uid, old, new)
    assert patch is not None and patch["metadata"] == {"uid": uid}
    out = client.patch(PODS, "p", patch, namespace="default", subresource="status")
    assert out["status"]["phase"] == "Running"
    assert pod_status_patch(uid, out["status"], out["status"]) is None  # nothing to send
    client.delete(PODS, "p", "default", grace_period_seconds=0)
    client.create(PODS, _pod("p"), "default")  # same name, new pod
    with pytest.raises(errors.APIConflict, match="Precondition failed: UID"):
        client.patch(PODS, "p", patch, namespace="default", subresource="status")


def test_emulated_apiserver_watch_honours_retry_after_as_client_go_request_watch(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    """client-go's Request.Watch retries a 429 or 5xx with Retry-After after that long (up
    to ten times), as every other request; found by the api-429s drill (the reflector came
    back after its own 0.8 s back-off)."""
    clock = FakeClock()
    transport = Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "kc")),
                          clock=clock)
    client = KubeClient(transport)
    server.faults.inject(verb="watch", resource="pods", code=429, retry_after=2, times=2)
    start = clock.monotonic()
    with client.watch(PODS, "default", timeout_seconds=1):
        pass
    assert clock.monotonic() - start == 4 and transport.retries == 2
    rule = server.faults.inject(verb="watch", resource="pods", code=503, retry_after=1)
    with pytest.raises(errors.APIServerError):
        client.watch(PODS, "default", timeout_seconds=1)
    assert rule.hits == 11
    server.faults.remove(rule)
    rule = server.faults.inject(verb="watch", resource="pods", code=500)
    with pytest.raises(errors.APIServerError):
        client.watch(PODS, "default", timeout_seconds=1)
    assert rule.hits == 1  # no Retry-After: no retry, the reflector backs off
