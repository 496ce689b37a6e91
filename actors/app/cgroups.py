"""The node's pod cgroups at start (upstream NewContainerManager's cgroupsPerQOS checks,
enforceNodeAllocatableCgroups, qosContainerManager.Start and the first
cleanupOrphanedPodCgroups).

With --cgroups-per-qos (the default) the kubelet needs --cgroup-root to exist, a
--cgroup-driver that matches the runtime's (the embedded containerd uses cgroupfs), and
creates <root>/kubepods, with the node allocatable limits (runtime.cm.node_allocatable),
and its burstable and besteffort children before any pod runs; with
--enforce-node-allocatable naming system-reserved or kube-reserved, those existing cgroups
get their reservation as limits.
"""

from __future__ import annotations

from loguru import logger

from actors.app.config.flags import KubeletFlags
from actors.app.node import allocatable_plan
from runtime.cm.cgroupfs import CgroupFS, CgroupManager
from runtime.cm.names import CGROUPFS, driver_name, parse_root
from runtime.cm.node_allocatable import ENFORCE_SYSTEM_RESERVED, AllocatablePlan
from runtime.cm.pod_cgroups import PodCgroups
from runtime.cri.service import CRIRuntime
from runtime.cri.types import SandboxFilter
from runtime.errors import ConfigError, CRIError
from runtime.kuberuntime import labels as L


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
    enforce_reserved_cgroups(manager, node, flags.cgroup_driver)
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


def enforce_reserved_cgroups(manager: CgroupManager, node: AllocatablePlan,
                             driver: str) -> None:
    """enforceNodeAllocatable's system-reserved and kube-reserved: each named cgroup must
    exist and gets its reservation as limits; a failure stops the start, in upstream's
    words."""
    for kind, given, config in node.reserved_cgroups:
        which = "System" if kind == ENFORCE_SYSTEM_RESERVED else "Kube"
        try:
            name = parse_root(given, driver)
            if not manager.exists(name):
                raise ConfigError(f'"{driver_name(name, driver)}" cgroup does not exist')
            manager.update(name, config)
        except (ConfigError, OSError, ValueError) as err:
            raise ConfigError(f'Failed to enforce {which} Reserved Cgroup Limits on "{given}": '
                              f"{err}") from err
        logger.info("Updated limits on {} reserved cgroup {}: cpu shares {}, memory {}, "
                    "pids {}", which.lower(), given, config.cpu_shares, config.memory,
                    config.pids_limit)
