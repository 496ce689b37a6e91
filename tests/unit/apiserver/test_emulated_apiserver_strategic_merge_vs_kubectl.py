"""The emulated API server's strategic merge patch against upstream's: kubectl patch --local.

Each case is a patch like those a kubelet sends (pod and node status with $setElementOrder,
conditions by type, addresses by type, podIPs/hostIPs by ip, deletions, replace directives)
or kubectl builds (finalizers, ownerReferences by uid, containers by name, retainKeys). Every
case is checked twice against ``kubectl patch --local --type strategic``: the patch function
alone, and a real PATCH on the emulated server (pods/status, nodes/status or the main
resource). Two pod-spec cases the server must refuse as upstream does (422) are checked
on the function only.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.client import RawClient
from tests.apiserver.kubectl import local_strategic_patch
from tests.apiserver.patch import strategic_merge, typed_roundtrip
from tests.apiserver.patchmeta import for_kind

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"},
                 "finalizers": ["a/x", "b/y"],
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1",
                                      "uid": "o1"}]},
    "spec": {"nodeName": "n1",
             "containers": [{"name": "app", "image": "nginx:1",
                             "env": [{"name": "A", "value": "1"}],
                             "ports": [{"containerPort": 80}]},
                            {"name": "side", "image": "busybox:1"}],
             "volumes": [{"name": "data", "emptyDir": {}}]},
    "status": {"phase": "Pending",
               "conditions": [{"type": "Initialized", "status": "True"},
                              {"type": "Ready", "status": "False",
                               "reason": "ContainersNotReady"},
                              {"type": "PodScheduled", "status": "True"}],
               "containerStatuses": [
                   {"name": "app", "ready": False, "restartCount": 0, "image": "nginx:1"},
                   {"name": "side", "ready": False, "restartCount": 0, "image": "busybox:1"}],
               "podIPs": [{"ip": "10.0.0.5"}], "hostIPs": [{"ip": "192.168.1.2"}]},
}

NODE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "uid": "nu1", "labels": {"kubernetes.io/hostname": "n1"}},
    "spec": {"podCIDRs": ["10.0.0.0/24"]},
    "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                              {"type": "DiskPressure", "status": "False"},
                              {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}],
               "addresses": [{"type": "InternalIP", "address": "192.168.1.2"},
                             {"type": "Hostname", "address": "n1"}],
               "images": [{"names": ["nginx:1"], "sizeBytes": 100}],
               "nodeInfo": {"kubeletVersion": "v1.32.0"}},
}

CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ('pod ready condition update', POD,
     {'status': {'$setElementOrder/conditions': [{'type': 'Initialized'},
                                                 {'type': 'Ready'},
                                                 {'type': 'PodScheduled'}],
                 'conditions': [{'type': 'Ready', 'status': 'True', 'reason': None}]}}),
    ('pod new condition appended without order', POD,
     {'status': {'conditions': [{'type': 'ContainersReady', 'status': 'True'}]}}),
    ('pod new condition with setElementOrder', POD,
     {'status': {'$setElementOrder/conditions': [{'type': 'Initialized'},
                                                 {'type': 'Ready'},
                                                 {'type': 'ContainersReady'},
                                                 {'type': 'PodScheduled'}],
                 'conditions': [{'type': 'ContainersReady', 'status': 'True'}]}}),
    ('pod condition deleted', POD,
     {'status': {'$setElementOrder/conditions': [{'type': 'Initialized'},
                                                 {'type': 'PodScheduled'}],
                 'conditions': [{'$patch': 'delete', 'type': 'Ready'}]}}),
    ('pod containerStatuses replaced whole', POD,
     {'status': {'containerStatuses': [{'name': 'app', 'ready': True, 'restartCount': 1}]}}),
    ('pod phase and podIP', POD,
     {'status': {'phase': 'Running', 'podIP': '10.0.0.5'}}),
    ('pod podIPs merged by ip', POD,
     {'status': {'podIPs': [{'ip': 'fd00::5'}]}}),
    ('pod podIPs with order', POD,
     {'status': {'$setElementOrder/podIPs': [{'ip': '10.0.0.5'}, {'ip': 'fd00::5'}],
                 'podIPs': [{'ip': 'fd00::5'}]}}),
    ('pod hostIPs replace directive', POD,
     {'status': {'hostIPs': [{'$patch': 'replace'}, {'ip': '192.168.1.9'}]}}),
    ('pod status map replaced', POD,
     {'status': {'$patch': 'replace', 'phase': 'Failed'}}),
    ('pod ownerReferences by uid', POD,
     {'metadata': {'ownerReferences': [{'apiVersion': 'v1',
                                        'kind': 'Node',
                                        'name': 'n1b',
                                        'uid': 'o1'},
                                       {'apiVersion': 'v1',
                                        'kind': 'Node',
                                        'name': 'n2',
                                        'uid': 'o2'}]}}),
    ('pod ownerReferences delete', POD,
     {'metadata': {'ownerReferences': [{'$patch': 'delete', 'uid': 'o1'}]}}),
    ('pod finalizers union', POD,
     {'metadata': {'finalizers': ['c/z', 'a/x']}}),
    ('pod finalizers deleteFromPrimitiveList', POD,
     {'metadata': {'$deleteFromPrimitiveList/finalizers': ['a/x']}}),
    ('pod finalizers setElementOrder', POD,
     {'metadata': {'$setElementOrder/finalizers': ['b/y', 'a/x']}}),
    ('pod label removed with null', POD,
     {'metadata': {'labels': {'app': None, 'tier': 'front'}}}),
    ('pod container env merge', POD,
     {'spec': {'containers': [{'name': 'app', 'env': [{'name': 'B', 'value': '2'}]}]}}),
    ('pod container image change with order', POD,
     {'spec': {'$setElementOrder/containers': [{'name': 'app'}, {'name': 'side'}],
               'containers': [{'name': 'side', 'image': 'busybox:2'}]}}),
    ('pod volumes retainKeys', POD,
     {'spec': {'volumes': [{'name': 'data',
                            '$retainKeys': ['name', 'hostPath'],
                            'hostPath': {'path': '/x'}}]}}),
    ('pod null on missing key ignored', POD,
     {'status': {'reason': None, 'message': None, 'nominatedNodeName': None}}),
    ('pod new status list with nulls inside', POD,
     {'status': {'initContainerStatuses': [{'name': 'init',
                                            'ready': False,
                                            'started': None}]}}),
    ('pod all conditions deleted', POD,
     {'status': {'$setElementOrder/conditions': [],
                 'conditions': [{'$patch': 'delete', 'type': 'Initialized'},
                                {'$patch': 'delete', 'type': 'Ready'},
                                {'$patch': 'delete', 'type': 'PodScheduled'}]}}),
    ('node ready condition', NODE,
     {'status': {'$setElementOrder/conditions': [{'type': 'MemoryPressure'},
                                                 {'type': 'DiskPressure'},
                                                 {'type': 'Ready'}],
                 'conditions': [{'type': 'Ready',
                                 'status': 'True',
                                 'reason': 'KubeletReady',
                                 'lastHeartbeatTime': '2024-05-01T10:00:00Z'}]}}),
    ('node heartbeat all conditions', NODE,
     {'status': {'$setElementOrder/conditions': [{'type': 'MemoryPressure'},
                                                 {'type': 'DiskPressure'},
                                                 {'type': 'Ready'}],
                 'conditions': [{'type': 'MemoryPressure', 'lastHeartbeatTime': 't1'},
                                {'type': 'DiskPressure', 'lastHeartbeatTime': 't1'},
                                {'type': 'Ready', 'lastHeartbeatTime': 't1'}]}}),
    ('node new condition appended', NODE,
     {'status': {'conditions': [{'type': 'PIDPressure', 'status': 'False'}]}}),
    ('node addresses merged by type', NODE,
     {'status': {'$setElementOrder/addresses': [{'type': 'InternalIP'},
                                                {'type': 'Hostname'}],
                 'addresses': [{'type': 'InternalIP', 'address': '192.168.1.3'}]}}),
    ('node addresses new type', NODE,
     {'status': {'addresses': [{'type': 'ExternalIP', 'address': '1.2.3.4'}]}}),
    ('node addresses replace', NODE,
     {'status': {'addresses': [{'$patch': 'replace'},
                               {'type': 'InternalIP', 'address': '10.1.1.1'}]}}),
    ('node images replaced whole', NODE,
     {'status': {'images': [{'names': ['busybox:1'], 'sizeBytes': 5}]}}),
    ('node podCIDRs merged', NODE,
     {'spec': {'podCIDRs': ['fd00::/64']}}),
    ('node nodeInfo merged as map', NODE,
     {'status': {'nodeInfo': {'kernelVersion': '6.1'}}}),
    ('node daemonEndpoints added', NODE,
     {'status': {'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}}}}),
    ('node nodeInfo map delete directive', NODE,
     {'status': {'nodeInfo': {'$patch': 'delete'}}}),
    ('node condition order only', NODE,
     {'status': {'$setElementOrder/conditions': [{'type': 'Ready'},
                                                 {'type': 'MemoryPressure'},
                                                 {'type': 'DiskPressure'}]}}),
]

# Upstream refuses these on a live pod (spec is immutable but for images): 422 from the server.
REFUSED_ON_LIVE_PODS = {"pod container env merge", "pod volumes retainKeys"}


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 20
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "obj", "patch"), CASES, ids=[c[0] for c in CASES])
def test_emulated_strategic_merge_matches_kubectl_patch_local(
        name: str, obj: dict[str, Any], patch: dict[str, Any]) -> None:
    want = typed_roundtrip(local_strategic_patch(obj, patch))
    got = typed_roundtrip(strategic_merge(obj, copy.deepcopy(patch), for_kind(obj["kind"])))
    assert got == want


@pytest.fixture(scope="module")
def shared_server() -> Iterator[EmulatedAPIServer]:
    # One server for the whole table: each case gets objects of its own name.
    with EmulatedAPIServer() as srv:
        yield srv


@pytest.fixture
def shared_client(shared_server: EmulatedAPIServer) -> Iterator[RawClient]:
    raw = RawClient(shared_server)
    yield raw
    raw.close()


def _load(client: RawClient, obj: dict[str, Any], name: str) -> str:
    """Create ``obj`` named ``name`` on the server with its status; return its URL path."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["name"] = name
    if obj["kind"] == "Pod":
        path = f"/api/v1/namespaces/default/pods/{name}"
        created = client.post("/api/v1/namespaces/default/pods", obj)
    else:
        path = f"/api/v1/nodes/{name}"
        created = client.post("/api/v1/nodes", obj)
    assert created.status == 201, created.body
    with_status = created.body
    with_status["status"] = copy.deepcopy(obj["status"])
    assert client.put(path + "/status", with_status).status == 200
    return path


@pytest.mark.parametrize(("name", "obj", "patch"), CASES, ids=[c[0] for c in CASES])
def test_emulated_server_patch_matches_kubectl_patch_local(
        shared_client: RawClient, name: str, obj: dict[str, Any],
        patch: dict[str, Any]) -> None:
    client = shared_client
    path = _load(client, obj, "case-" + re.sub(r"[^a-z0-9]+", "-", name.lower()))
    if set(patch) == {"status"}:
        path += "/status"
    before = client.get(path).body
    response = client.patch(path, patch)
    if name in REFUSED_ON_LIVE_PODS:
        assert response.status == 422, response.body
        assert response.body["reason"] == "Invalid"
        return
    assert response.status == 200, response.body
    want = typed_roundtrip(local_strategic_patch(before, patch))
    got = response.body
    for meta in (want["metadata"], got["metadata"]):
        meta.pop("resourceVersion")
        meta.pop("generation")
    assert got == want
