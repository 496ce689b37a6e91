"""The Node object as upstream's kubelet builds it, as pure functions of their inputs.

From pkg/kubelet/kubelet_node_status.go (initialNode, updateDefaultLabels,
reconcileCMADAnnotationWithExistingNode, nodeStatusHasChanged) and pkg/kubelet/nodestatus
(the setters: NodeAddress, MachineInfo, VersionInfo, DaemonEndpoints, Images, GoRuntime,
MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition, ReadyCondition, in
that order). No I/O here: what the machine and the runtime say comes in as
:class:`MachineFacts` and :class:`NodeHealth`, the time as a number; node.py does the talking.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.apitime import rfc3339
from runtime.errors import ConfigError

__all__ = ["CONTROLLER_MANAGED_ATTACH", "DEFAULT_LABELS", "MachineFacts", "NodeConfig",
           "NodeHealth", "NodeImage", "Taint", "aggregate_message", "initial_node",
           "node_conditions_have_changed", "node_status_has_changed", "parse_taints",
           "reconcile_cmad_annotation", "reconcile_existing_node", "rfc3339",
           "set_node_status", "update_default_labels"]

CONTROLLER_MANAGED_ATTACH = "volumes.kubernetes.io/controller-managed-attach-detach"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
DEFAULT_LABELS = (
    LABEL_HOSTNAME, "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type", LABEL_OS,
    LABEL_ARCH, "node.kubernetes.io/windows-build",
)
"""updateDefaultLabels' list: the labels the kubelet owns on an existing Node."""
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_NAMES_PER_IMAGE = 5
"""MaxNamesPerImageInNodeStatus (nodestatus/setters.go)."""
NODE_STATUS_MAX_IMAGES = 50
"""KubeletConfiguration nodeStatusMaxImages' default."""
REQUIRED_CAPACITY = ("cpu", "memory", "pods", "ephemeral-storage")


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def json(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*"
                        r"[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_taints(text: str, flag: str = "--register-with-taints") -> tuple[Taint, ...]:
    """``key=value:Effect,key:Effect`` as upstream's taints.ParseTaints reads it."""
    taints: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for spec in (s.strip() for s in text.split(",")):
        if not spec:
            continue
        head, sep, effect = spec.rpartition(":")
        if not sep:
            raise ConfigError(f'{flag}: invalid taint spec: {spec}: want key=value:effect')
        key, _, value = head.partition("=")
        if effect not in TAINT_EFFECTS:
            raise ConfigError(f"{flag}: invalid taint effect: {effect}, unsupported taint "
                              f"effect (want one of {', '.join(TAINT_EFFECTS)})")
        if len(key) > 316 or not _QUALIFIED.match(key):
            raise ConfigError(f'{flag}: invalid taint spec: {spec}: key "{key}" is not a '
                              "qualified name")
        if len(value) > 63 or not _VALUE.match(value):
            raise ConfigError(f'{flag}: invalid taint spec: {spec}: value "{value}" is not '
                              "a valid label value")
        if (key, effect) in seen:
            raise ConfigError(f"{flag}: duplicated taints with the same key and effect: "
                              f"{key}:{effect}")
        seen.add((key, effect))
        taints.append(Taint(key, effect, value))
    return tuple(taints)


@dataclass(frozen=True)
class NodeConfig:
    """The kubelet's settings that shape its Node (flags and KubeletConfiguration)."""

    node_name: str
    hostname: str
    node_ip: str
    """The InternalIP: --node-ip, or what node.py resolved as upstream does without it."""
    architecture: str
    operating_system: str = "linux"
    node_labels: tuple[tuple[str, str], ...] = ()
    register_with_taints: tuple[Taint, ...] = ()
    register_schedulable: bool = True
    kubelet_port: int = 10250
    controller_attach_detach: bool = True
    max_images: int = NODE_STATUS_MAX_IMAGES


@dataclass(frozen=True)
class NodeImage:
    """One image of the runtime's list: its names (repo digests, then repo tags), its size
    and its ID (the sort's tie-break)."""

    names: tuple[str, ...]
    size_bytes: int
    id: str = ""


@dataclass(frozen=True)
class MachineFacts:
    """What cAdvisor and the runtime tell upstream's setters."""

    capacity: tuple[tuple[str, str], ...]
    allocatable: tuple[tuple[str, str], ...]
    machine_id: str = ""
    system_uuid: str = ""
    boot_id: str = ""
    kernel_version: str = ""
    os_image: str = ""
    container_runtime_version: str = ""
    """``<runtime>://<version>`` from CRI Version, or ``<runtime>://Unknown``."""
    kubelet_version: str = ""
    images: tuple[NodeImage, ...] = ()


@dataclass(frozen=True)
class NodeHealth:
    """What the Ready and pressure conditions are computed from."""

    runtime_errors: tuple[str, ...] = ()
    network_errors: tuple[str, ...] = ()
    storage_errors: tuple[str, ...] = ()
    shutdown_errors: tuple[str, ...] = ()  # the node shutdown manager's ShutdownStatus
    memory_pressure: bool = False
    disk_pressure: bool = False
    pid_pressure: bool = False




def aggregate_message(messages: tuple[str, ...] | list[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message alone, several as "[a, b]",
    repeats dropped."""
    seen: list[str] = []
    for message in messages:
        if message and message not in seen:
            seen.append(message)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]" if seen else ""


# --- the initial node --------------------------------------------------------------------


def initial_node(cfg: NodeConfig, facts: MachineFacts, health: NodeHealth, now: float
                 ) -> dict[str, Any]:
    """initialNode: labels, taints, the attach-detach annotation, --node-labels, then
    every status setter."""
    labels = {LABEL_HOSTNAME: cfg.hostname, LABEL_OS: cfg.operating_system,
              LABEL_ARCH: cfg.architecture}
    labels.update(dict(cfg.node_labels))
    taints = [t.json() for t in cfg.register_with_taints]
    spec: dict[str, Any] = {}
    if not cfg.register_schedulable:
        spec["unschedulable"] = True
        if not any(t["key"] == TAINT_UNSCHEDULABLE and t["effect"] == "NoSchedule"
                   for t in taints):
            taints.append({"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    meta: dict[str, Any] = {"name": cfg.node_name, "labels": labels}
    if cfg.controller_attach_detach:
        meta["annotations"] = {CONTROLLER_MANAGED_ATTACH: "true"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": {}}
    return set_node_status(node, cfg, facts, health, now)


def update_default_labels(initial: Mapping[str, Any], existing: dict[str, Any]) -> bool:
    """updateDefaultLabels: the kubelet's default labels on ``existing`` take the initial
    node's values (a label the initial node lacks is left alone; empty values are
    removed). Changes ``existing``; True when it changed."""
    wanted = (initial.get("metadata") or {}).get("labels") or {}
    meta = existing.setdefault("metadata", {})
    labels = meta.get("labels")
    if labels is None:
        labels = meta["labels"] = {}
    needs_update = False
    for label in DEFAULT_LABELS:
        if label not in wanted:
            continue
        if labels.get(label, "") != wanted[label]:
            labels[label] = wanted[label]
            needs_update = True
        if labels.get(label, "") == "":
            labels.pop(label, None)
    return needs_update


def reconcile_cmad_annotation(initial: Mapping[str, Any], existing: dict[str, Any]) -> bool:
    """reconcileCMADAnnotationWithExistingNode: the controller-managed attach-detach
    annotation follows the initial node. Changes ``existing``; True when it changed."""
    new = ((initial.get("metadata") or {}).get("annotations") or {})
    meta = existing.setdefault("metadata", {})
    old = meta.get("annotations") or {}
    if new.get(CONTROLLER_MANAGED_ATTACH, "") == old.get(CONTROLLER_MANAGED_ATTACH, ""):
        return False
    annotations = dict(old)
    if CONTROLLER_MANAGED_ATTACH in new:
        annotations[CONTROLLER_MANAGED_ATTACH] = new[CONTROLLER_MANAGED_ATTACH]
    else:
        annotations.pop(CONTROLLER_MANAGED_ATTACH, None)
    meta["annotations"] = annotations
    return True


def reconcile_existing_node(initial: Mapping[str, Any], existing: Mapping[str, Any]
                            ) -> tuple[dict[str, Any], bool]:
    """What tryRegisterWithAPIServer does to a Node that already exists: the reconciled
    copy, and whether it must be patched. (Extended resources are not zeroed: no device
    plugins here, so there are none.)"""
    node = copy.deepcopy(dict(existing))
    changed = reconcile_cmad_annotation(initial, node)
    changed = update_default_labels(initial, node) or changed
    return node, changed


# --- the status setters ------------------------------------------------------------------


def set_node_status(node: Mapping[str, Any], cfg: NodeConfig, facts: MachineFacts,
                    health: NodeHealth, now: float) -> dict[str, Any]:
    """setNodeStatus: a copy of ``node`` with every setter applied in upstream's order."""
    out = copy.deepcopy(dict(node))
    status = out.setdefault("status", {})
    # NodeAddress (no cloud provider): the node IP, then the hostname.
    status["addresses"] = [{"type": "InternalIP", "address": cfg.node_ip},
                           {"type": "Hostname", "address": cfg.hostname}]
    # MachineInfo: capacity (keeping what others advertise), allocatable, machine ids.
    capacity = dict(status.get("capacity") or {})
    capacity.update(dict(facts.capacity))
    status["capacity"] = capacity
    allocatable = dict(status.get("allocatable") or {})
    allocatable.update(dict(facts.allocatable))
    status["allocatable"] = allocatable
    info = dict(status.get("nodeInfo") or {})
    info.update({"machineID": facts.machine_id, "systemUUID": facts.system_uuid,
                 "bootID": facts.boot_id})
    # VersionInfo, then GoRuntime.
    info.update({"kernelVersion": facts.kernel_version, "osImage": facts.os_image,
                 "containerRuntimeVersion": facts.container_runtime_version,
                 "kubeletVersion": facts.kubelet_version,
                 "operatingSystem": cfg.operating_system, "architecture": cfg.architecture})
    status["nodeInfo"] = info
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": cfg.kubelet_port}}
    # Images: the list comes sorted (ByImageSize); sorted again so any input is right.
    images = sorted(facts.images, key=lambda i: (i.size_bytes, i.id), reverse=True)
    if cfg.max_images > -1:
        images = images[:cfg.max_images]
    status["images"] = [{"names": list(i.names[:MAX_NAMES_PER_IMAGE]),
                         "sizeBytes": i.size_bytes} for i in images]
    conditions = [dict(c) for c in status.get("conditions") or []]
    stamp = rfc3339(now)
    for kind, pressed, yes, no in (
            ("MemoryPressure", health.memory_pressure,
             ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
             ("KubeletHasSufficientMemory", "kubelet has sufficient memory available")),
            ("DiskPressure", health.disk_pressure,
             ("KubeletHasDiskPressure", "kubelet has disk pressure"),
             ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")),
            ("PIDPressure", health.pid_pressure,
             ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
             ("KubeletHasSufficientPID", "kubelet has sufficient PID available"))):
        _pressure_condition(conditions, kind, pressed, yes, no, stamp)
    _ready_condition(conditions, capacity, health, stamp)
    status["conditions"] = conditions
    return out


def _pressure_condition(conditions: list[dict[str, Any]], kind: str, pressed: bool,
                        yes: tuple[str, str], no: tuple[str, str], stamp: str) -> None:
    condition = next((c for c in conditions if c.get("type") == kind), None)
    if condition is None:
        condition = {"type": kind, "status": "Unknown"}
        conditions.append(condition)
    condition["lastHeartbeatTime"] = stamp
    status, (reason, message) = ("True", yes) if pressed else ("False", no)
    if condition.get("status") != status:
        condition.update({"status": status, "reason": reason, "message": message,
                          "lastTransitionTime": stamp})


def _ready_condition(conditions: list[dict[str, Any]], capacity: Mapping[str, Any],
                     health: NodeHealth, stamp: str) -> None:
    errs = [*health.runtime_errors, *health.network_errors, *health.storage_errors,
            *health.shutdown_errors]
    missing = [r for r in REQUIRED_CAPACITY if r not in capacity]
    if missing:
        errs.append(f"missing node capacity for resources: {', '.join(missing)}")
    new: dict[str, Any] = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status",
                           "lastHeartbeatTime": stamp}
    if errs:
        new.update(status="False", reason="KubeletNotReady", message=aggregate_message(errs))
    for i, condition in enumerate(conditions):
        if condition.get("type") == "Ready":
            same = condition.get("status") == new["status"]
            new["lastTransitionTime"] = condition.get("lastTransitionTime") if same else stamp
            conditions[i] = new
            return
    new["lastTransitionTime"] = stamp
    conditions.append(new)


# --- change detection --------------------------------------------------------------------


def node_conditions_have_changed(old: list[Mapping[str, Any]] | None,
                                 new: list[Mapping[str, Any]] | None) -> bool:
    """nodeConditionsHaveChanged: any difference but lastHeartbeatTime, in any order."""
    old, new = old or [], new or []
    if len(old) != len(new):
        return True

    def strip(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out = [{k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in items]
        return sorted(out, key=lambda c: str(c.get("type", "")))

    return strip(old) != strip(new)


def node_status_has_changed(old: Mapping[str, Any] | None,
                            new: Mapping[str, Any] | None) -> bool:
    """nodeStatusHasChanged: the status differs other than in heartbeat times."""
    if old is None and new is None:
        return False
    if old is None or new is None:
        return True
    if node_conditions_have_changed(old.get("conditions"), new.get("conditions")):
        return True
    # Semantic equality: an empty list or map equals an absent one.
    def rest(status: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in status.items() if k != "conditions" and v not in (None, [], {},
                                                                                   "")}
    return rest(old) != rest(new)
