"""The recorded services, declared once: what the kubelet asks of the node and the API
server through a narrow interface, so that a trace records every answer and a replay
gives it back without touching the machine it replays on.

Each row of ``SERVICES`` names one: its calls' target in a trace, the Protocol it speaks,
whether a kubelet of a given configuration has it, and how the live one is made. The
daemon's wiring (actors.app.daemon) makes them with ``live``, the replay
(actors.kubelet.trace) with ``replayed``, the test scenarios (tests.traces.scenarios)
with ``live`` on their fake node: a new service is one row here, none of them changes.

The CRI runtime is not a row: the daemon's own interceptors (the parallel limit, timing,
a drill's faults) stand between it and the actors too, and everything else is built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from actors.core.trace.stubs import Unreachable
from actors.kubelet.tree import ReplayConfig
from runtime.cm.pod_cgroups import POD_CGROUPS_TARGET, PodCgroupService
from runtime.containerd.managed import MANAGED_CONTAINERD_TARGET, ManagedContainerd
from runtime.cri.intercept import Interceptor, intercept, result_types
from runtime.kuberuntime.container_logs import (
    CONTAINER_LOGS_TARGET,
    ContainerLogFiles,
    NodeContainerLogFiles,
)
from runtime.kuberuntime.hook_transport import (
    HOOK_TRANSPORT_TARGET,
    HookTransport,
    NodeHookTransport,
)
from runtime.kuberuntime.host_paths import HOST_PATHS_TARGET, HostPaths, NodeHostPaths
from runtime.kuberuntime.object_source import OBJECTS_TARGET, ObjectSource
from runtime.kuberuntime.volume_mounts import (
    VOLUME_MOUNTS_TARGET,
    NodeVolumeMounts,
    VolumeMounts,
)

__all__ = ["SERVICES", "ManagerServices", "RecordedService", "Services", "live", "present",
           "replayed", "result_types_by_target"]


@dataclass(frozen=True)
class RecordedService:
    """One recorded service: a row of ``SERVICES``."""

    name: str  # its calls' target in a trace (each service's module owns the string)
    field: str  # its attribute of ``Services``
    protocol: type  # what the kubelet may call, all of it recorded
    # Whether a kubelet built with this configuration has the service.
    present: Callable[[ReplayConfig], bool]
    # The live one, made from nothing; None: the daemon's wiring makes it (from the flags,
    # the API server or a process it started) and hands it to ``live``.
    node: Callable[[], object] | None = None

    def replayed(self, answers: Interceptor) -> object:
        """The replay's: every call answered as recorded, none reaching an implementation."""
        return intercept(Unreachable(), self.protocol, answers, target=self.name)


def _always(config: ReplayConfig) -> bool:
    return True


SERVICES: tuple[RecordedService, ...] = (
    # The containerd the daemon runs itself (--container-runtime-endpoint not given).
    RecordedService(MANAGED_CONTAINERD_TARGET, "containerd", ManagedContainerd,
                    lambda config: config.embedded),
    # ConfigMaps, Secrets, Services, tokens and RuntimeClasses, joined to an API server.
    RecordedService(OBJECTS_TARGET, "objects", ObjectSource, lambda config: config.cluster),
    # hostPath volumes, subPaths and env files: paths a pod names on the node.
    RecordedService(HOST_PATHS_TARGET, "host_paths", HostPaths, _always, NodeHostPaths),
    # Each pod's cgroup, with cgroupsPerQOS (made by actors.app.cgroups from the flags).
    RecordedService(POD_CGROUPS_TARGET, "cgroups", PodCgroupService,
                    lambda config: config.node.cgroups_per_qos),
    # A removed container's log files.
    RecordedService(CONTAINER_LOGS_TARGET, "container_logs", ContainerLogFiles, _always,
                    NodeContainerLogFiles),
    # The tmpfs and hugetlbfs mounts of memory-backed volumes.
    RecordedService(VOLUME_MOUNTS_TARGET, "volume_mounts", VolumeMounts, _always,
                    NodeVolumeMounts),
    # The network lifecycle hooks' httpGet and tcpSocket reach their container through.
    RecordedService(HOOK_TRANSPORT_TARGET, "hook_transport", HookTransport, _always,
                    NodeHookTransport),
)


class ManagerServices(TypedDict):
    """The recorded services the runtime manager takes, by its keywords."""

    objects: ObjectSource | None
    cgroups: PodCgroupService | None
    host_paths: HostPaths
    container_logs: ContainerLogFiles
    volume_mounts: VolumeMounts
    hook_transport: HookTransport


@dataclass(frozen=True)
class Services:
    """One kubelet's recorded services (live, perhaps recording, or a replay's); None:
    a service its configuration does not have."""

    host_paths: HostPaths
    container_logs: ContainerLogFiles
    volume_mounts: VolumeMounts
    hook_transport: HookTransport
    containerd: ManagedContainerd | None = None
    objects: ObjectSource | None = None
    cgroups: PodCgroupService | None = None

    def for_manager(self) -> ManagerServices:
        """The runtime manager's keywords (``KubeRuntimeManager(..., **this)``)."""
        return ManagerServices(objects=self.objects, cgroups=self.cgroups,
                               host_paths=self.host_paths,
                               container_logs=self.container_logs,
                               volume_mounts=self.volume_mounts,
                               hook_transport=self.hook_transport)


def present(config: ReplayConfig) -> tuple[RecordedService, ...]:
    """The services a kubelet built with ``config`` has, in ``SERVICES``' order."""
    return tuple(s for s in SERVICES if s.present(config))


def live(config: ReplayConfig, chain: tuple[Interceptor, ...] = (),
         **given: object) -> Services:
    """The live services ``config`` has, each through ``chain`` (a trace's recording):
    those ``given`` by field (None: not given), the node's own for the rest.

    ValueError: a service the configuration has that nobody made, or one given that it
    has not (a trace's header would not say what was recorded).
    """
    made: dict[str, object] = {}
    for service in present(config):
        implementation = given.get(service.field)
        if implementation is None and service.node is not None:
            implementation = service.node()
        if implementation is None:
            raise ValueError(f"the configuration has the {service.name!r} service, but no "
                             f"{service.field!r} was given")
        made[service.field] = intercept(implementation, service.protocol, *chain,
                                        target=service.name)
    extra = sorted(k for k, v in given.items() if v is not None and k not in made)
    if extra:
        raise ValueError(f"given {extra}, which the configuration does not have")
    return Services(**_typed(made))


def replayed(config: ReplayConfig, answers: Interceptor) -> Services:
    """The services ``config`` has, answering every call as the trace recorded it."""
    return Services(**_typed({s.field: s.replayed(answers) for s in present(config)}))


def result_types_by_target() -> Mapping[str, Mapping[str, Any]]:
    """Each service's methods' return types by target (to rebuild recorded answers)."""
    return {s.name: result_types(s.protocol) for s in SERVICES}


def _typed(made: dict[str, object]) -> dict[str, Any]:
    # Each value speaks its row's protocol (intercept returns what it wraps, typed as is).
    return made
