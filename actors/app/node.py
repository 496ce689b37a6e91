"""This machine as the kubelet sees it: for admission, and for the runtime manager."""

from __future__ import annotations

from actors.app.config.flags import KubeletFlags
from runtime.cm.container_resources import node_hugepage_sizes
from runtime.cm.node_allocatable import (
    AllocatableConfig,
    AllocatablePlan,
    check_reservation,
    plan,
)
from runtime.eviction.parse import hard_eviction_reserves
from runtime.kuberuntime.memory_volumes import tmpfs_noswap
from runtime.kuberuntime.settings import NodeSettings
from runtime.machine import (
    apparmor_enabled,
    machine_arch,
    machine_capacity,
    mem_total,
    parse_cpuset,
)
from runtime.node_address import node_ip as find_node_ip
from runtime.pod.admission import Node, node_labels


def allocatable_config(flags: KubeletFlags) -> AllocatableConfig:
    """What the node reserves: --system-reserved, --kube-reserved, --reserved-cpus, the
    enforcement and the hard eviction thresholds (upstream's NodeAllocatableConfig)."""
    return AllocatableConfig(
        system_reserved=flags.system_reserved, kube_reserved=flags.kube_reserved,
        reserved_cpus=parse_cpuset(flags.reserved_cpus), reserved_cpus_text=flags.reserved_cpus,
        enforce=flags.enforce_node_allocatable,
        system_reserved_cgroup=flags.system_reserved_cgroup,
        kube_reserved_cgroup=flags.kube_reserved_cgroup,
        hard_eviction=hard_eviction_reserves(flags.eviction.thresholds))


def allocatable_plan(flags: KubeletFlags) -> AllocatablePlan:
    """The node's capacity, allocatable and cgroup limits: the one computation the Node
    status, admission, the downward API and the kubepods cgroup all read. A reservation
    the machine cannot give (more than its capacity, cpus it does not have) is a
    ConfigError in upstream's words."""
    config = allocatable_config(flags)
    capacity = machine_capacity(flags.root_dir, flags.max_pods)
    check_reservation(capacity, config)
    return plan(capacity, config, flags.cgroups_per_qos)


def this_node(flags: KubeletFlags) -> Node:
    """This machine as admission sees it, read once at start: its name, its labels
    (kubernetes.io/hostname, os and arch, plus --node-labels), its allocatable
    resources (capacity less the reservations) and whether its kernel enforces AppArmor
    (runtime.machine)."""
    return Node(
        name=flags.node_name,
        labels=node_labels(flags.node_name, "linux", machine_arch(), dict(flags.node_labels)),
        allocatable=allocatable_plan(flags).allocatable_map(),
        apparmor=apparmor_enabled(),
    )


def node_settings(flags: KubeletFlags) -> NodeSettings:
    """What the runtime manager needs to know of the node, from the flags and the machine."""
    return NodeSettings(
        node_name=flags.node_name, root_dir=flags.root_dir, pod_logs_dir=flags.pod_logs_dir,
        resolv_conf=flags.resolv_conf, cluster_dns=flags.cluster_dns,
        cluster_domain=flags.cluster_domain,
        allocatable=tuple(sorted((k, str(v)) for k, v in this_node(flags).allocatable.items())),
        cgroups_per_qos=flags.cgroups_per_qos, cgroup_root=flags.cgroup_root,
        cgroup_driver=flags.cgroup_driver, memory_capacity=mem_total(),
        hugepage_sizes=node_hugepage_sizes(), seccomp_default=flags.seccomp_default,
        max_container_restart_period=flags.max_container_restart_period,
        tmpfs_noswap=tmpfs_noswap(),
        runtime_classes=flags.runtime_classes,
    )


def node_ip(flags: KubeletFlags | None = None) -> str:
    """The node's primary address, as upstream's kubelet picks it (runtime.node_address):
    --node-ip, else the node name's address, else the default route's interface's."""
    if flags is None:
        return find_node_ip()
    return find_node_ip(flags.node_ip, flags.node_name)
