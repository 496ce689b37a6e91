"""activeDeadlineSeconds: how long a pod may be active on the node before it is failed.

Upstream's activeDeadlineHandler (pkg/kubelet/active_deadline.go) counts from the pod's
status.startTime; once ``now - start >= activeDeadlineSeconds`` the sync loop syncs the pod
(ShouldSync) and its status becomes Failed with reason DeadlineExceeded (ShouldEvict),
after which the kubelet kills the pod as it kills any terminal one. Pure functions here;
the pod worker asks them at each sync and wakes itself at the deadline.
"""

from __future__ import annotations

from runtime.pod.model import Pod

REASON = "DeadlineExceeded"
MESSAGE = "Pod was active on the node longer than the specified deadline"


def remaining(pod: Pod, start: float, now: float) -> float | None:
    """Seconds left before the pod's active deadline (<= 0: passed); None without one."""
    deadline = pod.spec.active_deadline_seconds
    if deadline is None:
        return None
    return start + deadline - now


def past_active_deadline(pod: Pod, start: float, now: float) -> bool:
    """Upstream pastActiveDeadline: the pod has been active at least its deadline."""
    left = remaining(pod, start, now)
    return left is not None and left <= 0
