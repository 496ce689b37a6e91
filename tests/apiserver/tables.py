"""Server-side printing: the ``meta.k8s.io/v1`` Table kubectl asks for on ``kubectl get``.

Columns are upstream's (pkg/printers/internalversion) for pods, nodes, namespaces,
configmaps, services, leases and certificatesigningrequests; everything else gets the
default Name/Created At table.
Priority-1 columns show with ``-o wide`` only, as upstream.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Column = tuple[str, str, int]  # name, type, priority
Cells = Callable[[dict[str, Any], float], list[Any]]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    y = d // 365
    if y < 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"


def _age(obj: dict[str, Any], now: float) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    at = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    return human_duration(now - at)


def _since(stamp: Any, now: float) -> str:
    if not stamp:
        return "<unknown>"
    at = datetime.strptime(str(stamp)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return human_duration(now - at)


def _event_cells(event: dict[str, Any], now: float) -> list[Any]:
    """Upstream's printEvent: Last Seen ("(xN over D)" when counted), Type, Reason, Object,
    Subobject, Source, Message, First Seen, Count, Name."""
    inv = event.get("involvedObject", {})
    count = int(event.get("count") or 0)
    first = _since(event.get("firstTimestamp"), now)
    last = _since(event.get("lastTimestamp") or event.get("eventTime"), now)
    if count > 1:
        last = f"{last} (x{count} over {first})"
    source = event.get("source") or {}
    origin = ", ".join(v for v in (source.get("component"), source.get("host")) if v)
    return [last, event.get("type", ""), event.get("reason", ""),
            f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
            inv.get("fieldPath", ""), origin, str(event.get("message", "")).strip(), first,
            count, event["metadata"]["name"]]


def _pod_cells(pod: dict[str, Any], now: float) -> list[Any]:
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in statuses:
        state = c.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [pod["metadata"]["name"], f"{ready}/{len(spec.get('containers') or [])}", reason,
            restarts, _age(pod, now), status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            f"{len(gates)}" if gates else "<none>"]


def _node_cells(node: dict[str, Any], now: float) -> list[Any]:
    status = node.get("status", {})
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else {"True": "Ready", "False": "NotReady"}.get(
        ready.get("status", ""), "Unknown")
    if node.get("spec", {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = node.get("metadata", {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    info = status.get("nodeInfo") or {}
    return [node["metadata"]["name"], state, ",".join(roles) or "<none>", _age(node, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>")]


def _service_cells(svc: dict[str, Any], now: float) -> list[Any]:
    spec = svc.get("spec", {})
    ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}"
                     for p in spec.get("ports") or []) or "<none>"
    return [svc["metadata"]["name"], spec.get("type", ""), spec.get("clusterIP") or "<none>",
            "<none>", ports, _age(svc, now)]


def _csr_cells(obj: dict[str, Any], now: float) -> list[Any]:
    from tests.apiserver.csr import table_cells

    return [obj["metadata"]["name"], _age(obj, now), *table_cells(obj)]


TABLES: dict[str, tuple[list[Column], Cells]] = {
    "Pod": ([("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0),
             ("Restarts", "string", 0), ("Age", "string", 0), ("IP", "string", 1),
             ("Node", "string", 1), ("Nominated Node", "string", 1),
             ("Readiness Gates", "string", 1)], _pod_cells),
    "Node": ([("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0),
              ("Age", "string", 0), ("Version", "string", 0), ("Internal-IP", "string", 1),
              ("External-IP", "string", 1), ("OS-Image", "string", 1),
              ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)], _node_cells),
    "Namespace": ([("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)],
                  lambda o, now: [o["metadata"]["name"], o.get("status", {}).get("phase", ""),
                                  _age(o, now)]),
    "ConfigMap": ([("Name", "string", 0), ("Data", "integer", 0), ("Age", "string", 0)],
                  lambda o, now: [o["metadata"]["name"],
                                  len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                  _age(o, now)]),
    "Service": ([("Name", "string", 0), ("Type", "string", 0), ("Cluster-IP", "string", 0),
                 ("External-IP", "string", 0), ("Port(s)", "string", 0), ("Age", "string", 0)],
                _service_cells),
    "Event": ([("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
               ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
               ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
               ("Name", "string", 1)], _event_cells),
    "Lease": ([("Name", "string", 0), ("Holder", "string", 0), ("Age", "string", 0)],
              lambda o, now: [o["metadata"]["name"],
                              o.get("spec", {}).get("holderIdentity", ""), _age(o, now)]),
    "RuntimeClass": ([("Name", "string", 0), ("Handler", "string", 0), ("Age", "string", 0)],
                     lambda o, now: [o["metadata"]["name"], o.get("handler", ""),
                                     _age(o, now)]),
}

TABLES["CertificateSigningRequest"] = (
    [("Name", "string", 0), ("Age", "string", 0), ("SignerName", "string", 0),
     ("Requestor", "string", 0), ("RequestedDuration", "string", 0),
     ("Condition", "string", 0)], _csr_cells)

DEFAULT: tuple[list[Column], Cells] = (
    [("Name", "string", 0), ("Created At", "date", 0)],
    lambda o, now: [o["metadata"]["name"], o.get("metadata", {}).get("creationTimestamp")])


def _row(obj: dict[str, Any], cells: Cells, include: str, now: float) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": cells(obj, now)}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": obj.get("metadata", {})}
    return row


def table(kind: str, objects: list[dict[str, Any]], metadata: dict[str, Any],
          include: str = "Metadata", now: float | None = None) -> dict[str, Any]:
    """A Table of ``objects`` (items of a list, or one object) of ``kind``."""
    columns, cells = TABLES.get(kind, DEFAULT)
    at = time.time() if now is None else now
    return {
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
        "columnDefinitions": [
            {"name": name, "type": type_, "format": "name" if name == "Name" else "",
             "description": name, "priority": priority}
            for name, type_, priority in columns],
        "rows": [_row(o, cells, include, at) for o in objects],
    }
