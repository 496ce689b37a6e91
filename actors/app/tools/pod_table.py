"""A pod as ``kubectl get pods`` prints it: the row's cells, computed by kubectl's rules.

The rules are upstream's printPod (kubernetes pkg/printers/internalversion/printers.go):
STATUS is the phase, or the pod's reason, overridden by the first init container that has
not finished (``Init:N/M``, ``Init:<reason>``, ``Init:ExitCode:N``), else by the last
container's waiting or terminated reason, back to ``Running``/``NotReady`` when a container
still runs, and ``Terminating`` (``Unknown`` for a lost node) once deletion began;
RESTARTS counts the containers' restarts with the age of the latest; AGE is
apimachinery's duration.HumanDuration. Pure functions of a pod as JSON (the daemon's
``/pods`` items) and the time now: the table test pins each rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NONE = "<none>"
UNKNOWN_TIME = "<unknown>"
NODE_LOST = "NodeLost"  # upstream's NodeUnreachablePodReason
SCHEDULING_GATED = "SchedulingGated"
TERMINAL_PHASES = ("Succeeded", "Failed")

COLUMNS = ("NAME", "READY", "STATUS", "RESTARTS", "AGE")
WIDE_COLUMNS = ("IP", "NODE", "NOMINATED NODE", "READINESS GATES")
NAMESPACE_COLUMN = "NAMESPACE"

# kubectl's tab writer (printers.GetNewTabWriter): cells padded by 3, at least 6 wide.
_PADDING = 3
_MIN_WIDTH = 6


@dataclass(frozen=True, slots=True)
class PodRow:
    """One pod's cells, as kubectl prints them."""

    namespace: str
    name: str
    ready: str
    status: str
    restarts: str
    age: str
    ip: str
    node: str
    nominated_node: str
    readiness_gates: str

    def cells(self, wide: bool, with_namespace: bool) -> tuple[str, ...]:
        out: tuple[str, ...] = (self.name, self.ready, self.status, self.restarts, self.age)
        if wide:
            out += (self.ip, self.node, self.nominated_node, self.readiness_gates)
        return (self.namespace, *out) if with_namespace else out


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: ``45s``, ``2m5s``, ``12m``, ``5h3m``, ``3d4h``,
    ``400d``, ``3y12d``; ``0s`` up to a second early (clock skew), ``<invalid>`` beyond."""
    whole = int(seconds)  # Go truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return _units(minutes, "m", whole % 60, "s")
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return _units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _units(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _units(whole: int, unit: str, rest: int, rest_unit: str) -> str:
    """``5h3m``; ``5h`` when the rest is 0 (HumanDuration leaves a zero rest out)."""
    return f"{whole}{unit}" if rest == 0 else f"{whole}{unit}{rest}{rest_unit}"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time of the API (``2024-05-01T10:00:00Z``), None when absent or
    unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def since(value: Any, now: datetime) -> str:
    """upstream's translateTimestampSince: the age of a time, ``<unknown>`` without one."""
    when = parse_time(value)
    if when is None:
        return UNKNOWN_TIME
    return human_duration((now - when).total_seconds())


def _restartable(container: Mapping[str, Any] | None) -> bool:
    """A sidecar: an init container with restartPolicy Always."""
    return container is not None and container.get("restartPolicy") == "Always"


def _finished_at(status: Mapping[str, Any]) -> datetime | None:
    terminated = (status.get("lastState") or {}).get("terminated")
    return parse_time(terminated.get("finishedAt")) if terminated else None


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _terminated_reason(terminated: Mapping[str, Any], prefix: str = "") -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _ready_condition(conditions: Iterable[Mapping[str, Any]]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _initialized(conditions: Iterable[Mapping[str, Any]]) -> bool:
    for condition in conditions:
        if condition.get("type") == "Initialized":
            return bool(condition.get("status") == "True")
    return False


def pod_row(pod: Mapping[str, Any], now: datetime) -> PodRow:
    """The pod's row, by upstream's printPod."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    conditions: Sequence[Mapping[str, Any]] = status.get("conditions") or ()
    total = len(spec.get("containers") or ())
    ready = 0
    restarts = 0
    last_restart: datetime | None = None
    sidecar_restarts = 0
    last_sidecar_restart: datetime | None = None

    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    if any(c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED
           for c in conditions):
        reason = SCHEDULING_GATED

    init_specs = {c.get("name"): c for c in spec.get("initContainers") or ()}
    total += sum(1 for c in init_specs.values() if _restartable(c))
    initializing = False
    for index, container in enumerate(status.get("initContainerStatuses") or ()):
        restarts += int(container.get("restartCount") or 0)
        last_restart = _later(last_restart, _finished_at(container))
        sidecar = _restartable(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, _finished_at(container))
        state = container.get("state") or {}
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:  # the initialization failed
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and (
                waiting["reason"] != "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _initialized(conditions):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        running = False
        for container in reversed(status.get("containerStatuses") or ()):
            restarts += int(container.get("restartCount") or 0)
            last_restart = _later(last_restart, _finished_at(container))
            state = container.get("state") or {}
            waiting = state.get("waiting")
            terminated = state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif container.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        # Back to Running when a container still runs ("Completed" came from another).
        if reason == "Completed" and running:
            reason = "Running" if _ready_condition(conditions) else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == NODE_LOST:
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in TERMINAL_PHASES:
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    ips = status.get("podIPs") or ()
    gates = spec.get("readinessGates") or ()
    gates_text = NONE
    if gates:
        by_type: dict[Any, Any] = {}
        for condition in conditions:  # the first of a type counts, as upstream's loop
            by_type.setdefault(condition.get("type"), condition.get("status"))
        true = sum(1 for gate in gates if by_type.get(gate.get("conditionType")) == "True")
        gates_text = f"{true}/{len(gates)}"
    return PodRow(
        namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
        ready=f"{ready}/{total}", status=reason, restarts=restarts_text,
        age=since(meta.get("creationTimestamp"), now),
        ip=(str(ips[0].get("ip") or "") or NONE) if ips else NONE,
        node=str(spec.get("nodeName") or "") or NONE,
        nominated_node=str(status.get("nominatedNodeName") or "") or NONE,
        readiness_gates=gates_text)


def format_table(rows: Sequence[PodRow], wide: bool, with_namespace: bool) -> str:
    """The rows under their header, aligned as kubectl's tab writer aligns them."""
    header = ((NAMESPACE_COLUMN,) if with_namespace else ()) + COLUMNS + (
        WIDE_COLUMNS if wide else ())
    table = [header, *(row.cells(wide, with_namespace) for row in rows)]
    widths = [max(_MIN_WIDTH, max(len(line[i]) for line in table) + _PADDING)
              for i in range(len(header) - 1)]
    out = []
    for line in table:
        padded = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.append("".join(padded) + line[-1])
    return "\n".join(out) + "\n"
