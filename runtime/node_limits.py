"""What the node allows against what its pods cost: whether N pods fit, and if not, why.

Every pod on a containerd node costs more than its own processes: a containerd-shim-runc-v2
(a Go program of 10-13 threads), the pause process, open files in containerd (the
container's io fifos, the shim's ttrpc socket, the log file), an address from the CNI
network's host-local IPAM, a pod worker thread in the kubelet, and bytes in every
ListPodSandbox/ListContainers answer. This module holds those per-pod costs (measured on
this project's bed: containerd 1.6, runc 1.1, one busybox container per pod) and the
node's limits they run into, in one place, so the scale bench and a user asking "will 500
fit" read the same numbers.

``read_limits`` reads the limits (kernel sysctls in /proc/sys, a process's soft
RLIMIT_NOFILE from /proc/<pid>/limits); ``capacity_problems`` is the pure verdict: one
sentence per limit that ``pods`` pods would run into, none when they fit.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Final

from runtime.cri.client import MAX_MESSAGE_BYTES
from runtime.cri.parallel_limit import default_limit
from runtime.host_counters import HostPaths, rlimit

HOST: Final = HostPaths()
"""The real /proc."""

TASKS_PER_POD: Final = 15
"""Kernel tasks (threads) a running one-container pod adds to the node: its shim's 10-13
threads, pause, the container's process, and the kubelet's pod worker (measured: +14.5)."""

TASKS_PER_POD_CHURN: Final = 14
"""Tasks a pod adds for a moment while it starts or stops: ``runc`` (a Go program: 7
threads) and ``runc init`` (6) run by the shim, or the CNI plugins (Go programs too) run by
containerd, and the containerd thread blocked waiting for each child (measured with 500
pods started at once: 470 runc with 3,306 threads, 198 runc init with 1,186)."""

CONTAINERD_FDS_PER_POD: Final = 12
"""Open files a running one-container pod adds to containerd (measured: +12.0; the io
fifos of the sandbox and the container, the shim's ttrpc connection, the log file)."""

CONTAINERD_FDS_BASE: Final = 64
"""containerd's own open files with no pod (listeners, its database, event streams)."""

GO_MAX_THREADS: Final = 10_000
"""The Go runtime's default thread limit (runtime/debug.SetMaxThreads): containerd, a Go
program, aborts with "program exceeds 10000-thread limit" past it."""

CRI_LIST_BYTES_PER_POD: Final = 1_500
"""Bytes a one-container pod adds to ListPodSandbox plus ListContainers answers (measured:
~406 + ~744 with the kubelet's labels and annotations, rounded up)."""

SUBNET_RESERVED: Final = 3
"""Addresses of a pod subnet host-local never hands out: the network, the broadcast and the
bridge's gateway address."""

TASK_HEADROOM: Final = 2_000
"""Tasks left for everything else on the node (the kubelet, containerd, sshd, tests)."""


@dataclass(frozen=True, slots=True)
class NodeLimits:
    """The limits pods run into; None where a limit could not be read (it is not checked)."""

    max_tasks: int | None
    """The lower of kernel.pid_max and kernel.threads-max: no more tasks than this at once."""
    tasks_now: int | None
    """Tasks running now (/proc/loadavg), before the pods."""
    containerd_nofile: int | None
    """containerd's soft RLIMIT_NOFILE (what it runs with, after Go raised it to the hard
    limit at start)."""
    pod_addresses: int | None
    """Addresses host-local can hand to pods in the pod subnet."""
    cri_max_message: int = MAX_MESSAGE_BYTES
    """The largest CRI answer the kubelet accepts (runtime.cri.client)."""


def pod_addresses(subnet: str) -> int:
    """How many pods host-local can address in ``subnet`` (an IPv4 or IPv6 network)."""
    net = ipaddress.ip_network(subnet, strict=False)
    return max(0, net.num_addresses - SUBNET_RESERVED)


def soft_nofile(limits_text: str) -> int | None:
    """The soft "Max open files" of a /proc/<pid>/limits text; None when absent or
    unlimited."""
    for line in limits_text.splitlines():
        if line.startswith("Max open files"):
            soft = line[len("Max open files"):].split()[0]
            return int(soft) if soft.isdigit() else None
    return None


def read_nofile(pid: int, paths: HostPaths = HOST) -> int | None:
    """The soft RLIMIT_NOFILE process ``pid`` runs with; None when it cannot be read."""
    try:
        with open(os.path.join(paths.proc, str(pid), "limits")) as f:
            return soft_nofile(f.read())
    except OSError:
        return None


def read_limits(containerd_pid: int | None, subnet: str | None,
                paths: HostPaths = HOST) -> NodeLimits:
    """The node's limits now: tasks from /proc, containerd's open files from its pid, the
    pod addresses from the CNI network's subnet."""
    max_tasks, tasks_now = rlimit(paths)
    return NodeLimits(
        max_tasks=max_tasks,
        tasks_now=tasks_now,
        containerd_nofile=None if containerd_pid is None else read_nofile(containerd_pid, paths),
        pod_addresses=None if subnet is None else pod_addresses(subnet),
    )


def tasks_needed(pods: int, churning: int) -> int:
    """Tasks ``pods`` running pods need while ``churning`` of them start or stop at once."""
    return pods * TASKS_PER_POD + min(churning, pods) * TASKS_PER_POD_CHURN


def capacity_problems(pods: int, limits: NodeLimits, churning: int | None = None
                      ) -> tuple[str, ...]:
    """What ``pods`` pods on this node run into, one sentence per limit; () when they fit.

    ``churning``: how many pods start or stop at the same moment (default: as many as the
    kubelet lets make or unmake pods at once, runtime.cri.parallel_limit).
    """
    busy = default_limit() if churning is None else churning
    problems: list[str] = []
    if limits.max_tasks is not None:
        need = tasks_needed(pods, busy) + (limits.tasks_now or 0) + TASK_HEADROOM
        if need > limits.max_tasks:
            problems.append(
                f"{pods} pods need about {need} tasks ({TASKS_PER_POD} a pod running, "
                f"{TASKS_PER_POD_CHURN} more while {busy} start or stop at once, "
                f"{limits.tasks_now or 0} now, {TASK_HEADROOM} headroom) but the kernel "
                f"allows {limits.max_tasks} (kernel.pid_max / kernel.threads-max)")
    if limits.containerd_nofile is not None:
        fds = CONTAINERD_FDS_BASE + pods * CONTAINERD_FDS_PER_POD
        if fds > limits.containerd_nofile:
            problems.append(
                f"{pods} pods need about {fds} open files in containerd "
                f"({CONTAINERD_FDS_PER_POD} a pod) but its RLIMIT_NOFILE is "
                f"{limits.containerd_nofile}")
    if limits.pod_addresses is not None and pods > limits.pod_addresses:
        problems.append(f"{pods} pods need {pods} addresses but the pod subnet has "
                        f"{limits.pod_addresses} for pods")
    answer = pods * CRI_LIST_BYTES_PER_POD
    if answer > limits.cri_max_message:
        problems.append(f"a ListContainers answer for {pods} pods is about {answer} bytes, "
                        f"above the CRI client's {limits.cri_max_message}-byte message limit")
    return tuple(problems)
