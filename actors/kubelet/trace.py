"""The kubelet's plug-in to core's traces: its replay world (older formats: trace_compat).

A replay builds the kubelet's actors from the same recipes the daemon starts them from
(actors.kubelet.tree), on the replay stubs and with the settings the trace's header
recorded, and the recorded services from the same table (actors.kubelet.recorded), each
answering as recorded. The sources read files and URLs: their messages are inputs, not
replayed.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any, cast

import msgspec

from actors.core.dispatch import ActorRef
from actors.core.supervision import ChildSpec
from actors.core.trace.stubs import InertExecutor, Record, Stubs, Unreachable, recorded_error
from actors.kubelet import (
    names,
    recorded,
    trace_compat,  # noqa: F401 - registers its format converters
    tree,
)
from actors.kubelet.events import DispatchRecorder
from actors.kubelet.sources.file import FilesChanged  # noqa: F401 - registers its message name
from actors.kubelet.sync_loop import kubelet_child
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime import errors
from runtime.cri.intercept import intercept, result_types
from runtime.cri.service import CRIRuntime
from runtime.kuberuntime.manager import KubeRuntimeManager

_NOT_ACTORS = frozenset({names.TIMERS, "test"})
"""Senders that are not actors: the timer thread, and tests telling actors things."""

_RESULTS = {"runtime": result_types(CRIRuntime), **recorded.result_types_by_target()}


class _StubRef:
    """Stands in for a child actor the replayed sync loop starts or stops."""

    def __init__(self) -> None:
        self.actor_stopped = threading.Event()
        self.actor_stopped.set()

    def stop(self, block: bool = True, timeout: float | None = None) -> None:
        return None

    def tell(self, message: object) -> None:
        return None

    def is_alive(self) -> bool:
        return False


def _stub_ref(incarnation: int) -> ActorRef:
    # Only stop, tell, is_alive and actor_stopped are ever used on a child's ref.
    return cast(ActorRef, _StubRef())


def _stub_resumed(incarnation: int, state: object) -> ActorRef:
    return _stub_ref(incarnation)


class KubeletWorld:
    """Implements actors.core.trace.stubs.World for the kubelet's actors."""

    def replayable(self, actor: str) -> bool:
        # Sources and the API writers do I/O: what they tell the others is the input.
        # The events actor only logs and keeps what the others told it; the stats actor
        # measures for the HTTP API only (see actors.kubelet.stats_collector); the log
        # rotation actor acts on file sizes, for no other actor (actors.kubelet.log_rotation).
        return (actor not in _NOT_ACTORS
                and actor not in (names.EVENTS, names.STATS, names.LOG_ROTATION)
                and not actor.startswith(("source", names.API_PREFIX)))

    def scratch_paths(self, config: Mapping[str, Any], scratch: str
                      ) -> tuple[tuple[str, str], ...]:
        node = config.get("node", {})
        return tuple((f"{scratch}/{sub}", node[key]) for sub, key in
                     (("root", "root_dir"), ("logs", "pod_logs_dir")) if key in node)

    def result_type(self, target: str, method: str) -> Any:
        return _RESULTS.get(target, {}).get(method, Any)

    def error_from(self, record: Record) -> Exception:
        cls = getattr(errors, str(record.get("type", "")), None)
        if isinstance(cls, type) and issubclass(cls, errors.CRIError):
            return cls(record.get("method", ""), record.get("detail", ""),
                       record.get("code", "UNKNOWN"))
        if isinstance(cls, type) and issubclass(cls, (errors.CgroupError,
                                                      errors.LogRotationError,
                                                      errors.HookTransportError)):
            return cls(record.get("detail", ""))
        return recorded_error(record)

    def build(self, actor: str, incarnation: int, stubs: Stubs,
              handed_over: object = None) -> Any:
        parts = self._parts(stubs)
        if handed_over is not None:
            successor = tree.successors(parts).get(actor)
            if successor is None:
                raise ValueError(f"{actor!r} was started from a hand-over, which this "
                                 "build's recipe for it does not take")
            return successor(incarnation, handed_over).build()
        if names.is_worker(actor):
            return tree.worker(parts, names.worker_uid(actor), incarnation,
                               threading.Event()).build()
        if actor == names.SYNC_LOOP:
            later = tree.successors(parts)
            # Children that take a hand-over keep it here too, as the daemon's sync loop.
            specs: list[ChildSpec] = [
                dataclasses.replace(kubelet_child((name, _stub_ref)),
                                    resume=_stub_resumed if name in later else None)
                for name, _ in tree.children(parts)]
            if parts.config.cluster:  # the API writers, in the order tree.children has them
                specs += [kubelet_child((name, _stub_ref)) for name in
                          (names.POD_WRITER, names.NODE_STATUS, names.NODE_LEASE,
                           names.EVENT_WRITER)]
            # The sources in tree.children's order: file, http, then the API server.
            specs += [kubelet_child((f"source/{kind}", _stub_ref))
                      for kind in sorted(parts.config.supervisor.expected_sources,
                                         key=lambda k: (k == "api", k))]
            if parts.config.stats:  # last, as tree.children puts it
                specs.append(kubelet_child((names.STATS, _stub_ref)))
            if parts.config.log_rotation:  # after it, as tree.children puts it
                specs.append(kubelet_child((names.LOG_ROTATION, _stub_ref)))
            sync_loop = tree.sync_loop(
                parts, specs, lambda uid, n, cancel: _stub_ref(n)).build()
            sync_loop.on_start()
            return sync_loop
        recipes = dict(tree.children(parts))
        if actor not in recipes:
            raise ValueError(f"no replay recipe for actor {actor!r}")
        return recipes[actor](incarnation).build()

    @staticmethod
    def _parts(stubs: Stubs) -> KubeletParts:
        config = ReplayConfig.from_header(stubs.config)
        # Replayed handlers may make directories (emptyDir, logs): keep them out of the
        # recorded node's, in the scratch dir (scratch_paths maps them back).
        node = msgspec.structs.replace(config.node, root_dir=f"{stubs.scratch}/root",
                                   pod_logs_dir=f"{stubs.scratch}/logs")
        runtime = cast(CRIRuntime, intercept(Unreachable(), CRIRuntime, stubs.answers))
        # What the node and the API server answered, as recorded: the replay never looks
        # at, nor changes, the machine it runs on.
        services = recorded.replayed(config, stubs.answers)
        clock: Any = stubs.clock
        timers: Any = stubs.timers
        # Back-off reads answer as recorded: the tables were shared by every worker and
        # outlived restarts, so a replayed worker's own manager cannot know them.
        manager = KubeRuntimeManager(runtime, node, clock, node_ip=config.host_ip,
                                     observe=stubs.dispatch.observe,
                                     events=DispatchRecorder(stubs.dispatch),
                                     **services.for_manager())
        return KubeletParts(stubs.dispatch, timers, clock, runtime, manager, config,
                            containerd=services.containerd, executor=InertExecutor)

