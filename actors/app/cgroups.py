"""The node's pod cgroups at start (upstream NewContainerManager's cgroupsPerQOS checks,
enforceNodeAllocatableCgroups, qosContainerManager.Start and the first
cleanupOrphanedPodCgroups).

With --cgroups-per-qos (the default) the kubelet needs --cgroup-root to exist, a
--cgroup-driver that matches the runtime's (the embedded containerd uses cgroupfs), and
creates <root>/kubepods, with the node allocatable limits (runtime.cm.node_allocatable),
and its burstable and besteffort children before any pod runs.

Once the kubelet's events actor runs, NodeAllocatableEnforcement does upstream's
enforceNodeAllocatableCgroups: the kubepods limits written (retried every minute while
the kernel refuses them, a FailedNodeAllocatableEnforcement event each time, a
NodeAllocatableEnforced event once they hold), then, with --enforce-node-allocatable
naming system-reserved or kube-reserved (or their -compressible variants), those existing
cgroups limited to their reservation; a failure there stops the start.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Final

from loguru import logger

from actors.app.config.flags import KubeletFlags
from actors.app.node import allocatable_plan
from runtime.cm.cgroupfs import HYBRID_UNIFIED, CgroupFS, CgroupManager
from runtime.cm.names import CGROUPFS, CgroupName, kubepods, parse_root
from runtime.cm.node_allocatable import AllocatablePlan, ReservedCgroup
from runtime.cm.pod_cgroups import PodCgroups
from runtime.cri.service import CRIRuntime
from runtime.cri.types import SandboxFilter
from runtime.errors import ConfigError, CRIError
from runtime.events import reasons
from runtime.events.recorder import EventRecorder, HookOutput, ObjectRef, node_ref
from runtime.kuberuntime import labels as L
from runtime.pod.validation.fields import go_quote

RETRY_PERIOD_S: Final = 60.0
"""How long upstream's goroutine sleeps between two refused kubepods updates."""
ENFORCED: Final = "Updated Node Allocatable limit across pods"
"""The NodeAllocatableEnforced event's message for the kubepods limits."""
_V1_VALIDATED: Final = ("cpu", "cpuacct", "cpuset", "memory", "systemd", "pids", "hugetlb")
"""The v1 controllers whose directories upstream's Validate wants (hugetlb when mounted)."""


def start_pod_cgroups(flags: KubeletFlags, runtime: CRIRuntime, embedded: bool
                      ) -> PodCgroups | None:
    """Check the flags against the machine, create the QoS cgroups, and remove the pod
    cgroups of pods the runtime no longer holds; None with --cgroups-per-qos=false."""
    if not flags.cgroups_per_qos:
        return None
    if embedded and flags.cgroup_driver != CGROUPFS:
        raise ConfigError(
            f'--cgroup-driver "{flags.cgroup_driver}": the embedded containerd uses the '
            'cgroupfs driver (SystemdCgroup = false); the kubelet must use "cgroupfs" too')
    manager = CgroupFS(flags.cgroup_driver)
    root = parse_root(flags.cgroup_root, flags.cgroup_driver)
    if not manager.exists(root):
        # Upstream: "invalid configuration: cgroup-root ... doesn't exist".
        raise ConfigError(f'--cgroup-root "{flags.cgroup_root}" does not exist '
                          f"(looked in {manager.path(root, 'memory')})")
    node = allocatable_plan(flags)
    cgroups = PodCgroups(manager, root, flags.cgroup_driver, node=node.kubepods)
    try:
        cgroups.start()
    except OSError as err:
        raise ConfigError(f"cannot create the QoS cgroups under {flags.cgroup_root}: {err}"
                          ) from err
    try:
        holding = frozenset(s.labels.get(L.POD_UID, "") for s in
                            runtime.list_pod_sandbox(SandboxFilter()))
    except CRIError as err:
        # The runtime may not answer yet; pod workers recreate what they need anyway.
        logger.warning("pod cgroups: no orphan clean-up, the runtime does not answer: {}",
                       err)
    else:
        cgroups.cleanup_orphans(holding)
    logger.info("cgroupsPerQOS on: root {}, driver {}; kubepods limits: cpu shares {}, "
                "memory {}, pids {}", flags.cgroup_root, flags.cgroup_driver,
                node.kubepods.cpu_shares, node.kubepods.memory, node.kubepods.pids_limit)
    return cgroups


def go_cgroup_name(name: CgroupName) -> str:
    """Go's %q of a CgroupName (a []string): ``["kubepods" "burstable"]``."""
    return "[" + " ".join(go_quote(part) for part in name) + "]"


def missing_cgroup(manager: CgroupManager, name: CgroupName) -> str | None:
    """Upstream's CgroupManager.Validate of an existing cgroup, in its words: on cgroup v1
    the directories missing among the controllers it checks, on v2 the unified directory;
    None when the cgroup is there."""
    quoted = go_cgroup_name(name)
    if not isinstance(manager, CgroupFS):
        return None if manager.exists(name) else f"cgroup {quoted} has some missing paths"
    if manager.unified_root:
        directory = manager.path(name, "unified")
        if os.path.isdir(directory):
            return None
        return (f"could not read controllers for cgroup {quoted}: open "
                f"{os.path.join(directory, 'cgroup.controllers')}: no such file or directory")
    missing = [manager.path(name, controller) for controller in manager.mounts
               if controller != HYBRID_UNIFIED
               and controller.removeprefix("name=") in _V1_VALIDATED
               and not os.path.isdir(manager.path(name, controller))]
    if not missing:
        return None
    return f"cgroup {quoted} has some missing paths: {', '.join(missing)}"


class LoggedRecorder:
    """An EventRecorder that only logs (run once has no events actor)."""

    def event(self, ref: ObjectRef, type: str, reason: str, message: str,
              hook: HookOutput | None = None) -> None:
        level = "WARNING" if type == reasons.WARNING else "INFO"
        logger.bind(pod="", uid="", container="").log(
            level, "event {} {} {}/{}: {}", type, reason, ref.kind, ref.name, message)


class NodeAllocatableEnforcement:
    """Upstream's enforceNodeAllocatableCgroups, run once the kubelet's events reach the
    Node: ``start`` writes the kubepods limits on a thread of their own (upstream's
    goroutine: a refused write is a FailedNodeAllocatableEnforcement event and another
    try a minute later, until one holds, a NodeAllocatableEnforced event), then limits each
    enforced reserved cgroup, a ConfigError in upstream's words when one cannot be.
    ``wait``: how the retry waits (a stop event's wait by default; True means stopped)."""

    def __init__(self, cgroups: PodCgroups, manager: CgroupManager, node: AllocatablePlan,
                 driver: str, node_name: str, events: EventRecorder,
                 wait: Callable[[float], bool] | None = None,
                 retry_period: float = RETRY_PERIOD_S) -> None:
        self._cgroups = cgroups
        self._manager = manager
        self._node = node
        self._driver = driver
        self._ref = node_ref(node_name)
        self._events = events
        self._stopped = threading.Event()
        self._wait = wait if wait is not None else self._stopped.wait
        self._period = retry_period
        self._thread: threading.Thread | None = None
        self._log = logger.bind(pod="", uid="", container="", node=node_name)

    def start(self) -> None:
        """The kubepods retries in the background, then the reserved cgroups."""
        self._thread = threading.Thread(target=self.enforce_kubepods,
                                        name="node-allocatable", daemon=True)
        self._thread.start()
        for reserved in self._node.reserved_cgroups:
            self.enforce_reserved(reserved)

    def stop(self) -> None:
        """End the retries (the kubelet stops)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)

    def enforce_kubepods(self) -> None:
        """Write the kubepods limits until the kernel takes them, or until stopped."""
        name = go_cgroup_name(kubepods(self._cgroups.root))
        while not self._stopped.is_set():
            try:
                self._cgroups.enforce_node_allocatable()
            except OSError as err:
                message = f"Failed to update Node Allocatable Limits {name}: {err}"
                self._events.event(self._ref, reasons.WARNING,
                                   reasons.FAILED_NODE_ALLOCATABLE_ENFORCEMENT, message)
                if self._wait(self._period):
                    return
                continue
            self._events.event(self._ref, reasons.NORMAL,
                               reasons.SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT, ENFORCED)
            kube = self._node.kubepods
            self._log.info("kubepods limits: cpu shares {}, memory {}, pids {}",
                           kube.cpu_shares, kube.memory, kube.pids_limit)
            return

    def enforce_reserved(self, reserved: ReservedCgroup) -> None:
        """enforceExistingCgroup on one reserved cgroup, with upstream's events."""
        which = ("System" if reserved.system else "Kube") + " Reserved" + (
            " Compressible" if reserved.compressible else "")
        try:
            self._limit(reserved)
        except (ConfigError, OSError, ValueError) as err:
            message = (f"Failed to enforce {which} Cgroup Limits on "
                       f"{go_quote(reserved.cgroup)}: {err}")
            self._events.event(self._ref, reasons.WARNING,
                               reasons.FAILED_NODE_ALLOCATABLE_ENFORCEMENT, message)
            raise ConfigError(message) from err
        whose = "system" if reserved.system else "kube"
        self._events.event(self._ref, reasons.NORMAL,
                           reasons.SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT,
                           f"Updated limits on {whose} reserved cgroup {reserved.cgroup}")
        limits = reserved.limits
        assert limits is not None  # _limit refused a reservation of nothing
        self._log.info("{} limits on {}: cpu shares {}, memory {}, pids {}", reserved.key,
                       reserved.cgroup, limits.cpu_shares, limits.memory, limits.pids_limit)

    def _limit(self, reserved: ReservedCgroup) -> None:
        name = parse_root(reserved.cgroup, self._driver)
        if reserved.limits is None:
            raise ConfigError(f"{go_cgroup_name(name)} cgroup is not configured properly")
        missing = missing_cgroup(self._manager, name)
        if missing is not None:
            raise ConfigError(missing)
        self._manager.update(name, reserved.limits)


def node_allocatable_enforcement(flags: KubeletFlags, cgroups: PodCgroups | None,
                                 events: EventRecorder) -> NodeAllocatableEnforcement | None:
    """The enforcement of start_pod_cgroups' kubepods (None without --cgroups-per-qos,
    where upstream's validation leaves nothing to enforce)."""
    if cgroups is None:
        return None
    return NodeAllocatableEnforcement(cgroups, cgroups.manager, allocatable_plan(flags),
                                      flags.cgroup_driver, flags.node_name, events)
