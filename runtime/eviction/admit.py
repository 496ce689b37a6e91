"""Admission under node pressure (the eviction manager's Admit).

No pressure: every pod. Critical pods: always. Memory pressure alone: all but BestEffort
pods, and BestEffort pods that tolerate the node.kubernetes.io/memory-pressure NoSchedule
taint. Any other pressure: no pod but critical ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.cm.qos import BEST_EFFORT, pod_qos
from runtime.eviction.api import MEMORY_PRESSURE
from runtime.eviction.rank import REASON, is_critical
from runtime.pod.model import Pod, Toleration

TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
_NO_SCHEDULE = "NoSchedule"


def tolerates(tolerations: Sequence[Toleration], key: str, effect: str, value: str = ""
              ) -> bool:
    """TolerationsTolerateTaint for one taint: a toleration that matches its key (or all
    keys with Exists), its effect (or every effect) and its value (Equal)."""
    for t in tolerations:
        if t.effect and t.effect != effect:
            continue
        if t.key and t.key != key:
            continue
        if not t.key and t.operator != "Exists":
            continue
        if t.operator == "Exists" or t.value == value:
            return True
    return False


def node_condition_message(conditions: Sequence[str]) -> str:
    """nodeConditionMessageFmt with Go's %v of a slice: ``[MemoryPressure DiskPressure]``."""
    return f"The node had condition: [{' '.join(conditions)}]. "


def admit_under_pressure(pod: Pod, conditions: Sequence[str]) -> tuple[str, str] | None:
    """None when the pod may run; else upstream's (reason, message)."""
    if not conditions or is_critical(pod):
        return None
    if tuple(conditions) == (MEMORY_PRESSURE,):
        if pod_qos(pod) != BEST_EFFORT:
            return None
        if tolerates(pod.spec.tolerations, TAINT_MEMORY_PRESSURE, _NO_SCHEDULE):
            return None
    return REASON, node_condition_message(conditions)
