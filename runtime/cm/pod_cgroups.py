"""The kubepods cgroup hierarchy and one cgroup per pod (upstream cgroupsPerQOS:
qos_container_manager_linux.go, pod_container_manager_linux.go, node_container_manager
createNodeAllocatableCgroups, and the kubelet's cleanupOrphanedPodCgroups).

<root>/kubepods holds the node's allocatable (runtime.cm.node_allocatable: cpu shares,
memory and pids of the capacity less the reservations when enforceNodeAllocatable has
"pods", else of the whole machine); Guaranteed pods' cgroups live right in it, the others
in kubepods/burstable and kubepods/besteffort. A pod's cgroup pod<uid> carries
ResourceConfigForPod and is the cgroup parent of its sandbox and containers; it is
created before the sandbox and removed once the pod is stopped. The burstable cgroup's
cpu shares follow the cpu requests of the burstable pods; besteffort keeps 2 shares.
"""

from __future__ import annotations

import threading
from typing import Protocol

from loguru import logger
from msgspec import Struct

from runtime.cm.aggregate import pod_requests
from runtime.cm.cgroupfs import CgroupManager
from runtime.cm.names import (
    SYSTEMD,
    CgroupName,
    driver_name,
    kubepods,
    parse_systemd,
    pod_cgroup,
    pod_uid_of,
    qos_cgroup,
)
from runtime.cm.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, pod_qos
from runtime.cm.resources import (
    MIN_SHARES,
    ResourceConfig,
    milli_cpu_to_shares,
    milli_value,
    resource_config_for_pod,
)
from runtime.errors import CgroupError
from runtime.pod.model import Pod

__all__ = ["POD_CGROUPS_TARGET", "PodCgroupService", "PodCgroupSpec", "PodCgroups",
           "burstable_shares", "pod_cgroup_spec"]

QOS_CLASSES = (GUARANTEED, BURSTABLE, BEST_EFFORT)

POD_CGROUPS_TARGET = "podcgroups"
"""The pod cgroups' name in traces (the ``target`` of their recorded calls)."""


class PodCgroupSpec(Struct, frozen=True):
    """What a pod's cgroup is made from: the few values of the pod it depends on, so a
    trace records them (not the whole pod) as the argument of each ensure."""

    uid: str
    qos: str
    resources: ResourceConfig
    cpu_request_milli: int = 0  # summed cpu requests: the burstable class's shares
    name: str = ""  # the pod's, for the logs


def pod_cgroup_spec(pod: Pod) -> PodCgroupSpec:
    cpu = pod_requests(pod).get("cpu")
    return PodCgroupSpec(pod.uid, pod_qos(pod), resource_config_for_pod(pod),
                         milli_value(cpu) if cpu is not None else 0, pod.metadata.name)


def burstable_shares(pods: list[PodCgroupSpec]) -> int:
    """The burstable cgroup's cpu shares: the summed cpu requests of the Burstable pods
    (upstream setCPUCgroupConfig)."""
    return milli_cpu_to_shares(sum(p.cpu_request_milli for p in pods if p.qos == BURSTABLE))


class PodCgroupService(Protocol):
    """What pod workers and the pod killer ask of the pod cgroups. Its outcomes come from
    the node's cgroup filesystem (which another process may change), so a trace records
    them and a replay answers them (actors.kubelet.recorded)."""

    def ensure(self, spec: PodCgroupSpec) -> str:
        """The pod's cgroup, made when missing; its runtime name. Raises CgroupError."""

    def destroy(self, uid: str) -> bool:
        """Remove the pod's cgroup; True when none is left."""


class PodCgroups:
    """Creates, updates and removes the kubepods hierarchy through a CgroupManager.

    Thread-safe: pod workers call it from their own threads.
    """

    def __init__(self, manager: CgroupManager, root: CgroupName, driver: str,
                 node_cpu_millis: int = 0, node_memory: int = 0, *,
                 node: ResourceConfig | None = None) -> None:
        """``node``: the kubepods cgroup's limits (runtime.cm.node_allocatable's plan);
        without it, shares of ``node_cpu_millis`` and ``node_memory`` bytes."""
        self.manager = manager
        self.root = root
        self.driver = driver
        self._node = node if node is not None else ResourceConfig(
            cpu_shares=milli_cpu_to_shares(node_cpu_millis), memory=node_memory or None)
        self._active: dict[str, PodCgroupSpec] = {}
        self._qos_written: dict[CgroupName, ResourceConfig] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Create kubepods with its limits when missing, and bring kubepods/burstable and
        kubepods/besteffort up to date (upstream createNodeAllocatableCgroups and
        qosContainerManager.Start). An existing kubepods keeps its limits until
        ``enforce_node_allocatable`` writes them."""
        with self._lock:
            name = kubepods(self.root)
            if not self.manager.exists(name):
                self.manager.create(name, self._node)
            self._ensure(qos_cgroup(self.root, BURSTABLE), ResourceConfig())
            self._ensure(qos_cgroup(self.root, BEST_EFFORT),
                         ResourceConfig(cpu_shares=MIN_SHARES))
        logger.info("pod cgroups under {} ({} driver)",
                    driver_name(kubepods(self.root), self.driver), self.driver)

    def enforce_node_allocatable(self) -> None:
        """Write the kubepods limits (enforceNodeAllocatableCgroups' update). OSError when
        the kernel refuses them (pods already use more memory than the new limit): the
        caller retries (actors.app.cgroups)."""
        with self._lock:
            self.manager.update(kubepods(self.root), self._node)

    def _ensure(self, name: CgroupName, config: ResourceConfig) -> None:
        if self.manager.exists(name):
            self.manager.update(name, config)
        else:
            self.manager.create(name, config)

    def name(self, spec: PodCgroupSpec) -> CgroupName:
        return pod_cgroup(self.root, spec.qos, spec.uid)

    def ensure(self, spec: PodCgroupSpec) -> str:
        """The pod's cgroup, created with its resources when missing (after updating
        the QoS cgroups for it, as upstream's syncPod does); its runtime name. A failure
        is a CgroupError (upstream's "unable to ensure pod container exists")."""
        name = self.name(spec)
        with self._lock:
            self._active[spec.uid] = spec
        if self.manager.exists(name):
            return driver_name(name, self.driver)
        # The lock covers the pods known and the QoS cgroups' update, not the pod cgroup's
        # own directories (a dozen on cgroup v1): only the pod's own worker makes or
        # removes its cgroup, and 50 workers starting at once otherwise queued on one
        # lock whose holder a busy node deschedules mid-mkdir.
        try:
            with self._lock:
                self._update_qos()
            self.manager.create(name, spec.resources)
        except (OSError, ValueError) as err:
            raise CgroupError(str(err)) from err
        logger.bind(pod=spec.name, uid=spec.uid, container="").info(
            "created pod cgroup {}", driver_name(name, self.driver))
        return driver_name(name, self.driver)

    def _update_qos(self) -> None:
        for name, config in (
                (qos_cgroup(self.root, BURSTABLE),
                 ResourceConfig(cpu_shares=burstable_shares(list(self._active.values())))),
                (qos_cgroup(self.root, BEST_EFFORT), ResourceConfig(cpu_shares=MIN_SHARES))):
            # Each pod made or removed updates them: a value this kubelet wrote last time
            # is not written again (a burst of BestEffort pods changes neither).
            if self._qos_written.get(name) != config:
                self.manager.update(name, config)
                self._qos_written[name] = config

    def pod_cgroups(self) -> dict[str, CgroupName]:
        """Every pod cgroup on the node by pod UID (upstream GetAllPodsFromCgroups)."""
        found: dict[str, CgroupName] = {}
        for qos in QOS_CLASSES:
            parent = qos_cgroup(self.root, qos)
            for child in self.manager.children(parent):
                component = child
                if self.driver == SYSTEMD and child.endswith(".slice"):
                    component = parse_systemd(child)[-1]  # kubepods-...-pod<uid_>.slice
                uid = pod_uid_of(component)
                if uid is not None:
                    found[uid.replace("_", "-")] = (*parent, component)
        return found

    def destroy(self, uid: str) -> bool:
        """Remove the pod's cgroup (killing what still runs in it); True when none is
        left. A failure is logged: the orphan clean-up tries again. A pod this kubelet
        ensured is found where ensure put it; another (adopted, an orphan) is looked for
        among every pod cgroup (a mass removal would otherwise list them all per pod)."""
        with self._lock:
            spec = self._active.pop(uid, None)
        # (No lock over the directories either: see ensure.)
        name = self.name(spec) if spec is not None else None
        if name is None or not self.manager.exists(name):
            name = self.pod_cgroups().get(uid)
        if name is None:
            return True
        try:
            self.manager.destroy(name)
        except OSError as err:
            logger.bind(pod="", uid=uid, container="").warning(
                "removing pod cgroup {} failed: {}", driver_name(name, self.driver), err)
            return False
        with self._lock:
            self._update_qos()
        logger.bind(pod="", uid=uid, container="").info(
            "removed pod cgroup {}", driver_name(name, self.driver))
        return True

    def cleanup_orphans(self, keep: frozenset[str]) -> None:
        """Remove the cgroup of every pod not in ``keep`` (the pods that may still run).

        Unlike upstream, which kills what an orphaned pod cgroup still holds, one that
        holds processes is left alone (and logged): on a machine where several kubelets
        share the cgroup root (the drills' parallel slots, a test bed beside a user's
        daemon) it is another kubelet's running pod, not a leak of this one.
        """
        for uid, name in self.pod_cgroups().items():
            if uid in keep:
                continue
            if self.manager.pids(name):
                logger.bind(pod="", uid=uid, container="").info(
                    "pod cgroup {} is no pod of this kubelet's but holds processes: left alone",
                    driver_name(name, self.driver))
                continue
            self.destroy(uid)
