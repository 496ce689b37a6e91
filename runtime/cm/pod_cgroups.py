"""The kubepods cgroup hierarchy and one cgroup per pod (upstream cgroupsPerQOS:
qos_container_manager_linux.go, pod_container_manager_linux.go, node_container_manager
createNodeAllocatableCgroups, and the kubelet's cleanupOrphanedPodCgroups).

<root>/kubepods holds the node's allocatable (cpu shares of every cpu, memory of the
machine, as nothing is reserved); Guaranteed pods' cgroups live right in it, the others
in kubepods/burstable and kubepods/besteffort. A pod's cgroup pod<uid> carries
ResourceConfigForPod and is the cgroup parent of its sandbox and containers; it is
created before the sandbox and removed once the pod is stopped. The burstable cgroup's
cpu shares follow the cpu requests of the burstable pods; besteffort keeps 2 shares.
"""

from __future__ import annotations

import threading

from loguru import logger

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
from runtime.pod.model import Pod

QOS_CLASSES = (GUARANTEED, BURSTABLE, BEST_EFFORT)


def burstable_shares(pods: list[Pod]) -> int:
    """The burstable cgroup's cpu shares: the summed cpu requests of the Burstable pods
    (upstream setCPUCgroupConfig)."""
    milli = 0
    for pod in pods:
        if pod_qos(pod) == BURSTABLE:
            cpu = pod_requests(pod).get("cpu")
            if cpu is not None:
                milli += milli_value(cpu)
    return milli_cpu_to_shares(milli)


class PodCgroups:
    """Creates, updates and removes the kubepods hierarchy through a CgroupManager.

    Thread-safe: pod workers call it from their own threads.
    """

    def __init__(self, manager: CgroupManager, root: CgroupName, driver: str,
                 node_cpu_millis: int, node_memory: int) -> None:
        self.manager = manager
        self.root = root
        self.driver = driver
        self._node = ResourceConfig(cpu_shares=milli_cpu_to_shares(node_cpu_millis),
                                    memory=node_memory or None)
        self._active: dict[str, Pod] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Create (or bring up to date) kubepods, kubepods/burstable and
        kubepods/besteffort (upstream qosContainerManager.Start)."""
        with self._lock:
            self._ensure(kubepods(self.root), self._node)
            self._ensure(qos_cgroup(self.root, BURSTABLE), ResourceConfig())
            self._ensure(qos_cgroup(self.root, BEST_EFFORT),
                         ResourceConfig(cpu_shares=MIN_SHARES))
        logger.info("pod cgroups under {} ({} driver)",
                    driver_name(kubepods(self.root), self.driver), self.driver)

    def _ensure(self, name: CgroupName, config: ResourceConfig) -> None:
        if self.manager.exists(name):
            self.manager.update(name, config)
        else:
            self.manager.create(name, config)

    def name(self, pod: Pod) -> CgroupName:
        return pod_cgroup(self.root, pod_qos(pod), pod.uid)

    def parent_for(self, pod: Pod) -> str:
        """The pod cgroup as the runtime names it (LinuxPodSandboxConfig.cgroup_parent)."""
        return driver_name(self.name(pod), self.driver)

    def ensure(self, pod: Pod) -> str:
        """The pod's cgroup, created with its resources when missing (after updating
        the QoS cgroups for it, as upstream's syncPod does); its runtime name."""
        name = self.name(pod)
        with self._lock:
            self._active[pod.uid] = pod
            if not self.manager.exists(name):
                self._update_qos()
                self.manager.create(name, resource_config_for_pod(pod))
                logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").info(
                    "created pod cgroup {}", driver_name(name, self.driver))
        return driver_name(name, self.driver)

    def update_qos(self) -> None:
        with self._lock:
            self._update_qos()

    def _update_qos(self) -> None:
        self.manager.update(qos_cgroup(self.root, BURSTABLE),
                            ResourceConfig(cpu_shares=burstable_shares(
                                list(self._active.values()))))
        self.manager.update(qos_cgroup(self.root, BEST_EFFORT),
                            ResourceConfig(cpu_shares=MIN_SHARES))

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
            pod = self._active.pop(uid, None)
            name = self.name(pod) if pod is not None else None
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
