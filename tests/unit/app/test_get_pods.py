"""``kubelet-actors get pods``: kubectl's printPod rules over a table of pods, its
HumanDuration, the tab writer's alignment, and the List that -o json/yaml print."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml_rs

from actors.app.tools.get_cli import as_list, output, select
from actors.app.tools.pod_table import format_table, human_duration, pod_row

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1.5, "0s"), (0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"),
    (125, "2m5s"), (599, "9m59s"), (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"),
    (5 * 3600 + 3 * 60, "5h3m"), (8 * 3600, "8h"), (47 * 3600, "47h"), (48 * 3600, "2d"),
    (3 * 86400 + 4 * 3600, "3d4h"), (8 * 86400, "8d"), (400 * 86400, "400d"),
    (2 * 365 * 86400, "2y"), (3 * 365 * 86400 + 12 * 86400, "3y12d"),
    (9 * 365 * 86400, "9y"),
])
def test_human_duration_is_apimachinerys(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": extra.pop("name", "c"), "ready": ready, "restartCount": restarts,
            "state": {"running": {"startedAt": ago(60)}}, **extra}


def waiting(reason: str, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": extra.pop("name", "c"), "ready": False, "restartCount": restarts,
            "state": {"waiting": {"reason": reason}}, **extra}


def terminated(exit_code: int = 0, reason: str = "", signal: int = 0,
               **extra: Any) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"name": extra.pop("name", "c"), "ready": False, "restartCount": 0,
            "state": {"terminated": state}, **extra}


def pod(phase: str = "Running", containers: int = 1, statuses: tuple[Any, ...] = (),
        inits: tuple[dict[str, Any], ...] = (), init_statuses: tuple[Any, ...] = (),
        conditions: tuple[dict[str, Any], ...] = (), **extra: Any) -> dict[str, Any]:
    meta = {"name": "p", "namespace": "default", "creationTimestamp": ago(300),
            **extra.pop("meta", {})}
    status = {"phase": phase, "conditions": list(conditions),
              "containerStatuses": list(statuses),
              "initContainerStatuses": list(init_statuses), **extra.pop("status", {})}
    spec = {"containers": [{"name": f"c{i}"} for i in range(containers)],
            "initContainers": list(inits), **extra.pop("spec", {})}
    return {"metadata": meta, "spec": spec, "status": status}


LAST: dict[str, Any] = {"lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(180)}}}
READY = {"type": "Ready", "status": "True"}
NOT_READY = {"type": "Ready", "status": "False"}
INITIALIZED = {"type": "Initialized", "status": "True"}
TWO_INITS = ({"name": "i0"}, {"name": "i1"})
SIDECAR = {"name": "side", "restartPolicy": "Always"}

CASES: list[tuple[str, dict[str, Any], tuple[str, str, str]]] = [
    ("running", pod(statuses=(running(),), conditions=(READY,)), ("1/1", "Running", "0")),
    ("pending, nothing yet", pod("Pending"), ("0/1", "Pending", "0")),
    ("not ready yet", pod(statuses=(running(ready=False),)), ("0/1", "Running", "0")),
    ("the pod's reason wins over the phase",
     pod("Failed", status={"reason": "Evicted"}), ("0/1", "Evicted", "0")),
    ("scheduling gated",
     pod("Pending", conditions=({"type": "PodScheduled", "status": "False",
                                 "reason": "SchedulingGated"},)),
     ("0/1", "SchedulingGated", "0")),
    ("crash loop, restarts with the last one's age",
     pod(statuses=(waiting("CrashLoopBackOff", restarts=4, **LAST),)),
     ("0/1", "CrashLoopBackOff", "4 (3m ago)")),
    ("image pull back-off", pod("Pending", statuses=(waiting("ImagePullBackOff"),)),
     ("0/1", "ImagePullBackOff", "0")),
    ("completed", pod("Succeeded", statuses=(terminated(0, "Completed"),)),
     ("0/1", "Completed", "0")),
    ("error", pod("Failed", statuses=(terminated(1, "Error"),)), ("0/1", "Error", "0")),
    ("exit code without a reason", pod("Failed", statuses=(terminated(3),)),
     ("0/1", "ExitCode:3", "0")),
    ("signal without a reason", pod("Failed", statuses=(terminated(137, signal=9),)),
     ("0/1", "Signal:9", "0")),
    ("the first container's state wins (walked from the last)",
     pod(containers=2, statuses=(waiting("ErrImagePull", name="a"),
                                 waiting("CrashLoopBackOff", name="b"))),
     ("0/2", "ErrImagePull", "0")),
    ("one completed, one running and ready: Running",
     pod(containers=2, statuses=(terminated(0, "Completed", name="a"),
                                 running(name="b")), conditions=(READY,)),
     ("1/2", "Running", "0")),
    ("one completed, one running, the pod not ready: NotReady",
     pod(containers=2, statuses=(terminated(0, "Completed", name="a"),
                                 running(name="b")), conditions=(NOT_READY,)),
     ("1/2", "NotReady", "0")),
    ("init: none done", pod("Pending", inits=TWO_INITS,
                            init_statuses=(waiting("PodInitializing", name="i0"),)),
     ("0/1", "Init:0/2", "0")),
    ("init: one of two done",
     pod("Pending", inits=TWO_INITS,
         init_statuses=(terminated(0, "Completed", name="i0"), running(name="i1"))),
     ("0/1", "Init:1/2", "0")),
    ("init: crash looping, its restarts counted",
     pod("Pending", inits=TWO_INITS,
         init_statuses=(waiting("CrashLoopBackOff", restarts=2, name="i0", **LAST),),
         statuses=(waiting("PodInitializing"),)),
     ("0/1", "Init:CrashLoopBackOff", "2 (3m ago)")),
    ("init: failed with a reason",
     pod("Failed", inits=TWO_INITS, init_statuses=(terminated(1, "Error", name="i0"),)),
     ("0/1", "Init:Error", "0")),
    ("init: failed with an exit code only",
     pod("Failed", inits=TWO_INITS, init_statuses=(terminated(2, name="i0"),)),
     ("0/1", "Init:ExitCode:2", "0")),
    ("init: killed by a signal",
     pod("Failed", inits=TWO_INITS, init_statuses=(terminated(137, signal=9, name="i0"),)),
     ("0/1", "Init:Signal:9", "0")),
    ("sidecar started and ready: counted in READY, its restarts kept",
     pod(inits=(SIDECAR,), conditions=(INITIALIZED, READY),
         init_statuses=(running(name="side", restarts=1, started=True, **LAST),),
         statuses=(running(name="c0"),)),
     ("2/2", "Running", "1 (3m ago)")),
    ("terminating", pod(meta={"deletionTimestamp": ago(1)}, statuses=(running(),)),
     ("1/1", "Terminating", "0")),
    ("deleted after it ended: not Terminating",
     pod("Succeeded", meta={"deletionTimestamp": ago(1)},
         statuses=(terminated(0, "Completed"),)),
     ("0/1", "Completed", "0")),
    ("node lost", pod(meta={"deletionTimestamp": ago(1)}, status={"reason": "NodeLost"}),
     ("0/1", "Unknown", "0")),
]


@pytest.mark.parametrize(("case", "given", "cells"), CASES, ids=[c[0] for c in CASES])
def test_ready_status_and_restarts_as_kubectl_prints_them(
        case: str, given: dict[str, Any], cells: tuple[str, str, str]) -> None:
    row = pod_row(given, NOW)
    assert (row.ready, row.status, row.restarts) == cells
    assert row.age == "5m"


def test_wide_cells_and_readiness_gates() -> None:
    bare = pod_row(pod(), NOW)
    assert (bare.ip, bare.node, bare.nominated_node, bare.readiness_gates) == (
        "<none>", "<none>", "<none>", "<none>")
    gated = pod_row(pod(spec={"nodeName": "n1", "readinessGates": [
        {"conditionType": "example.com/a"}, {"conditionType": "example.com/b"}]},
        conditions=({"type": "example.com/a", "status": "True"},
                    {"type": "example.com/b", "status": "False"}),
        status={"podIPs": [{"ip": "10.88.0.7"}, {"ip": "fd00::7"}], "podIP": "10.88.0.7",
                "nominatedNodeName": "n2"}), NOW)
    assert (gated.ip, gated.node, gated.nominated_node, gated.readiness_gates) == (
        "10.88.0.7", "n1", "n2", "1/2")
    assert pod_row(pod(meta={"creationTimestamp": None}), NOW).age == "<unknown>"


def test_the_table_is_aligned_as_kubectls_tab_writer() -> None:
    rows = [pod_row(pod(meta={"name": "web"}, statuses=(running(),)), NOW),
            pod_row(pod(meta={"name": "crashing-job", "namespace": "batch"},
                        statuses=(waiting("CrashLoopBackOff", restarts=12, **LAST),)), NOW)]
    assert format_table(rows, wide=False, with_namespace=False) == (
        "NAME           READY   STATUS             RESTARTS      AGE\n"
        "web            1/1     Running            0             5m\n"
        "crashing-job   0/1     CrashLoopBackOff   12 (3m ago)   5m\n")
    assert format_table(rows[:1], wide=True, with_namespace=True).splitlines() == [
        "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     "
        "NOMINATED NODE   READINESS GATES",
        "default     web    1/1     Running   0          5m    <none>   <none>   "
        "<none>           <none>"]


def test_select_filters_by_namespace_and_name_in_kubectls_order() -> None:
    items = [pod(meta={"name": n, "namespace": ns})
             for n, ns in (("b", "default"), ("a", "kube-system"), ("a", "default"))]
    names = [(p["metadata"]["namespace"], p["metadata"]["name"])
             for p in select(items, None, "")]
    assert names == [("default", "a"), ("default", "b"), ("kube-system", "a")]
    assert [p["metadata"]["name"] for p in select(items, "default", "")] == ["a", "b"]
    assert [p["metadata"]["namespace"] for p in select(items, None, "a")] == [
        "default", "kube-system"]
    assert select(items, "other", "") == []


def test_json_and_yaml_print_a_v1_list_or_the_named_pod() -> None:
    items = [pod(meta={"name": "a"}), pod(meta={"name": "b"})]
    listing = json.loads(output(items, "json", "", False, NOW))
    assert listing == as_list(items)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "List")
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in listing["items"]] == [
        ("v1", "Pod", "a"), ("v1", "Pod", "b")]
    assert yaml_rs.loads(output(items, "yaml", "", False, NOW), parse_datetime=False) == listing
    one = json.loads(output(items[:1], "json", "a", False, NOW))
    assert (one["kind"], one["metadata"]["name"]) == ("Pod", "a")
