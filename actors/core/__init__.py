"""The actor framework: named actors on pykka, one delivery point, supervision, traces.

The rule of this package: it knows no kubelet. It imports nothing of ``actors.kubelet`` or
``actors.app``, and of ``runtime`` only the clock (import-linter holds both). What a
system built on it adds (its actors, its messages, its replay world, its trace
summaries) it plugs in through the declared seams: ``Recorder`` and ``FaultHooks``
(actors.core.hooks), message names (actors.core.trace.names), a replay ``World``
(actors.core.trace.stubs).
"""

from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.faults import ActorFault, DrillFault, FaultPlan
from actors.core.hooks import FaultHooks, Recorder
from actors.core.messages import ChildExited, ChildFailed, DeadLetter, RestartChild, Stop, Tick
from actors.core.periodic import PeriodicJob
from actors.core.supervision import ChildSpec, SupervisorActor, SupervisorSpec
from actors.core.timers import ManualTimers, Timers, TimerService
from actors.core.trace.names import MESSAGES, message

__all__ = [
    "MESSAGES",
    "Actor",
    "ActorFault",
    "ActorRef",
    "ChildExited",
    "ChildFailed",
    "ChildSpec",
    "DeadLetter",
    "Dispatch",
    "DrillFault",
    "FaultHooks",
    "FaultPlan",
    "ManualTimers",
    "PeriodicJob",
    "Recorder",
    "RestartChild",
    "Stop",
    "SupervisorActor",
    "SupervisorSpec",
    "Tick",
    "TimerService",
    "Timers",
    "message",
]
