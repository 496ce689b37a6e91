"""Building the actors a replay feeds, with the recording's settings and replay stubs."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import msgspec

from actors.core.trace.names import MESSAGES
from actors.core.trace.stubs import (
    InertExecutor,
    ReplayClock,
    ReplayDispatch,
    ReplayRuntime,
    ReplayTimers,
)
from actors.kubelet.pleg import PLEG
from actors.kubelet.pod_killer import PodKiller
from actors.kubelet.pod_worker import PodWorker, WorkerTiming
from actors.kubelet.probe_manager import ProbeManager
from actors.kubelet.runtime_monitor import RuntimeMonitor
from actors.kubelet.sources.file import FilesChanged  # noqa: F401 - registers its message name
from actors.kubelet.status_manager import StatusManager
from actors.kubelet.sync_loop import SyncLoop, SyncLoopSettings
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings

# What traces recorded before message names existed called each message (its module path).
LEGACY_TYPES: dict[str, str] = {
    **{f"actors.messages.{name}": name for name in (
        "SourceSnapshot", "Tick", "Relisted", "RelistFailed", "UpdatePod", "PodWorkerDone",
        "PodObserved", "PodRejected", "DesiredPods", "GetPods", "PodForgotten",
        "ProbeVerdict", "KillRuntimePod", "RuntimePodKilled", "RuntimeHealth",
        "ChildFailed", "ChildExited", "RestartChild", "DeadLetter", "Stop")},
    "actors.pod_worker.RunPending": "RunPending",
    "actors.pod_killer.KillFinished": "KillFinished",
    "actors.runtime_monitor.Recheck": "Recheck",
    "actors.probe_manager.ProbeOutcome": "ProbeOutcome",
    "actors.probe_manager.ProbeQuery": "ProbeQuery",
    "actors.sources.file.FilesChanged": "FilesChanged",
    "actors.supervisor.GetHealth": "GetHealth",
    "actors.supervisor.GetRunningPods": "GetRunningPods",
}
for _recorded, _name in LEGACY_TYPES.items():
    MESSAGES.legacy(_recorded, _name)

NOT_REPLAYABLE = frozenset({"source", "source/file", "source/http", "timers", "test"})
"""Actors whose handlers read files or URLs: their messages are inputs, not replayed."""

_KUBELET_CHILDREN = ("status", "probes", "killer", "pleg", "runtime-monitor")


class _StubRef:
    """Stands in for a child actor the replayed supervisor starts or stops."""

    def __init__(self) -> None:
        self.actor_stopped = threading.Event()
        self.actor_stopped.set()

    def stop(self, block: bool = True, timeout: float | None = None) -> None:
        return None

    def tell(self, message: object) -> None:
        return None

    def is_alive(self) -> bool:
        return False


def _fields(cls: Any, values: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in values.items() if k in names}


def build_actor(actor: str, incarnation: int, config: dict[str, Any],
                dispatch: ReplayDispatch, runtime: ReplayRuntime, containerd: ReplayRuntime,
                clock: ReplayClock, timers: ReplayTimers, scratch: str) -> Any:
    """A fresh, unstarted instance of ``actor`` wired to the replay stubs."""
    node = dict(config.get("node", {}))
    # Replayed handlers may make directories (emptyDir, logs): keep them out of the node's.
    node.update(root_dir=f"{scratch}/root", pod_logs_dir=f"{scratch}/logs")
    settings = NodeSettings(**_fields(NodeSettings, node))
    host_ip = str(config.get("host_ip", ""))
    runtime_any: Any = runtime
    clock_any: Any = clock
    timers_any: Any = timers
    manager = KubeRuntimeManager(runtime_any, settings, clock_any, node_ip=host_ip)
    if actor.startswith("pod/"):
        timing = WorkerTiming(**_fields(WorkerTiming, config.get("timing", {})))
        return PodWorker(PodUID(actor[4:]), dispatch, manager, clock_any, None, timing,
                         threading.Event(), incarnation=incarnation)
    if actor == "supervisor":
        raw = _fields(SyncLoopSettings, dict(config.get("supervisor", {})))
        settings_s = msgspec.convert(raw, SyncLoopSettings)  # nested specs included
        sources = settings_s.expected_sources
        children = [(name, lambda n: _StubRef()) for name in _KUBELET_CHILDREN]
        children += [(f"source/{s}", lambda n: _StubRef()) for s in sorted(sources)]
        supervisor = SyncLoop(dispatch, timers_any, clock_any, children,
                                lambda uid, n, cancel: _StubRef(), settings_s, None)
        supervisor.on_start()
        return supervisor
    if actor == "pleg":
        return PLEG(dispatch, runtime_any, clock_any, incarnation)
    if actor == "status":
        return StatusManager(dispatch, clock_any, None, host_ip, incarnation)
    if actor == "probes":
        return ProbeManager(dispatch, timers_any, runtime_any, clock_any, incarnation,
                            executor=InertExecutor())
    if actor == "killer":
        return PodKiller(dispatch, manager, incarnation=incarnation, executor=InertExecutor())
    if actor == "runtime-monitor":
        managed: Any = containerd if config.get("embedded") else None
        return RuntimeMonitor(dispatch, timers_any, runtime_any, clock_any, managed, None,
                              incarnation)
    raise ValueError(f"no replay recipe for actor {actor!r}")
