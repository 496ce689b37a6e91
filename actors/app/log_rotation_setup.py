"""Wires container log rotation into the daemon: the rotator on an unrecorded runtime,
with the policy of the flags (see actors.kubelet.log_rotation for why it is unrecorded)."""

from __future__ import annotations

from actors.app.config.flags import KubeletFlags
from actors.kubelet.log_rotation import LogRotationParts
from actors.kubelet.metrics import KubeletMetrics
from runtime.cri.instrumented import Timing
from runtime.cri.intercept import intercept
from runtime.cri.service import CRIRuntime
from runtime.kuberuntime.log_rotation import LogRotatePolicy
from runtime.kuberuntime.log_rotator import ContainerLogRotator


def log_rotation_parts(flags: KubeletFlags, pod_logs_dir: str, runtime: CRIRuntime,
                       metrics: KubeletMetrics) -> LogRotationParts | None:
    """The rotation actor's parts for ``runtime`` (the raw one: not the recording chain);
    None when --container-log-max-size is negative (upstream's stub log manager)."""
    if flags.container_log_max_size < 0:
        return None
    timed = intercept(runtime, CRIRuntime, Timing(metrics.observe_runtime_call))
    policy = LogRotatePolicy(flags.container_log_max_size, flags.container_log_max_files)
    rotator = ContainerLogRotator(timed, policy, pod_logs_dir,
                                  max_workers=flags.container_log_max_workers)
    return LogRotationParts(rotator, flags.container_log_monitor_interval)
