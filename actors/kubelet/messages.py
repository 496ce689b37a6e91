"""The messages actors exchange: immutable values, JSON-encodable, no protobuf.

Every input of the kubelet reaches an actor as one of these (source updates, timer ticks,
relist results, probe results, runtime call outcomes), through actors.core.dispatch, so a trace
can record them and a replay can feed them again.
"""

from __future__ import annotations

import enum

from msgspec import Struct

from actors.core.trace.names import message
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.container_gc import PodsForGC
from runtime.kuberuntime.podstatus import PodListing, RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult
from runtime.pod.admission import rejected_message
from runtime.pod.model import Pod
from runtime.prober.results import ProbeResult

Verdicts = tuple[tuple[ContainerID, ProbeResult], ...]
"""Probe verdicts by container, as an immutable sequence of pairs."""


# --- sources -> supervisor -------------------------------------------------------------


class ManifestProblem(Struct, frozen=True):
    """A manifest that could not become a pod: where, which field, why."""

    source: str
    path: str
    cause: str


@message("SourceSnapshot")
class SourceSnapshot(Struct, frozen=True):
    """Every pod a source wants right now (upstream's SET), with the files it rejected."""

    source: str  # "file" or "http"
    pods: tuple[Pod, ...]
    problems: tuple[ManifestProblem, ...] = ()
    warnings: tuple[str, ...] = ()



# --- PLEG -> supervisor ----------------------------------------------------------------


class EventType(enum.Enum):
    CONTAINER_STARTED = "ContainerStarted"
    CONTAINER_DIED = "ContainerDied"
    CONTAINER_REMOVED = "ContainerRemoved"
    CONTAINER_CHANGED = "ContainerChanged"
    POD_SYNC = "PodSync"


class PodLifecycleEvent(Struct, frozen=True):
    uid: PodUID
    type: EventType
    container_id: ContainerID | None = None


class RuntimeContainer(Struct, frozen=True):
    id: ContainerID
    name: str
    image: str
    state: str  # running, exited, created, unknown


class RuntimePod(Struct, frozen=True):
    """A pod the runtime holds something of, named by its labels."""

    uid: PodUID
    name: str
    namespace: str
    running: bool  # a ready sandbox or a running container
    containers: tuple[RuntimeContainer, ...] = ()


@message("Relisted")
class Relisted(Struct, frozen=True):
    """One PLEG relist: the events it found and every pod the runtime holds."""

    events: tuple[PodLifecycleEvent, ...]
    pods: tuple[RuntimePod, ...]
    running_containers: int
    duration: float
    # The runtime's event stream was up: relists are then a safety net run every
    # EVENTED_RELIST_PERIOD, and the PLEG counts as healthy for longer between them.
    evented: bool = False
    # A PLEG's first relist: every pod's sandboxes and containers (a pod not in it has
    # none), for the first sync of each pod admitted while the sources are not all heard
    # from (see PodListing). None: a later relist.
    listings: tuple[PodListing, ...] | None = None
    # When its lists had returned (the PLEG's clock, monotonic): what it shows is no newer
    # than this, so a worker's read begun later shows as much or more (UpdatePod.
    # relisted_at). The PLEG always tells it; None only in messages built by hand.
    listed_at: float | None = None


@message("RuntimeEventSeen")
class RuntimeEventSeen(Struct, frozen=True):
    """The runtime's event stream reported a container change (runtime.cri.runtime_events)."""

    kind: str  # an EventKind value: "/tasks/exit", "/tasks/start", ...
    container_id: str


@message("RuntimeEventsConnected")
class RuntimeEventsConnected(Struct, frozen=True):
    """The runtime's event stream is (again) open: the PLEG may relist less often."""

    source: str = ""  # an EventSource value: "cri", "containerd"; "": not told


@message("RuntimeEventsLost")
class RuntimeEventsLost(Struct, frozen=True):
    """The runtime's event stream broke (or never opened): the PLEG relists every period."""

    reason: str


@message("RelistNow")
class RelistNow(Struct, frozen=True):
    """The PLEG to itself: relist now, because of an event (or to re-check one)."""

    reason: str


@message("SyncChangedRuntime")
class SyncChangedRuntime(Struct, frozen=True):
    """A pod worker's sync made or started sandboxes or containers: the PLEG relists
    (one relist for however many wait), and what it finds reaches the sync loop as events,
    as upstream's PLEG sees a pod worker's work at its next relist."""

    uid: PodUID
    # What the worker read of its pod right after a sync that made things: each sandbox's
    # and container's id with its PLEG state (actors.kubelet.pleg.PlegState values). The
    # relist makes no events of the pod when it shows just that (the worker has observed
    # it already). None (a sync that read nothing after it): the relist's events go out
    # as found.
    observed: tuple[tuple[ContainerID, str], ...] | None = None


@message("RelistFailed")
class RelistFailed(Struct, frozen=True):
    error: str


# --- supervisor -> pod workers -----------------------------------------------------------


class UpdateKind(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    SYNC = "sync"
    KILL = "kill"


@message("UpdatePod")
class UpdatePod(Struct, frozen=True):
    """Bring the worker's pod to ``pod``; KILL (or a deleted pod) terminates it."""

    pod: Pod
    kind: UpdateKind
    liveness: Verdicts = ()
    startup: Verdicts = ()
    grace_override: int | None = None
    reason: str = ""
    remove: bool = False  # after stopping, remove the pod's sandboxes, containers, dirs
    # A kill that fails the pod (upstream's killPodFunc status function, e.g. an
    # eviction): once stopped, its status is Failed with this reason and message.
    failed_reason: str = ""
    failed_message: str = ""
    failed_disruption: bool = True  # an eviction's DisruptionTarget condition (not for
    # local storage limits, as upstream)
    # A periodic resync (the sync loop's requeue), not news of the pod: the worker may
    # sync on the runtime status its last sync read and found nothing to do with, as
    # upstream's worker reads its PLEG cache. False (every other update): the status is
    # read afresh.
    resync: bool = False
    # The first update of a pod's first worker after the PLEG's first relist (at start):
    # what that relist showed of the pod, so the worker's first sync lists nothing again
    # (see PodListing). None: the worker lists the pod's sandboxes and containers itself.
    listing: PodListing | None = None
    # An update the PLEG's events brought: when the relist that found them had its lists
    # back (Relisted.listed_at). A worker whose last read of its pod began after that
    # syncs on that read: the relist saw nothing it did not. None: any other update.
    relisted_at: float | None = None
    # The runtime's network is not ready (RuntimeHealth.network_error): a pod not in the
    # node's network is not synced (upstream's SyncPod: "network is not ready").
    network_error: str = ""


class WorkerState(enum.Enum):
    SYNCING = "syncing"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


@message("PodWorkerDone")
class PodWorkerDone(Struct, frozen=True):
    """A worker finished one round; the supervisor requeues it after ``requeue_after``."""

    uid: PodUID
    state: WorkerState
    requeue_after: float | None
    error: str = ""
    runtime_error: bool = False


# --- pod workers -> status manager and probe manager ------------------------------------


@message("PodObserved")
class PodObserved(Struct, frozen=True):
    """What a worker saw of its pod in the runtime, and what its last sync did."""

    pod: Pod
    runtime: RuntimePodStatus
    sync: PodSyncResult | None
    state: WorkerState
    # A pod-level verdict of the worker (upstream's PodSyncHandler ShouldEvict, e.g.
    # DeadlineExceeded): the pod is Failed with this reason and message from now on.
    failed_reason: str = ""
    failed_message: str = ""
    failed_disruption: bool = True  # with an eviction's DisruptionTarget condition


@message("PodRejected")
class PodRejected(Struct, frozen=True):
    """Admission refused the pod (upstream: phase Failed with a reason)."""

    pod: Pod
    reason: str
    message: str

    @property
    def status_message(self) -> str:
        """The pod's status message (runtime.pod.admission.rejected_message)."""
        return rejected_message(self.message)


@message("DesiredPods")
class DesiredPods(Struct, frozen=True):
    """Every pod the sources want, so status shows them before their first sync."""

    pods: tuple[Pod, ...]


@message("GetPods")
class GetPods(Struct, frozen=True):
    """Ask the status manager for every pod with its status."""


@message("PodForgotten")
class PodForgotten(Struct, frozen=True):
    """The pod is gone from the node: drop its status, probes and back-offs."""

    uid: PodUID


# --- probe manager -----------------------------------------------------------------------


class ProbeKind(enum.Enum):
    LIVENESS = "liveness"
    READINESS = "readiness"
    STARTUP = "startup"


@message("ProbeVerdict")
class ProbeVerdict(Struct, frozen=True):
    """A probe's result flipped (after its thresholds) for one container."""

    uid: PodUID
    container_name: str
    container_id: ContainerID
    kind: ProbeKind
    result: ProbeResult


# --- pod killer --------------------------------------------------------------------------


@message("KillRuntimePod")
class KillRuntimePod(Struct, frozen=True):
    """Stop and remove everything the runtime holds of a pod no source wants."""

    uid: PodUID
    name: str
    namespace: str
    grace_override: int | None = None
    reason: str = "orphaned"


@message("RuntimePodKilled")
class RuntimePodKilled(Struct, frozen=True):
    uid: PodUID
    ok: bool
    error: str = ""


# --- runtime health ----------------------------------------------------------------------


@message("RuntimeHealth")
class RuntimeHealth(Struct, frozen=True):
    """Whether the CRI runtime answers; ``reason`` says why not. ``network_error``: its
    NetworkReady condition false or absent, in upstream's words ("container runtime
    network not ready: ..."); "" when the network is ready."""

    ok: bool
    reason: str = ""
    network_error: str = ""


# --- garbage collection ------------------------------------------------------------------


@message("CollectGarbage")
class CollectGarbage(Struct, frozen=True):
    """Ask the garbage collector to reclaim now (the eviction manager, under disk
    pressure): every dead container of a terminated or deleted pod, then every unused
    image old enough (upstream's DeleteAllUnusedContainers and DeleteUnusedImages). The
    answer, a GarbageCollected, goes to ``reply_to``."""

    reason: str
    reply_to: str


@message("GarbageCollected")
class GarbageCollected(Struct, frozen=True):
    """What a reclaim freed: containers, sandboxes and images removed, image bytes freed."""

    reason: str
    containers: int
    sandboxes: int
    images: int
    bytes_freed: int
    errors: tuple[str, ...] = ()


@message("GetGCPods")
class GetGCPods(Struct, frozen=True):
    """The garbage collector asks the sync loop which pods it still has (answer: GCPods)."""


@message("GCPods")
class GCPods(Struct, frozen=True):
    """The sync loop's answer to GetGCPods: the pods whose content and runtime stay."""

    pods: PodsForGC
