"""What a pod worker tells the PLEG while it stops its pod: that pod's events need no relist.

Stopping and removing one pod makes four or more runtime events (its containers' and its
sandbox's task exits, their deletions), and the event-driven PLEG relists the whole
runtime on each that reaches it apart from the others (actors.kubelet.pleg). When a node's
pods are removed at once, those relists were most of what the kubelet asked the runtime
(about 9 of 13 calls per pod for 50 pods) and more than half of its own CPU, on a node
whose CPUs the runtime needs for the stops. Nobody needs them: the worker stopping the pod
reads what it needs itself, a pod that is removed shows no status again, and one kept
(stopped in a terminal phase) shows what the worker reads after the kill.

So a worker about to stop its pod says so, and says when it is done; in between the PLEG
makes no relist for that pod's events, and when it is done the PLEG relists once (for
however many workers finish together), which tells the sync loop and /runningpods/ what
is left, as a relist after any worker's change does (SyncChangedRuntime). Upstream's
PLEG does not relist per event at all (the generic PLEG relists every second; the evented
one updates its cache from the event's own statuses).
"""

from __future__ import annotations

from msgspec import Struct

from actors.core.trace.names import message
from runtime.ids import PodUID


@message("PodStopping")
class PodStopping(Struct, frozen=True):
    """A pod worker begins (``stopping``) or ends stopping (and removing) its pod."""

    uid: PodUID
    stopping: bool
