"""The node-level settings the runtime manager needs, fixed when the kubelet starts."""

from __future__ import annotations

import os

from msgspec import Struct

from runtime.kuberuntime import log_layout


class NodeSettings(Struct, frozen=True):
    """Where the kubelet keeps things and how it names the node."""

    node_name: str
    root_dir: str = "/var/lib/kubelet-actors"
    pod_logs_dir: str = "/var/log/pods"
    resolv_conf: str = "/etc/resolv.conf"
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = ""
    # Standalone: the runtime classes this node knows, name -> CRI runtime handler
    # (--runtime-classes; runtime.kuberuntime.runtime_class). Cluster mode reads the API's.
    runtime_classes: tuple[tuple[str, str], ...] = ()
    # cgroupsPerQOS: pod cgroups under <cgroup_root>/kubepods, named for cgroup_driver.
    cgroups_per_qos: bool = False
    cgroup_root: str = "/"
    cgroup_driver: str = "cgroupfs"
    # The machine's memory (cAdvisor's MemoryCapacity) for Burstable oom_score_adj; 0
    # reads /proc/meminfo when needed.
    memory_capacity: int = 0
    # The huge page sizes of the node ("2MB"), each limited per container.
    hugepage_sizes: tuple[str, ...] = ()
    # The node's allocatable resources as quantities (runtime.machine): the downward
    # API's default for a limit a container does not set.
    allocatable: tuple[tuple[str, str], ...] = ()
    # --seccomp-default: RuntimeDefault for containers that name no seccomp profile.
    seccomp_default: bool = False
    # KubeletConfiguration crashLoopBackOff.maxContainerRestartPeriod (feature gate
    # KubeletCrashLoopBackOffMax): the crash-loop back-off's cap, in seconds.
    max_container_restart_period: float = 300.0
    # The kernel takes tmpfs's ``noswap`` (6.4 and later): memory-backed volumes get it,
    # as upstream's IsTmpfsNoswapOptionSupported has them.
    tmpfs_noswap: bool = False

    def pod_dir(self, uid: str) -> str:
        return os.path.join(self.root_dir, "pods", uid)

    @property
    def seccomp_dir(self) -> str:
        """``<root-dir>/seccomp``: where Localhost seccomp profiles are looked up."""
        return os.path.join(self.root_dir, "seccomp")

    def pod_log_dir(self, namespace: str, name: str, uid: str) -> str:
        """``<pod-logs-dir>/<ns>_<name>_<uid>`` (runtime.kuberuntime.log_layout)."""
        return log_layout.pod_log_dir(self.pod_logs_dir, namespace, name, uid)
