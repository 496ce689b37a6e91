"""Container garbage collection, planned (upstream's kuberuntime_gc.go, as a pure function).

``plan_container_gc`` takes what the runtime holds (containers and sandboxes as the kubelet
labelled them), the pod log directories on disk, which pods the kubelet still has, the
policy and the time, and says what to remove and why; the caller carries the plan out.

Upstream's rules, in its order:

- Evictable containers are those not running and created at least ``min_age`` ago, grouped
  per (pod UID, container name), newest first. Unlike upstream, a container still in the
  CREATED state is not evictable: the pod worker may be about to start it (upstream counts
  it, and a sync racing its GC loses a container it just made).
- When every source has been heard from, a pod whose content may go (deleted or unknown)
  loses all its evictable containers; with ``evict_non_deleted`` (a reclaim the eviction
  manager asked for) so does a pod that is only terminated.
- Each remaining group keeps its newest ``max_per_pod_container``; restart counts read the
  newest instance's annotation and ``kubectl logs --previous`` its log, so with the default
  of 1 neither changes.
- With ``max_containers`` >= 0, groups are cut evenly to fit (at least one each), then the
  oldest of all go.
- Sandboxes: a sandbox is active when it is ready or still has containers (counted before
  this round's removals, as upstream). A pod whose content may go loses all its inactive
  sandboxes (here only once every source has spoken); a live pod keeps its newest sandbox
  and loses older inactive ones.
- Pod log directories (``<ns>_<name>_<uid>``) of pods whose content may go are removed,
  once every source has been heard from.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable

from msgspec import Struct

from runtime.ids import ContainerID, PodUID, SandboxID

DEFAULT_MIN_AGE = 0.0
DEFAULT_MAX_PER_POD_CONTAINER = 1
DEFAULT_MAX_CONTAINERS = -1


class ContainerGCPolicy(Struct, frozen=True):
    """Upstream's GCPolicy: ``--minimum-container-ttl-duration``,
    ``--maximum-dead-containers-per-container``, ``--maximum-dead-containers``
    (a negative maximum means no limit)."""

    min_age: float = DEFAULT_MIN_AGE
    max_per_pod_container: int = DEFAULT_MAX_PER_POD_CONTAINER
    max_containers: int = DEFAULT_MAX_CONTAINERS


class GCState(enum.Enum):
    """A container's CRI state, as the collector needs it."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class GCContainer(Struct, frozen=True):
    """One container the kubelet made, as ListContainers and its labels show it."""

    id: ContainerID
    sandbox_id: SandboxID
    pod_uid: PodUID
    pod_name: str
    pod_namespace: str
    name: str
    state: GCState
    created_at: float  # wall seconds


class GCSandbox(Struct, frozen=True):
    """One sandbox the kubelet made, as ListPodSandbox shows it."""

    id: SandboxID
    pod_uid: PodUID
    pod_name: str
    pod_namespace: str
    ready: bool
    created_at: float


class PodsForGC(Struct, frozen=True):
    """What the kubelet knows of its pods, for the collector (upstream's podStateProvider).

    ``keep_content``: pods whose containers and logs must stay (wanted by a source, or
    still being stopped); every other pod's content may go (ShouldPodContentBeRemoved).
    ``keep_runtime``: pods not yet terminated; every other pod's runtime objects may go
    in a reclaim (ShouldPodRuntimeBeRemoved). ``sources_ready``: every source has spoken.
    """

    keep_content: tuple[PodUID, ...] = ()
    keep_runtime: tuple[PodUID, ...] = ()
    sources_ready: bool = False


class RemovalReason(enum.Enum):
    POD_GONE = "pod-gone"
    """The pod is deleted or unknown (or, in a reclaim, terminated): all of it goes."""
    MAX_PER_CONTAINER = "max-per-pod-container"
    MAX_CONTAINERS = "max-containers"
    OLDER_SANDBOX = "older-sandbox"


class ContainerRemoval(Struct, frozen=True):
    container: GCContainer
    reason: RemovalReason


class SandboxRemoval(Struct, frozen=True):
    sandbox: GCSandbox
    reason: RemovalReason


class ContainerGCPlan(Struct, frozen=True):
    """What one container GC round removes, oldest first within each kind."""

    containers: tuple[ContainerRemoval, ...] = ()
    sandboxes: tuple[SandboxRemoval, ...] = ()
    log_dirs: tuple[str, ...] = ()  # names under the pod logs directory

    @property
    def empty(self) -> bool:
        return not (self.containers or self.sandboxes or self.log_dirs)


def pod_uid_of_log_dir(name: str) -> PodUID:
    """The pod UID a ``<namespace>_<name>_<uid>`` log directory names (upstream's
    parsePodUIDFromLogsDirectory: the part after the last underscore)."""
    return PodUID(name.rsplit("_", 1)[-1])


def _newest_first(items: Iterable[GCContainer]) -> list[GCContainer]:
    return sorted(items, key=lambda c: (c.created_at, c.id), reverse=True)


def plan_container_gc(
    containers: Iterable[GCContainer],
    sandboxes: Iterable[GCSandbox],
    log_dirs: Iterable[str],
    pods: PodsForGC,
    policy: ContainerGCPolicy,
    now: float,
    evict_non_deleted: bool = False,
) -> ContainerGCPlan:
    """What to remove now (see the module's docstring for the rules)."""
    all_containers = tuple(containers)
    keep_content = frozenset(pods.keep_content)
    keep_runtime = frozenset(pods.keep_runtime)

    def content_may_go(uid: PodUID) -> bool:
        return uid not in keep_content or (evict_non_deleted and uid not in keep_runtime)

    units: dict[tuple[PodUID, str], list[GCContainer]] = defaultdict(list)
    newest_allowed = now - policy.min_age
    for c in all_containers:
        if c.state in (GCState.RUNNING, GCState.CREATED) or c.created_at > newest_allowed:
            continue
        units[(c.pod_uid, c.name)].append(c)
    for key in units:
        units[key] = _newest_first(units[key])

    removals: list[ContainerRemoval] = []

    def remove_oldest(unit: list[GCContainer], n: int, reason: RemovalReason) -> None:
        for c in reversed(unit[len(unit) - n:] if n > 0 else []):
            removals.append(ContainerRemoval(c, reason))
        del unit[len(unit) - max(n, 0):]

    if pods.sources_ready:
        for key in [k for k in units if content_may_go(k[0])]:
            remove_oldest(units[key], len(units[key]), RemovalReason.POD_GONE)
            del units[key]
    if policy.max_per_pod_container >= 0:
        for unit in units.values():
            remove_oldest(unit, len(unit) - policy.max_per_pod_container,
                          RemovalReason.MAX_PER_CONTAINER)
    total = sum(len(u) for u in units.values())
    if policy.max_containers >= 0 and total > policy.max_containers:
        live_units = [u for u in units.values() if u]
        per_unit = max(policy.max_containers // max(len(live_units), 1), 1)
        for unit in live_units:
            remove_oldest(unit, len(unit) - per_unit, RemovalReason.MAX_CONTAINERS)
        rest = sorted((c for u in units.values() for c in u),
                      key=lambda c: (c.created_at, c.id))
        excess = len(rest) - policy.max_containers
        removals.extend(ContainerRemoval(c, RemovalReason.MAX_CONTAINERS)
                        for c in rest[:max(excess, 0)])

    return ContainerGCPlan(
        containers=tuple(removals),
        sandboxes=_plan_sandboxes(all_containers, tuple(sandboxes), pods, evict_non_deleted),
        log_dirs=tuple(sorted(
            d for d in log_dirs
            if pods.sources_ready and pod_uid_of_log_dir(d) not in keep_content)),
    )


def _plan_sandboxes(containers: tuple[GCContainer, ...], sandboxes: tuple[GCSandbox, ...],
                    pods: PodsForGC, evict_non_deleted: bool) -> tuple[SandboxRemoval, ...]:
    """Upstream's evictSandboxes: inactive sandboxes of gone pods, and older inactive ones
    of live pods (the newest sandbox of a live pod stays, whatever its state)."""
    with_containers = {c.sandbox_id for c in containers}
    keep_content = frozenset(pods.keep_content)
    keep_runtime = frozenset(pods.keep_runtime)
    by_pod: dict[PodUID, list[GCSandbox]] = defaultdict(list)
    for s in sandboxes:
        by_pod[s.pod_uid].append(s)
    removals: list[SandboxRemoval] = []
    for uid in sorted(by_pod):
        newest_first = sorted(by_pod[uid], key=lambda s: (s.created_at, s.id), reverse=True)
        # Upstream asks even before every source has spoken (an unknown pod counts as
        # gone); here a pod counts as gone only once they have, so a kubelet that has just
        # started never takes the sandbox of a pod its sources are about to name again.
        gone = pods.sources_ready and (
            uid not in keep_content or (evict_non_deleted and uid not in keep_runtime))
        candidates = newest_first if gone else newest_first[1:]
        reason = RemovalReason.POD_GONE if gone else RemovalReason.OLDER_SANDBOX
        for s in reversed(candidates):
            if not s.ready and s.id not in with_containers:
                removals.append(SandboxRemoval(s, reason))
    return tuple(removals)
