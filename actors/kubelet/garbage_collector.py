"""The garbage collector: removes dead containers, their sandboxes and logs, and unused images.

Upstream runs its containerGC every minute and its imageGCManager every five; here both are
rounds of one actor, one round at a time, on ticks (``container-gc``, ``image-gc``) or when
asked to reclaim (CollectGarbage, from the eviction manager). A round goes:

1. its thread reads the runtime (gc_runtime.gather) and tells the actor (GCGathered);
2. a container round asks the sync loop which pods it still has (GetGCPods -> GCPods):
   after the listing, so a pod whose containers were listed is already known to it;
3. the actor plans (container_gc / image_gc, pure) and sends itself the plan (GCPlanned),
   so the decision is a message in the trace, which a replay checks;
4. its thread carries the plan out (gc_runtime.carry_out) and tells the actor (GCCarriedOut),
   which records events and metrics and answers a reclaim.

Upstream's events: ContainerGCFailed when a container round fails; FreeDiskSpaceFailed when
an image round could not free enough; ImageGCFailed when image rounds fail twice in a row.
"""

from __future__ import annotations

import enum
from collections import deque
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.gc_settings import GCSettings
from actors.kubelet.messages import CollectGarbage, GarbageCollected, GCPods, GetGCPods
from actors.kubelet.metrics import KubeletMetrics
from runtime.clock import Clock
from runtime.cri.service import CRIRuntime
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref
from runtime.kuberuntime.container_gc import ContainerGCPlan, plan_container_gc
from runtime.kuberuntime.gc_runtime import GCInputs, GCOutcome, carry_out, gather
from runtime.kuberuntime.image_gc import (
    ImageGCPlan,
    ImageRecord,
    detect_images,
    forget_removed,
    free_disk_space_failed,
    plan_delete_unused,
    plan_image_gc,
)


class RoundKind(enum.Enum):
    CONTAINERS = "containers"
    IMAGES = "images"
    RECLAIM = "reclaim"  # both, everything unused: the eviction manager asked


class _Round(Struct, frozen=True):
    seq: int
    kind: RoundKind
    reason: str = ""
    reply_to: str = ""


@message("GCGathered")
class GCGathered(Struct, frozen=True):
    """Internal: the round's reading of the runtime."""

    seq: int
    inputs: GCInputs


@message("GCPlanned")
class GCPlanned(Struct, frozen=True):
    """Internal: what the round removes (its decision, as the trace records it)."""

    seq: int
    containers: ContainerGCPlan | None = None
    images: ImageGCPlan | None = None


@message("GCCarriedOut")
class GCCarriedOut(Struct, frozen=True):
    """Internal: what carrying the plan out removed, and what failed."""

    seq: int
    outcome: GCOutcome


class GarbageCollector(Actor):
    """Runs container and image GC rounds, one at a time, on its own thread."""

    def __init__(
        self,
        dispatch: Dispatch,
        timers: Timers,
        runtime: CRIRuntime,
        clock: Clock,
        settings: GCSettings,
        pod_logs_dir: str,
        node_name: str = "",
        metrics: KubeletMetrics | None = None,
        incarnation: int = 0,
        executor: Executor | None = None,
        events: EventRecorder = NULL_RECORDER,
    ) -> None:
        super().__init__(names.GC, dispatch, incarnation)
        self._timers = timers
        self._runtime = runtime
        self._clock = clock
        self._settings = settings
        self._pod_logs_dir = pod_logs_dir
        self._node_name = node_name
        self._metrics = metrics
        self._events = events
        # A replay passes an executor that runs nothing: what the thread read and did
        # comes back as the recorded GCGathered and GCCarriedOut.
        self._pool: Executor = executor or ThreadPoolExecutor(1, thread_name_prefix="gc")
        self._queue: deque[_Round] = deque()
        self._current: _Round | None = None
        self._inputs: GCInputs | None = None
        self._seq = 0
        self._records: dict[str, ImageRecord] = {}
        self._image_plan_at = 0.0
        self._image_plan: ImageGCPlan | None = None
        self._started: float | None = None  # the first image round: max-age counts from it
        self._image_gc_failed = False
        self._tickers: list[Cancellable] = []

    def on_start(self) -> None:
        s = self._settings
        self._tickers.append(self._timers.every(
            names.TICK_CONTAINER_GC, self.name, s.container_gc_period))
        if s.images.enabled:
            # First at once: images are detected (their age counts) from the start.
            self._tickers.append(self._timers.every(
                names.TICK_IMAGE_GC, self.name, s.image_gc_period, first=0.0))
        else:
            logger.bind(pod="", uid="", container="").info(
                "ImageGCHighThresholdPercent is set 100, Disable image GC")

    def on_stop(self) -> None:
        for ticker in self._tickers:
            ticker.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- the messages ------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_CONTAINER_GC:
            self._enqueue(RoundKind.CONTAINERS)
        elif isinstance(message, Tick) and message.kind == names.TICK_IMAGE_GC:
            self._enqueue(RoundKind.IMAGES)
        elif isinstance(message, CollectGarbage):
            self._enqueue(RoundKind.RECLAIM, message.reason, message.reply_to)
        elif isinstance(message, GCGathered):
            self._gathered(message)
        elif isinstance(message, GCPods):
            self._pods(message)
        elif isinstance(message, GCPlanned):
            self._planned(message)
        elif isinstance(message, GCCarriedOut):
            self._carried_out(message)
        else:
            return super().handle(message)
        return None

    def _enqueue(self, kind: RoundKind, reason: str = "", reply_to: str = "") -> None:
        pending = [r.kind for r in self._queue]
        if kind != RoundKind.RECLAIM and (kind in pending or (
                self._current is not None and self._current.kind == kind)):
            return  # a periodic round already waiting (or running) does this one's work
        self._seq += 1
        self._queue.append(_Round(self._seq, kind, reason, reply_to))
        self._next()

    def _next(self) -> None:
        if self._current is not None or not self._queue:
            return
        current = self._current = self._queue.popleft()
        self._inputs = None
        containers = current.kind != RoundKind.IMAGES
        images = current.kind != RoundKind.CONTAINERS
        self._pool.submit(self._gather, current.seq, containers, images)

    def _gather(self, seq: int, containers: bool, images: bool) -> None:
        try:
            inputs = gather(self._runtime, self._pod_logs_dir, containers, images)
        except Exception as err:  # a bug must not leave the round waiting forever
            logger.bind(pod="", uid="", container="").exception("reading for GC failed")
            inputs = GCInputs(error=repr(err))
        self.send(self.name, GCGathered(seq, inputs))

    def _gathered(self, gathered: GCGathered) -> None:
        current = self._current
        if current is None or gathered.seq != current.seq:
            return
        inputs = gathered.inputs
        if inputs.error:
            self._finish(current, GCOutcome(errors=(inputs.error,)))
            return
        self._inputs = inputs
        if current.kind != RoundKind.CONTAINERS:
            now = self._clock.now()
            self._image_plan_at = now
            if self._started is None:
                self._started = now
            in_use = {*inputs.images_in_use, self._settings.sandbox_image} - {""}
            self._records = detect_images(self._records, inputs.images, frozenset(in_use), now)
        if current.kind == RoundKind.IMAGES:
            self._plan(current, None)
        else:
            self.send(names.SYNC_LOOP, GetGCPods())

    def _pods(self, answer: GCPods) -> None:
        current = self._current
        if current is None or self._inputs is None or current.kind == RoundKind.IMAGES:
            return  # an answer for a round that is over (this actor was replaced)
        reclaim = current.kind == RoundKind.RECLAIM
        containers = plan_container_gc(
            self._inputs.containers, self._inputs.sandboxes, self._inputs.log_dirs,
            answer.pods, self._settings.containers, self._clock.now(),
            evict_non_deleted=reclaim)
        self._plan(current, containers)
        self._inputs = None  # planned: a second answer (one asked by a replaced actor) is dropped

    def _plan(self, current: _Round, containers: ContainerGCPlan | None) -> None:
        images: ImageGCPlan | None = None
        policy = self._settings.images
        now = self._image_plan_at
        if current.kind == RoundKind.IMAGES:
            images = plan_image_gc(self._records, self._inputs.image_fs if self._inputs
                                   else None, policy, now, self._started or now)
        elif current.kind == RoundKind.RECLAIM:
            images = plan_delete_unused(self._records, policy, now)
        self.send(self.name, GCPlanned(current.seq, containers, images))

    def _planned(self, planned: GCPlanned) -> None:
        current = self._current
        if current is None or planned.seq != current.seq:
            return
        log = logger.bind(pod="", uid="", container="")
        c, i = planned.containers, planned.images
        self._image_plan = i
        if (c is not None and not c.empty) or (i is not None and i.removals):
            log.info("garbage collection ({}): removing {} containers, {} sandboxes, {} pod "
                     "log directories, {} images", current.reason or current.kind.value,
                     len(c.containers) if c else 0, len(c.sandboxes) if c else 0,
                     len(c.log_dirs) if c else 0, len(i.removals) if i else 0)
        if i is not None and i.bytes_to_free:
            log.info("Disk usage on image filesystem is over the high threshold, trying to "
                     "free bytes down to the low threshold: usage {}%, highThreshold {}%, "
                     "amountToFree {}, lowThreshold {}%", i.usage_percent,
                     self._settings.images.high_threshold, i.bytes_to_free,
                     self._settings.images.low_threshold)
        self._pool.submit(self._carry_out, planned)

    def _carry_out(self, planned: GCPlanned) -> None:
        try:
            outcome = carry_out(self._runtime, self._pod_logs_dir, planned.containers,
                                planned.images)
        except Exception as err:  # a bug must not leave the round waiting forever
            logger.bind(pod="", uid="", container="").exception("carrying out GC failed")
            outcome = GCOutcome(errors=(repr(err),))
        self.send(self.name, GCCarriedOut(planned.seq, outcome))

    def _carried_out(self, done: GCCarriedOut) -> None:
        current = self._current
        if current is None or done.seq != current.seq:
            return
        if current.kind != RoundKind.CONTAINERS:
            self._records = forget_removed(self._records,
                                           (i.image_id for i in done.outcome.images))
        self._finish(current, done.outcome)

    def _finish(self, current: _Round, outcome: GCOutcome) -> None:
        """Events, metrics and the reclaim's answer; then the next round."""
        log = logger.bind(pod="", uid="", container="")
        errors = list(outcome.errors)
        if self._metrics is not None:
            for image in outcome.images:
                self._metrics.image_garbage_collected.labels(image.reason.value).inc()
        if current.kind == RoundKind.CONTAINERS and errors:
            log.error("container garbage collection failed: {}", "; ".join(errors))
            self._events.event(node_ref(self._node_name), reasons.WARNING,
                               reasons.CONTAINER_GC_FAILED, "; ".join(errors))
        if current.kind == RoundKind.IMAGES:
            self._image_round_done(outcome, errors)
        if current.reply_to:
            self.send(current.reply_to, GarbageCollected(
                current.reason, len(outcome.containers), len(outcome.sandboxes),
                len(outcome.images), outcome.bytes_freed, tuple(errors)))
        self._current = None
        self._inputs = None
        self._image_plan = None
        self._next()

    def _image_round_done(self, outcome: GCOutcome, errors: list[str]) -> None:
        """Upstream's GarbageCollect outcome: InvalidDiskCapacity or FreeDiskSpaceFailed
        when it applies, ImageGCFailed only when the previous round failed too."""
        log = logger.bind(pod="", uid="", container="")
        node = node_ref(self._node_name)
        plan = self._image_plan
        if plan is not None and plan.error:
            self._events.event(node, reasons.WARNING, reasons.INVALID_DISK_CAPACITY, plan.error)
            errors.append(plan.error)
        elif plan is not None and not errors:
            text = free_disk_space_failed(plan, outcome.bytes_freed)
            if text:
                self._events.event(node, reasons.WARNING, reasons.FREE_DISK_SPACE_FAILED, text)
                errors.append(text)
        if errors:
            text = "; ".join(errors)
            if self._image_gc_failed:
                log.error("Image garbage collection failed multiple times in a row: {}", text)
                self._events.event(node, reasons.WARNING, reasons.IMAGE_GC_FAILED, text)
            else:
                log.error("Image garbage collection failed once: {}", text)
        self._image_gc_failed = bool(errors)
