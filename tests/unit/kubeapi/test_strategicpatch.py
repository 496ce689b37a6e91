"""Two-way strategic merge patches: applying the patch to the original gives the modified
object, checked with the emulated server's merge (itself pinned to kubectl) on a table of
node and pod changes, and with ``kubectl patch --local`` (upstream's own merge) on a few."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runtime.kubeapi.strategicpatch import NODE, POD, node_status_patch, two_way_merge_patch
from tests.apiserver import patchmeta
from tests.apiserver.kubectl import local_strategic_patch
from tests.apiserver.patch import strategic_merge


def _node() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "a": "1"},
                         "annotations": {"x": "y"}},
            "spec": {"podCIDRs": ["10.0.0.0/24"]},
            "status": {
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "R",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z"}],
                "addresses": [{"type": "InternalIP", "address": "10.1.1.1"},
                              {"type": "Hostname", "address": "n1"}],
                "capacity": {"cpu": "2", "memory": "1Gi"},
                "images": [{"names": ["a"], "sizeBytes": 1}]}}


def _change(path: str, fn: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    old = _node()
    new = copy.deepcopy(old)
    fn(new)
    return path, old, new


_CASES = [
    _change("heartbeat", lambda n: n["status"]["conditions"][1].update(
        lastHeartbeatTime="2026-01-01T00:00:10Z")),
    _change("ready flips", lambda n: n["status"]["conditions"][1].update(
        status="False", reason="KubeletNotReady", message="runtime down")),
    _change("condition added", lambda n: n["status"]["conditions"].insert(
        1, {"type": "DiskPressure", "status": "False"})),
    _change("condition removed", lambda n: n["status"]["conditions"].pop(0)),
    _change("conditions reordered", lambda n: n["status"]["conditions"].reverse()),
    _change("label added and removed", lambda n: (
        n["metadata"]["labels"].pop("a"), n["metadata"]["labels"].update(b="2"))),
    _change("capacity key dropped", lambda n: n["status"]["capacity"].pop("memory")),
    _change("images replaced", lambda n: n["status"].update(
        images=[{"names": ["b"], "sizeBytes": 2}])),
    _change("owner reference", lambda n: n["metadata"].update(
        ownerReferences=[{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u1"}])),
    _change("finalizers", lambda n: n["metadata"].update(finalizers=["a", "b"])),
    _change("nothing", lambda n: None),
]


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_two_way_patch_applies_back_to_the_modified_node(
        case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, old, new = case
    patch = two_way_merge_patch(old, new, NODE)
    assert strategic_merge(old, patch, patchmeta.NODE) == new
    if old == new:
        assert patch == {}


def test_heartbeat_only_patch_is_small() -> None:
    _, old, new = _CASES[0]
    assert two_way_merge_patch(old, new, NODE) == {"status": {
        "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "Ready"}],
        "conditions": [{"type": "Ready", "lastHeartbeatTime": "2026-01-01T00:00:10Z"}]}}


def test_node_status_patch_resets_spec_and_replaces_addresses() -> None:
    old = _node()
    new = copy.deepcopy(old)
    new["spec"]["unschedulable"] = True
    new["status"]["addresses"] = [{"type": "InternalIP", "address": "10.9.9.9"},
                                  {"type": "Hostname", "address": "n1"}]
    patch = node_status_patch(old, new)
    assert "spec" not in patch
    assert patch["status"]["addresses"][-1] == {"$patch": "replace"}
    applied = strategic_merge(old, patch, patchmeta.NODE)
    assert applied["status"]["addresses"] == new["status"]["addresses"]
    assert applied["spec"] == old["spec"]


def test_pod_status_patch() -> None:
    old: dict[str, Any] = {"metadata": {"name": "p", "uid": "u"},
           "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                                                           "status": "True"}],
                      "podIPs": [{"ip": "10.0.0.5"}]}}
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Running"
    new["status"]["conditions"].append({"type": "Ready", "status": "True"})
    new["status"]["podIPs"] = [{"ip": "10.0.0.6"}]
    patch = two_way_merge_patch(old, new, POD)
    assert strategic_merge(old, patch, patchmeta.POD) == new


@pytest.mark.parametrize("index", [1, 2, 4, 5])
def test_two_way_patch_matches_kubectl_patch_local(index: int) -> None:
    _, old, new = _CASES[index]
    patch = two_way_merge_patch(old, new, NODE)
    assert local_strategic_patch(old, patch) == new
