"""The emulated API server's REST semantics, driven by a raw HTTP client.

What a kubelet relies on: versions, Status errors, optimistic concurrency, the status split,
selectors, paging, watches (bookmarks, timeouts, 410), graceful deletion and finalizers,
admission, tokens and reviews, the one-node scheduler, faults, and the pods/log proxy.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
from typing import Any

import pytest

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Attributes
from tests.apiserver.certs import CertificateAuthority
from tests.apiserver.client import RawClient
from tests.helpers import wait_for

PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"
CMS = "/api/v1/namespaces/default/configmaps"
ROOT_CA = "kube-root-ca.crt"


def pod(name: str, node: str = "", labels: dict[str, str] | None = None,
        **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}, **extra}, "spec": spec}


def test_emulated_apiserver_authenticates_tokens_and_certificates(
        server: EmulatedAPIServer, client: RawClient) -> None:
    anonymous = RawClient(server, anonymous=True)
    denied = anonymous.get("/api/v1/namespaces")
    assert denied.status == 401 and denied.body["kind"] == "Status"
    assert denied.body["reason"] == "Unauthorized"
    assert RawClient(server, token="wrong").get("/version").status == 401
    by_cert = RawClient(server, cert=server.client_cert("system:node:n1", ("system:nodes",)))
    assert by_cert.get("/version").status == 200
    assert by_cert.get("/version").body["gitVersion"].endswith("emulated")
    # A certificate from another CA is refused at the handshake.
    stranger = RawClient(server, cert=CertificateAuthority().issue("mallory"))
    with pytest.raises((ssl.SSLError, OSError)):
        stranger.get("/version")


def test_emulated_apiserver_authorizer_answers_403(server: EmulatedAPIServer,
                                                   client: RawClient) -> None:
    server.authorizer = lambda a: not (a.resource == "secrets" and a.verb == "list")
    forbidden = client.get("/api/v1/namespaces/default/secrets")
    assert forbidden.status == 403 and forbidden.body["reason"] == "Forbidden"
    assert 'cannot list resource "secrets"' in forbidden.body["message"]


def test_emulated_apiserver_discovery(client: RawClient) -> None:
    core = client.get("/api/v1").body
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["namespaced"] and pods["kind"] == "Pod" and "watch" in pods["verbs"]
    assert pods["shortNames"] == ["po"]
    assert {"pods/status", "pods/log", "serviceaccounts/token"} <= {
        r["name"] for r in core["resources"]}
    groups = {g["name"] for g in client.get("/apis").body["groups"]}
    assert {"coordination.k8s.io", "authentication.k8s.io", "authorization.k8s.io"} <= groups
    leases = client.get("/apis/coordination.k8s.io/v1").body["resources"]
    assert leases[0]["name"] == "leases"
    assert client.get("/openapi/v2").status == 404


def test_emulated_apiserver_bootstraps_namespaces_ca_and_service_accounts(
        server: EmulatedAPIServer, client: RawClient) -> None:
    names = {n["metadata"]["name"] for n in client.get("/api/v1/namespaces").body["items"]}
    assert {"default", "kube-system", "kube-node-lease", "kube-public"} <= names
    assert client.post("/api/v1/namespaces", {"metadata": {"name": "team"}}).status == 201
    for ns in ("default", "kube-system", "team"):
        ca = client.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt").body
        assert ca["data"]["ca.crt"] == server.ca.cert_pem.decode()
        assert client.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").status == 200
    svc = client.get("/api/v1/namespaces/default/services/kubernetes").body
    assert svc["spec"]["clusterIP"] == "10.96.0.1"


def test_emulated_apiserver_create_sets_metadata_and_errors_are_status_objects(
        client: RawClient) -> None:
    created = client.post(CMS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert created.status == 201
    meta = created.body["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["generation"] == 1
    second = client.post(CMS, {"metadata": {"name": "b"}})
    assert int(second.body["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    again = client.post(CMS, {"metadata": {"name": "a"}})
    assert again.status == 409
    assert again.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                          "status": "Failure", "message": 'configmaps "a" already exists',
                          "reason": "AlreadyExists", "details": {"name": "a",
                                                                 "kind": "configmaps"},
                          "code": 409}
    missing = client.get(CMS + "/nope")
    assert (missing.status, missing.body["reason"]) == (404, "NotFound")
    assert missing.body["message"] == 'configmaps "nope" not found'
    lease = client.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1")
    assert lease.body["details"] == {"name": "n1", "group": "coordination.k8s.io",
                                     "kind": "leases"}
    bad = client.post(PODS, {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}})
    assert bad.status == 422 and bad.body["reason"] == "Invalid"
    assert {c["field"] for c in bad.body["details"]["causes"]} == {"metadata.name"}
    no_containers = client.post(PODS, {"metadata": {"name": "p"}, "spec": {"containers": []}})
    assert no_containers.body["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value",
         "field": "spec.containers"}]
    generated = client.post(CMS, {"metadata": {"generateName": "gen-"}})
    assert generated.body["metadata"]["name"].startswith("gen-")
    assert len(generated.body["metadata"]["name"]) == len("gen-") + 5


def test_emulated_apiserver_put_conflicts_on_stale_resource_version(client: RawClient) -> None:
    first = client.post(CMS, {"metadata": {"name": "a"}, "data": {"k": "1"}}).body
    first["data"]["k"] = "2"
    updated = client.put(CMS + "/a", first)
    assert updated.status == 200 and updated.body["data"] == {"k": "2"}
    first["data"]["k"] = "3"  # still carries the old resourceVersion
    stale = client.put(CMS + "/a", first)
    assert stale.status == 409 and stale.body["reason"] == "Conflict"
    assert "the object has been modified" in stale.body["message"]
    # An unchanged object is not written again: same resourceVersion.
    same = client.put(CMS + "/a", updated.body)
    assert same.body["metadata"]["resourceVersion"] == updated.body["metadata"]["resourceVersion"]


def test_emulated_apiserver_status_subresource_split(client: RawClient) -> None:
    created = client.post(PODS, pod("web", node="n1")).body
    assert created["status"]["phase"] == "Pending"
    created["status"] = {"phase": "Running"}
    created["metadata"]["labels"] = {"via": "main"}
    main = client.put(PODS + "/web", created).body
    assert main["status"]["phase"] == "Pending" and main["metadata"]["labels"] == {"via": "main"}
    main["status"] = {"phase": "Running", "podIP": "10.0.0.9"}
    main["spec"]["nodeName"] = "elsewhere"
    status = client.put(PODS + "/web/status", main).body
    assert status["status"]["podIP"] == "10.0.0.9" and status["spec"]["nodeName"] == "n1"
    assert status["metadata"]["generation"] == 1
    moved = client.patch(PODS + "/web", {"spec": {"nodeName": "n2"}})
    assert moved.status == 422 and moved.body["reason"] == "Invalid"
    image = client.patch(PODS + "/web", {"spec": {"containers": [
        {"name": "app", "image": "busybox:2"}]}}).body
    assert image["metadata"]["generation"] == 2


def test_emulated_apiserver_patch_types_and_uid_precondition(client: RawClient) -> None:
    cm = client.post(CMS, {"metadata": {"name": "a", "labels": {"x": "1"}},
                           "data": {"k": "v"}}).body
    merged = client.patch(CMS + "/a", {"metadata": {"labels": {"x": None, "y": "2"}}},
                          "application/merge-patch+json").body
    assert merged["metadata"]["labels"] == {"y": "2"}
    patched = client.patch(CMS + "/a", [{"op": "add", "path": "/data/k2", "value": "v2"},
                                        {"op": "test", "path": "/data/k", "value": "v"}],
                           "application/json-patch+json").body
    assert patched["data"] == {"k": "v", "k2": "v2"}
    failed = client.patch(CMS + "/a", [{"op": "test", "path": "/data/k", "value": "nope"}],
                          "application/json-patch+json")
    assert failed.status == 422
    wrong_uid = client.patch(CMS + "/a", {"metadata": {"uid": "not-" + cm["metadata"]["uid"]},
                                          "data": {"k": "x"}})
    assert wrong_uid.status == 409 and wrong_uid.body["reason"] == "Conflict"
    assert "Precondition failed: UID in precondition" in wrong_uid.body["message"]
    right_uid = client.patch(CMS + "/a", {"metadata": {"uid": cm["metadata"]["uid"]},
                                          "data": {"k": "x"}})
    assert right_uid.status == 200
    stale = client.patch(CMS + "/a", {"metadata": {"resourceVersion": "1"}})
    assert stale.status == 409
    assert client.patch(CMS + "/missing", {"data": {}}).status == 404
    apply = client.patch(CMS + "/a", {}, "application/apply-patch+yaml")
    assert apply.status == 415


def test_emulated_apiserver_list_selectors(client: RawClient) -> None:
    client.post(PODS, pod("a", node="n1", labels={"app": "web", "tier": "front"}))
    client.post(PODS, pod("b", node="n2", labels={"app": "web"}))
    client.post(PODS, pod("c", labels={"app": "db"}))

    def names(**query: str) -> list[str]:
        result = client.get(PODS, **query)
        assert result.status == 200, result.body
        return [p["metadata"]["name"] for p in result.body["items"]]

    assert names() == ["a", "b", "c"]
    assert names(labelSelector="app=web") == ["a", "b"]
    assert names(labelSelector="app in (db),!tier") == ["c"]
    assert names(labelSelector="app!=web") == ["c"]
    assert names(fieldSelector="spec.nodeName=n1") == ["a"]
    assert names(fieldSelector="spec.nodeName!=n1") == ["b", "c"]
    assert names(fieldSelector="spec.nodeName=") == ["c"]
    assert names(fieldSelector="metadata.name=b,metadata.namespace=default") == ["b"]
    everywhere = client.get("/api/v1/pods", fieldSelector="spec.nodeName=n2").body
    assert [p["metadata"]["name"] for p in everywhere["items"]] == ["b"]
    assert everywhere["kind"] == "PodList" and "kind" not in everywhere["items"][0]
    unsupported = client.get(PODS, fieldSelector="spec.hostname=x")
    assert unsupported.status == 400 and "field label not supported" in \
        unsupported.body["message"]


def test_emulated_apiserver_paged_lists_are_consistent_snapshots(
        server: EmulatedAPIServer, client: RawClient) -> None:
    for i in range(5):
        client.post(CMS, {"metadata": {"name": f"cm-{i}"}})
    first = client.get(CMS, limit="2", labelSelector="").body
    assert [c["metadata"]["name"] for c in first["items"]] == ["cm-0", "cm-1"]
    token = first["metadata"]["continue"]
    client.delete(CMS + "/cm-3")
    client.post(CMS, {"metadata": {"name": "cm-2a"}})
    rest: list[str] = []
    while token:
        page = client.get(CMS, limit="2", **{"continue": token}).body
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        rest += [c["metadata"]["name"] for c in page["items"]]
        token = page["metadata"].get("continue", "")
    assert rest == ["cm-2", "cm-3", "cm-4", "kube-root-ca.crt"]
    # resourceVersion=0 answers whole from the cache; Exact answers the past.
    assert "continue" not in client.get(CMS, limit="2", resourceVersion="0").body["metadata"]
    past = client.get(CMS, resourceVersion=first["metadata"]["resourceVersion"],
                      resourceVersionMatch="Exact").body
    assert "cm-3" in [c["metadata"]["name"] for c in past["items"]]
    server.compact()
    expired = client.get(CMS, limit="2", **{"continue": first["metadata"]["continue"]})
    assert (expired.status, expired.body["reason"], expired.body["code"]) == (410, "Expired", 410)


def test_emulated_apiserver_watch_from_resource_version(client: RawClient) -> None:
    start = client.get(PODS).body["metadata"]["resourceVersion"]
    client.post(PODS, pod("a", labels={"app": "web"}))
    client.patch(PODS + "/a", {"metadata": {"labels": {"app": "other"}}})
    client.delete(PODS + "/a")
    watch = client.watch(PODS, resourceVersion=start, timeoutSeconds="1")
    events = [(e["type"], e["object"]["metadata"]["name"]) for e in watch]
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert watch.ended_cleanly
    # A label-filtered watch sees the pod leave its selection as a DELETED.
    filtered = client.watch(PODS, resourceVersion=start, labelSelector="app=web",
                            timeoutSeconds="1")
    assert [e["type"] for e in filtered] == ["ADDED", "DELETED"]


def test_emulated_apiserver_watch_bookmarks_and_initial_events(
        server: EmulatedAPIServer, client: RawClient) -> None:
    client.post(PODS, pod("a"))
    watch = client.watch(PODS, allowWatchBookmarks="true", timeoutSeconds="1",
                         resourceVersion="0")
    first = watch.next()
    assert first is not None and first["type"] == "ADDED"  # rv=0: the current state first
    created = client.post(PODS, pod("b")).body
    rest = list(watch)
    assert watch.ended_cleanly
    assert ("ADDED", "b") in [(e["type"], e["object"]["metadata"]["name"]) for e in rest
                              if e["type"] != "BOOKMARK"]
    bookmarks = [e for e in rest if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2  # periodic (0.2 s here) and one at the timeout
    assert bookmarks[-1]["object"] == {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "resourceVersion": bookmarks[-1]["object"]["metadata"]["resourceVersion"]}}
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(
        created["metadata"]["resourceVersion"])
    streaming = client.watch(PODS, sendInitialEvents="true", allowWatchBookmarks="true",
                             resourceVersionMatch="NotOlderThan", timeoutSeconds="1")
    initial = [streaming.next() for _ in range(3)]
    assert [e["type"] for e in initial if e] == ["ADDED", "ADDED", "BOOKMARK"]
    assert initial[2] is not None
    assert initial[2]["object"]["metadata"]["annotations"] == {
        "k8s.io/initial-events-end": "true"}
    streaming.close()


def test_emulated_apiserver_watch_410_after_compaction(server: EmulatedAPIServer,
                                                       client: RawClient) -> None:
    old = client.get(PODS).body["metadata"]["resourceVersion"]
    client.post(PODS, pod("a"))
    server.compact()
    watch = client.watch(PODS, resourceVersion=old)
    events = list(watch)
    assert events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")
    assert "too old resource version" in events[0]["object"]["message"]


def test_emulated_apiserver_graceful_pod_deletion(client: RawClient) -> None:
    bound = client.post(PODS, pod("bound", node="n1")).body
    start = bound["metadata"]["resourceVersion"]
    graceful = client.delete(PODS + "/bound", {"gracePeriodSeconds": 5})
    assert graceful.status == 200
    assert graceful.body["metadata"]["deletionGracePeriodSeconds"] == 5
    assert graceful.body["metadata"]["deletionTimestamp"]
    assert client.get(PODS + "/bound").status == 200  # until the kubelet confirms
    longer = client.delete(PODS + "/bound", {"gracePeriodSeconds": 60}).body
    assert longer["metadata"]["deletionGracePeriodSeconds"] == 5
    wrong = client.delete(PODS + "/bound", {"gracePeriodSeconds": 0,
                                            "preconditions": {"uid": "other"}})
    assert wrong.status == 409 and "Precondition failed: UID" in wrong.body["message"]
    stale = client.delete(PODS + "/bound", {"gracePeriodSeconds": 0,
                                            "preconditions": {"resourceVersion": start}})
    assert stale.status == 409
    gone = client.delete(PODS + "/bound", {"gracePeriodSeconds": 0, "preconditions": {
        "uid": bound["metadata"]["uid"]}})
    assert gone.status == 200 and client.get(PODS + "/bound").status == 404
    watch = client.watch(PODS, resourceVersion=start, timeoutSeconds="1")
    assert [e["type"] for e in watch] == ["MODIFIED", "DELETED"]
    client.post(PODS, pod("unbound"))
    assert client.delete(PODS + "/unbound").status == 200
    assert client.get(PODS + "/unbound").status == 404  # no node: gone at once


def test_emulated_apiserver_finalizers_hold_objects(client: RawClient) -> None:
    client.post(CMS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    pending = client.delete(CMS + "/held").body
    assert pending["metadata"]["deletionTimestamp"]
    assert client.get(CMS + "/held").status == 200
    done = client.patch(CMS + "/held", {"metadata": {"finalizers": None}})
    assert done.status == 200 and client.get(CMS + "/held").status == 404
    plain = client.post(CMS, {"metadata": {"name": "plain"}}).body
    deleted = client.delete(CMS + "/plain").body
    assert deleted["status"] == "Success"
    assert deleted["details"]["uid"] == plain["metadata"]["uid"]


def test_emulated_apiserver_pod_admission_and_scheduler(client: RawClient) -> None:
    server = client.server
    server.registry.schedule_to = "n1"
    created = client.post(PODS, pod("web")).body
    assert "nodeName" not in created["spec"]  # the binding is a second write
    bound = client.get(PODS + "/web").body
    assert bound["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= \
        bound["status"]["conditions"][0].items()
    assert bound["spec"]["serviceAccountName"] == "default"
    volume = bound["spec"]["volumes"][0]
    assert volume["name"].startswith("kube-api-access-")
    sources = volume["projected"]["sources"]
    assert next(s for s in sources if "configMap" in s)["configMap"]["name"] == ROOT_CA
    assert bound["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == \
        "/var/run/secrets/kubernetes.io/serviceaccount"
    mirror = client.post(PODS, pod("static-n1", node="n1", annotations={
        "kubernetes.io/config.mirror": "hash"})).body
    assert "volumes" not in mirror["spec"]
    missing_sa = pod("x")
    missing_sa["spec"]["serviceAccountName"] = "ghost"
    assert client.post(PODS, missing_sa).status == 403


def test_emulated_apiserver_tokens_and_reviews(server: EmulatedAPIServer,
                                               client: RawClient) -> None:
    request = client.post("/api/v1/namespaces/default/serviceaccounts/default/token",
                          {"spec": {"audiences": ["api"], "expirationSeconds": 600}})
    assert request.status == 201
    token = request.body["status"]["token"]
    assert request.body["status"]["expirationTimestamp"].endswith("Z")
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["alg"] == "ES256"
    review = client.post("/apis/authentication.k8s.io/v1/tokenreviews",
                         {"spec": {"token": token}}).body
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "system:serviceaccount:default:default"
    bogus = client.post("/apis/authentication.k8s.io/v1/tokenreviews",
                        {"spec": {"token": token[:-4] + "AAAA"}}).body
    assert bogus["status"]["authenticated"] is False
    as_sa = RawClient(server, token=token)
    assert as_sa.get("/api/v1/namespaces/default/pods").status == 200
    seen: list[Attributes] = []

    def policy(attrs: Attributes) -> bool:
        seen.append(attrs)
        return attrs.user.name == "alice" and attrs.subresource == "log"

    server.sar_policy = policy
    sar = {"spec": {"user": "alice", "groups": ["g"], "resourceAttributes": {
        "verb": "get", "resource": "nodes", "subresource": "log", "name": "n1"}}}
    allowed = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", sar).body
    assert allowed["status"]["allowed"] is True
    sar["spec"]["user"] = "bob"
    denied = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", sar).body
    assert denied["status"]["allowed"] is False
    assert (seen[0].name, seen[0].user.groups) == ("n1", ("g",))


def test_emulated_apiserver_injected_errors_and_latency(server: EmulatedAPIServer,
                                                        client: RawClient) -> None:
    server.faults.inject(verb="list", resource="pods", code=500, times=1)
    failed = client.get(PODS)
    assert (failed.status, failed.body["reason"]) == (500, "InternalError")
    assert client.get(PODS).status == 200  # times=1: used up
    server.faults.inject(verb="patch", resource="pods/status", code=429, retry_after=3)
    client.post(PODS, pod("a", node="n1"))
    throttled = client.patch(PODS + "/a/status", {"status": {"phase": "Running"}})
    assert throttled.status == 429 and throttled.headers["retry-after"] == "3"
    assert throttled.body["details"]["retryAfterSeconds"] == 3
    assert client.patch(PODS + "/a", {"metadata": {"labels": {"x": "y"}}}).status == 200
    server.faults.clear()
    slow = server.faults.inject(resource="nodes", latency=0.3)
    started = time.monotonic()
    assert client.get(NODES).status == 200
    assert time.monotonic() - started >= 0.3 and slow.hits == 1


def test_emulated_apiserver_dropped_and_expired_watches(server: EmulatedAPIServer,
                                                        client: RawClient) -> None:
    watch = client.watch(PODS, resourceVersion="0")
    wait_for(lambda: server.open_watches("pods") == 1, 5, "the watch to open")
    assert server.drop_watches("pods") == 1
    assert watch.next() is None and not watch.ended_cleanly  # cut, no closing chunk
    expiring = client.watch(PODS, resourceVersion="0")
    wait_for(lambda: server.open_watches("pods") == 1, 5, "the second watch to open")
    server.expire_watches()
    event = expiring.next()
    assert event is not None and event["type"] == "ERROR" and event["object"]["code"] == 410


def test_emulated_apiserver_partition_refuses_connections(server: EmulatedAPIServer,
                                                          client: RawClient) -> None:
    port = server.port
    server.partition()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    server.heal()
    assert server.port == port and client.get("/version").status == 200
    server.partition(0.3)
    wait_for(lambda: client.get("/version").status == 200, 5, "the partition to heal",
             ignore=(OSError,))


def test_emulated_apiserver_proxies_pod_logs_to_the_kubelet(
        server: EmulatedAPIServer, client: RawClient, fake_kubelet: list[str]) -> None:
    client.post(PODS, pod("web", node="n1"))
    result = client.request("GET", PODS + "/web/log", query={"tailLines": "2"},
                                 accept="*/*")
    assert result.status == 200
    assert "log line 2 for kube-apiserver-kubelet-client" in str(result.body)
    assert fake_kubelet == ["/containerLogs/default/web/app?tailLines=2"]
    two = pod("two", node="n1")
    two["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    client.post(PODS, two)
    ambiguous = client.get(PODS + "/two/log")
    assert ambiguous.status == 400 and "choose one of: [app side]" in ambiguous.body["message"]
    exec_ = client.post(PODS + "/web/exec", {})  # not an upgrade: refused before the kubelet
    assert exec_.status == 400 and exec_.body["message"] == "Upgrade request required"
