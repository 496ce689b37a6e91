"""The pure Node computations, with tables ported from upstream's
pkg/kubelet/kubelet_node_status_test.go (TestUpdateDefaultLabels, TestNodeStatusHasChanged,
TestReconcileCMADAnnotation via TestTryRegisterWithApiServer's cases) and
pkg/kubelet/nodestatus/setters_test.go (ReadyCondition, the pressure conditions)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.errors import ConfigError
from runtime.kubeapi import nodestatus as ns
from runtime.kubeapi.nodestatus import (
    CONTROLLER_MANAGED_ATTACH,
    MachineFacts,
    NodeConfig,
    NodeHealth,
    NodeImage,
    Taint,
)

H = "kubernetes.io/hostname"
ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "failure-domain.beta.kubernetes.io/region"
ITYPE = "beta.kubernetes.io/instance-type"
OS = "kubernetes.io/os"
ARCH = "kubernetes.io/arch"

NEW = {H: "new-hostname", ZONE: "new-zone-failure-domain", REGION: "new-zone-region",
       ITYPE: "new-instance-type", OS: "new-os", ARCH: "new-arch"}
OLD = {H: "old-hostname", ZONE: "old-zone-failure-domain", REGION: "old-zone-region",
       ITYPE: "old-instance-type", OS: "old-os", ARCH: "old-arch"}


def _labels(labels: dict[str, str] | None) -> dict[str, Any]:
    return {"metadata": {} if labels is None else {"labels": dict(labels)}}


# TestUpdateDefaultLabels
_DEFAULT_LABELS = [
    ("make sure default labels exist", NEW, {}, True, NEW),
    ("make sure default labels are up to date", NEW, OLD, True, NEW),
    ("make sure existing labels do not get deleted", NEW, {**NEW, "please-persist": "foo"},
     False, {**NEW, "please-persist": "foo"}),
    ("make sure existing labels do not get deleted when initial node has no opinion", {},
     {**NEW, "please-persist": "foo"}, False, {**NEW, "please-persist": "foo"}),
    ("no update needed", NEW, NEW, False, NEW),
    ("not panic when existing node has nil labels", NEW, None, True, NEW),
    ("update labels with empty values are removed", {**NEW, ITYPE: ""}, OLD, True,
     {k: v for k, v in NEW.items() if k != ITYPE}),
]


@pytest.mark.parametrize("case", _DEFAULT_LABELS, ids=[c[0] for c in _DEFAULT_LABELS])
def test_update_default_labels(case: tuple[str, dict[str, str], dict[str, str] | None, bool,
                                           dict[str, str]]) -> None:
    _, initial, existing, needs_update, final = case
    node = _labels(existing)
    assert ns.update_default_labels(_labels(initial), node) is needs_update
    assert node["metadata"]["labels"] == final


def _cmad(on: bool) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"labels": {H: "h"}}}
    if on:
        node["metadata"]["annotations"] = {CONTROLLER_MANAGED_ATTACH: "true"}
    return node


# TestTryRegisterWithApiServer's reconcile cases: (new, existing) -> update? and saved CMAD
@pytest.mark.parametrize("new, existing, update, saved", [
    (True, True, False, True),    # existing node - no change in CMAD
    (False, True, True, False),   # existing node - CMAD disabled
    (True, False, True, True),    # existing node - CMAD enabled
])
def test_reconcile_cmad_annotation(new: bool, existing: bool, update: bool,
                                   saved: bool) -> None:
    node, changed = ns.reconcile_existing_node(_cmad(new), _cmad(existing))
    assert changed is update
    annotations = node["metadata"].get("annotations") or {}
    assert (annotations.get(CONTROLLER_MANAGED_ATTACH) == "true") is saved


def _cond(kind: str, status: str, heartbeat: str = "2026-01-01T00:00:00Z",
          transition: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "r", "message": "m",
            "lastHeartbeatTime": heartbeat, "lastTransitionTime": transition}


_READY = _cond("Ready", "True")
_MEM = _cond("MemoryPressure", "False")

# TestNodeStatusHasChanged
_HAS_CHANGED: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, bool]] = [
    ("Node status does not change with nil status.", None, None, False),
    ("Node status does not change with default status.", {}, {}, False),
    ("Node status changes with nil and default status.", None, {}, True),
    ("Node status changes with nil and status.", None,
     {"conditions": [_READY, _MEM]}, True),
    ("Node status does not change with empty conditions.", {"conditions": []},
     {"conditions": []}, False),
    ("Node status does not change", {"conditions": [_READY, _MEM]},
     {"conditions": [_READY, _MEM]}, False),
    ("Node status does not change even if heartbeat time changes.",
     {"conditions": [_READY, _MEM]},
     {"conditions": [_cond("Ready", "True", heartbeat="2026-01-01T00:01:00Z"),
                     _cond("MemoryPressure", "False", heartbeat="2026-01-01T00:01:00Z")]},
     False),
    ("Node status does not change even if the orders of conditions are different.",
     {"conditions": [_READY, _MEM]},
     {"conditions": [_cond("MemoryPressure", "False", heartbeat="2026-01-01T00:01:00Z"),
                     _cond("Ready", "True", heartbeat="2026-01-01T00:01:00Z")]}, False),
    ("Node status changes if condition status differs.", {"conditions": [_READY, _MEM]},
     {"conditions": [_READY, _cond("MemoryPressure", "True")]}, True),
    ("Node status changes if transition time changes.", {"conditions": [_READY, _MEM]},
     {"conditions": [_READY, _cond("MemoryPressure", "False",
                                   transition="2026-01-01T00:01:00Z")]}, True),
    ("Node status changes with different number of conditions.",
     {"conditions": [_READY]}, {"conditions": [_READY, _MEM]}, True),
    ("Node status changes with different phase.",
     {"phase": "Pending", "conditions": [_READY]},
     {"phase": "Running", "conditions": [_READY]}, True),
]


@pytest.mark.parametrize("case", _HAS_CHANGED, ids=[c[0] for c in _HAS_CHANGED])
def test_node_status_has_changed(case: tuple[str, dict[str, Any] | None,
                                             dict[str, Any] | None, bool]) -> None:
    _, old, new, changed = case
    assert ns.node_status_has_changed(old, new) is changed


# --- the setters -------------------------------------------------------------------------

CFG = NodeConfig(node_name="n1", hostname="n1", node_ip="10.1.2.3", architecture="amd64",
                 node_labels=(("tier", "edge"),),
                 register_with_taints=(Taint("dedicated", "NoSchedule", "gpu"),))
CAPACITY = (("cpu", "2"), ("memory", "8148564Ki"), ("ephemeral-storage", "100Gi"),
            ("pods", "110"))
FACTS = MachineFacts(capacity=CAPACITY, allocatable=CAPACITY, machine_id="mid",
                     system_uuid="uuid", boot_id="boot", kernel_version="6.1.0",
                     os_image="Debian GNU/Linux 12 (bookworm)",
                     container_runtime_version="containerd://1.6.20",
                     kubelet_version="v1.32.0",
                     images=tuple(NodeImage((f"img{i}",) * 7, i) for i in range(60)))
T0 = 1_700_000_000.0


def _conditions(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in node["status"]["conditions"]}


def test_initial_node_has_upstreams_labels_taints_annotation_and_status() -> None:
    node = ns.initial_node(CFG, FACTS, NodeHealth(), T0)
    meta = node["metadata"]
    assert meta["labels"] == {H: "n1", OS: "linux", ARCH: "amd64", "tier": "edge"}
    assert meta["annotations"] == {CONTROLLER_MANAGED_ATTACH: "true"}
    assert node["spec"] == {"taints": [{"key": "dedicated", "value": "gpu",
                                        "effect": "NoSchedule"}]}
    status = node["status"]
    assert status["addresses"] == [{"type": "InternalIP", "address": "10.1.2.3"},
                                   {"type": "Hostname", "address": "n1"}]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["nodeInfo"] == {
        "machineID": "mid", "systemUUID": "uuid", "bootID": "boot", "kernelVersion": "6.1.0",
        "osImage": "Debian GNU/Linux 12 (bookworm)",
        "containerRuntimeVersion": "containerd://1.6.20", "kubeletVersion": "v1.32.0",
        "operatingSystem": "linux", "architecture": "amd64"}
    assert [c["type"] for c in status["conditions"]] == [
        "MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert len(status["images"]) == 50 and status["images"][0]["sizeBytes"] == 59
    assert len(status["images"][0]["names"]) == 5


def test_unschedulable_registration_adds_the_taint() -> None:
    cfg = NodeConfig(node_name="n1", hostname="n1", node_ip="10.1.2.3", architecture="amd64",
                     register_schedulable=False)
    node = ns.initial_node(cfg, FACTS, NodeHealth(), T0)
    assert node["spec"] == {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}


# setters_test.go TestReadyCondition, as (name, health, capacity, existing, want)
_READY_CASES: list[tuple[str, NodeHealth, tuple[tuple[str, str], ...], str | None,
                         tuple[str, str, str]]] = [
    ("new, ready", NodeHealth(), CAPACITY, None,
     ("True", "KubeletReady", "kubelet is posting ready status")),
    ("new, not ready: runtime errors", NodeHealth(runtime_errors=("foo",)), CAPACITY, None,
     ("False", "KubeletNotReady", "foo")),
    ("new, not ready: network errors", NodeHealth(network_errors=("foo",)), CAPACITY, None,
     ("False", "KubeletNotReady", "foo")),
    ("new, not ready: storage errors", NodeHealth(storage_errors=("foo",)), CAPACITY, None,
     ("False", "KubeletNotReady", "foo")),
    ("new, not ready: runtime and network errors",
     NodeHealth(runtime_errors=("runtime",), network_errors=("network",)), CAPACITY, None,
     ("False", "KubeletNotReady", "[runtime, network]")),
    ("new, not ready: missing capacities", NodeHealth(), (), None,
     ("False", "KubeletNotReady",
      "missing node capacity for resources: cpu, memory, pods, ephemeral-storage")),
    ("transition to ready", NodeHealth(), CAPACITY, "False",
     ("True", "KubeletReady", "kubelet is posting ready status")),
    ("transition to not ready", NodeHealth(runtime_errors=("foo",)), CAPACITY, "True",
     ("False", "KubeletNotReady", "foo")),
    ("ready, no transition", NodeHealth(), CAPACITY, "True",
     ("True", "KubeletReady", "kubelet is posting ready status")),
    ("not ready, no transition", NodeHealth(runtime_errors=("foo",)), CAPACITY, "False",
     ("False", "KubeletNotReady", "foo")),
]


@pytest.mark.parametrize("case", _READY_CASES, ids=[c[0] for c in _READY_CASES])
def test_ready_condition(case: tuple[str, NodeHealth, tuple[tuple[str, str], ...],
                                     str | None, tuple[str, str, str]]) -> None:
    _, health, capacity, before, (status, reason, message) = case
    node: dict[str, Any] = {"metadata": {"name": "n1"}, "status": {}}
    if before is not None:
        node["status"]["conditions"] = [{"type": "Ready", "status": before,
                                         "lastHeartbeatTime": ns.rfc3339(T0 - 60),
                                         "lastTransitionTime": ns.rfc3339(T0 - 600)}]
    facts = MachineFacts(capacity=capacity, allocatable=capacity)
    ready = _conditions(ns.set_node_status(node, CFG, facts, health, T0))["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (status, reason, message)
    assert ready["lastHeartbeatTime"] == ns.rfc3339(T0)
    kept = before == status
    assert ready["lastTransitionTime"] == ns.rfc3339(T0 - 600 if kept else T0)


@pytest.mark.parametrize("kind, field, yes, no", [
    ("MemoryPressure", "memory_pressure", "KubeletHasInsufficientMemory",
     "KubeletHasSufficientMemory"),
    ("DiskPressure", "disk_pressure", "KubeletHasDiskPressure", "KubeletHasNoDiskPressure"),
    ("PIDPressure", "pid_pressure", "KubeletHasInsufficientPID", "KubeletHasSufficientPID"),
])
def test_pressure_conditions(kind: str, field: str, yes: str, no: str) -> None:
    calm = ns.set_node_status({"status": {}}, CFG, FACTS, NodeHealth(), T0)
    first = _conditions(calm)[kind]
    assert (first["status"], first["reason"]) == ("False", no)
    assert first["lastTransitionTime"] == first["lastHeartbeatTime"] == ns.rfc3339(T0)
    later = ns.set_node_status(calm, CFG, FACTS, NodeHealth(), T0 + 10)
    same = _conditions(later)[kind]
    assert same["lastTransitionTime"] == ns.rfc3339(T0)
    assert same["lastHeartbeatTime"] == ns.rfc3339(T0 + 10)
    pressing = NodeHealth(memory_pressure=field == "memory_pressure",
                          disk_pressure=field == "disk_pressure",
                          pid_pressure=field == "pid_pressure")
    pressed = ns.set_node_status(later, CFG, FACTS, pressing, T0 + 20)
    now = _conditions(pressed)[kind]
    assert (now["status"], now["reason"]) == ("True", yes)
    assert now["lastTransitionTime"] == ns.rfc3339(T0 + 20)
    assert not ns.node_status_has_changed(calm["status"], later["status"])
    assert ns.node_status_has_changed(later["status"], pressed["status"])


def test_set_node_status_keeps_foreign_conditions_and_capacity() -> None:
    node = {"status": {"conditions": [{"type": "NetworkUnavailable", "status": "False"}],
                       "capacity": {"example.com/dongle": "3"}}}
    out = ns.set_node_status(node, CFG, FACTS, NodeHealth(), T0)
    assert out["status"]["conditions"][0]["type"] == "NetworkUnavailable"
    assert out["status"]["capacity"]["example.com/dongle"] == "3"
    assert node == {"status": {"conditions": [{"type": "NetworkUnavailable",
                                               "status": "False"}],
                               "capacity": {"example.com/dongle": "3"}}}  # input untouched


@pytest.mark.parametrize("text, want", [
    ("", ()),
    ("dedicated=gpu:NoSchedule", (Taint("dedicated", "NoSchedule", "gpu"),)),
    ("a:NoExecute,example.com/b=x:PreferNoSchedule",
     (Taint("a", "NoExecute"), Taint("example.com/b", "PreferNoSchedule", "x"))),
])
def test_parse_taints(text: str, want: tuple[Taint, ...]) -> None:
    assert ns.parse_taints(text) == want


@pytest.mark.parametrize("text, why", [
    ("a=b", "invalid taint spec"),
    ("a=b:Sometimes", "invalid taint effect"),
    ("a:NoSchedule,a=x:NoSchedule", "duplicated taints"),
    ("-bad=x:NoSchedule", "qualified name"),
])
def test_parse_taints_errors(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        ns.parse_taints(text)


def test_aggregate_message_as_utilerrors() -> None:
    assert ns.aggregate_message(["a"]) == "a"
    assert ns.aggregate_message(["a", "b", "a"]) == "[a, b]"
    assert ns.aggregate_message([]) == ""
