"""Merging the config sources' pods into one desired set: upstream's PodConfig.

Upstream (pkg/kubelet/config/config.go, incremental mode) keeps, per source, the pods that
source wants keyed by UID, and turns each update of a source into the smallest set of
operations for the kubelet: REMOVE, ADD, UPDATE, DELETE, RECONCILE, in that order. Our
sources (file, http) always send their whole set (upstream's SET), as a SourceSnapshot;
``PodConfig.apply`` diffs it against what that source sent before.

Per source, keyed by UID:

- a new UID is an ADD; the pod is stamped ``kubernetes.io/config.seen`` with the clock's
  wall time (RFC 3339) and keeps the source's ``config.source`` / ``config.hash``;
- a UID the source no longer sends is a REMOVE;
- the same UID with a different spec, labels, deletion timestamp or grace, or annotations
  (the kubelet's own annotations aside) is an UPDATE, or a DELETE when the new version has
  a deletion timestamp; the first-seen time is kept;
- the same UID differing only elsewhere is a RECONCILE. Upstream means the status; our Pod
  carries no status, so anything outside the fields above (bookkeeping metadata such as
  resourceVersion) counts. Static pods rarely change that way: their UID hashes the whole
  manifest.

Within one snapshot a repeated full name (``name_namespace``) keeps the first pod, as
upstream's filterInvalidPods. Across sources (our addition: upstream leaves it to the pod
workers) a full name already held by another source is refused; the first source keeps
it, and the refused pod is admitted (as an ADD) once the holder drops that name. Every
refusal is reported once in ``PodChanges.conflicts``.

A source is ready once it has sent one snapshot. PodConfig is plain state with no locks:
it lives inside the supervisor actor and is called from its thread only.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping

from msgspec import Struct
from msgspec.structs import replace

from actors.kubelet.messages import SourceSnapshot
from runtime.clock import Clock
from runtime.pod.model import Pod
from runtime.pod.static import CONFIG_SEEN, CONFIG_SOURCE

__all__ = ["CONFIG_MIRROR", "PodChanges", "PodConfig", "rfc3339_nano"]

CONFIG_MIRROR = "kubernetes.io/config.mirror"

# The annotations the kubelet itself sets: never a reason for an UPDATE.
_LOCAL_ANNOTATIONS = frozenset({CONFIG_SOURCE, CONFIG_MIRROR, CONFIG_SEEN})


class PodChanges(Struct, frozen=True):
    """What one snapshot changed in the desired pods, in upstream's delivery order.

    ``adds`` may hold pods of another source: a pod refused for a name conflict is admitted
    when the snapshot being applied frees its name. ``first_snapshot`` is True when this
    snapshot made its source ready (upstream sends an empty ADD for that).
    """

    removes: tuple[Pod, ...] = ()
    adds: tuple[Pod, ...] = ()
    updates: tuple[Pod, ...] = ()
    deletes: tuple[Pod, ...] = ()
    reconciles: tuple[Pod, ...] = ()
    conflicts: tuple[str, ...] = ()
    first_snapshot: bool = False

    @property
    def empty(self) -> bool:
        """No pod changed and nothing new was refused."""
        return not (
            self.removes
            or self.adds
            or self.updates
            or self.deletes
            or self.reconciles
            or self.conflicts
        )

    def ops(self) -> tuple[tuple[str, tuple[Pod, ...]], ...]:
        """The non-empty operations in delivery order, as (op, pods) pairs."""
        ordered = (
            ("REMOVE", self.removes),
            ("ADD", self.adds),
            ("UPDATE", self.updates),
            ("DELETE", self.deletes),
            ("RECONCILE", self.reconciles),
        )
        return tuple((op, pods) for op, pods in ordered if pods)


def rfc3339_nano(seconds: float) -> str:
    """A wall time as upstream's config.seen writes it (RFC 3339, fraction, UTC ``Z``)."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return f"{text}.{fraction}Z" if fraction else f"{text}Z"


def _public_annotations(annotations: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in annotations.items() if k not in _LOCAL_ANNOTATIONS}


def differ_semantically(existing: Pod, ref: Pod) -> bool:
    """Upstream's podsDifferSemantically: a change the kubelet has to act on."""
    old, new = existing.metadata, ref.metadata
    return (
        existing.spec != ref.spec
        or dict(old.labels) != dict(new.labels)
        or old.deletion_timestamp != new.deletion_timestamp
        or old.deletion_grace_period_seconds != new.deletion_grace_period_seconds
        or _public_annotations(old.annotations) != _public_annotations(new.annotations)
    )


def _with_annotations(pod: Pod, annotations: dict[str, str]) -> Pod:
    return replace(pod, metadata=replace(pod.metadata, annotations=annotations))


class PodConfig:
    """The desired pods of every source, and the changes each new snapshot makes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        # source -> uid -> admitted pod (insertion order = the source's order)
        self._admitted: dict[str, dict[str, Pod]] = {}
        # source -> the pods of its last snapshot, after its own duplicates were dropped
        self._wanted: dict[str, tuple[Pod, ...]] = {}
        # source -> uid -> why that pod is refused (reported once)
        self._refused: dict[str, dict[str, str]] = {}
        self._seen: list[str] = []  # sources in the order they first sent a snapshot

    # --- queries ------------------------------------------------------------------------

    @property
    def seen_sources(self) -> frozenset[str]:
        """The sources that have sent at least one snapshot."""
        return frozenset(self._seen)

    def sources_ready(self, expected: frozenset[str]) -> bool:
        """True once every expected source has sent a snapshot (upstream SeenAllSources)."""
        return expected <= self.seen_sources

    def pods(self) -> tuple[Pod, ...]:
        """Every desired pod, all sources merged (sources in the order first seen)."""
        return tuple(pod for source in self._seen for pod in self._admitted[source].values())

    def pod(self, uid: str) -> Pod | None:
        """The desired pod with this UID, from whichever source holds it."""
        for pods in self._admitted.values():
            if (pod := pods.get(uid)) is not None:
                return pod
        return None

    def refused(self) -> tuple[str, ...]:
        """Why each currently refused pod is refused."""
        return tuple(msg for source in self._seen for msg in self._refused[source].values())

    # --- the merge ----------------------------------------------------------------------

    def apply(self, snapshot: SourceSnapshot) -> PodChanges:
        """Take a source's whole set of pods; return what changed, in upstream's order."""
        source = snapshot.source
        first = source not in self._admitted
        if first:
            self._seen.append(source)
            self._admitted[source] = {}
            self._refused[source] = {}

        wanted, refused = self._dedupe(source, snapshot.pods)
        self._wanted[source] = wanted
        holders = self._holders(exclude=source)

        old = self._admitted[source]
        new: dict[str, Pod] = {}
        adds: list[Pod] = []
        updates: list[Pod] = []
        deletes: list[Pod] = []
        reconciles: list[Pod] = []
        for ref in wanted:
            holder = holders.get(ref.full_name)
            if holder is not None:
                refused[ref.uid] = (
                    f'pod "{ref.full_name}" (UID {ref.uid}) from source "{source}" refused: '
                    f'the name is already used by source "{holder}"'
                )
                continue
            ref = self._annotated(ref, source)
            existing = old.get(ref.uid)
            if existing is None:
                ref = self._stamped(ref)
                new[ref.uid] = ref
                adds.append(ref)
                continue
            stored, kind = self._check(existing, ref)
            new[ref.uid] = stored
            if kind == "update":
                updates.append(stored)
            elif kind == "delete":
                deletes.append(stored)
            elif kind == "reconcile":
                reconciles.append(stored)
        removes = [pod for uid, pod in old.items() if uid not in new]
        self._admitted[source] = new

        conflicts = [msg for uid, msg in refused.items() if uid not in self._refused[source]]
        self._refused[source] = refused

        # Names this snapshot freed may let another source's refused pod in.
        freed = {pod.full_name for pod in removes} - {pod.full_name for pod in new.values()}
        adds += self._admit_refused(freed, exclude=source)

        return PodChanges(
            removes=tuple(removes),
            adds=tuple(adds),
            updates=tuple(updates),
            deletes=tuple(deletes),
            reconciles=tuple(reconciles),
            conflicts=tuple(conflicts),
            first_snapshot=first,
        )

    # --- helpers ------------------------------------------------------------------------

    @staticmethod
    def _dedupe(source: str, pods: Iterable[Pod]) -> tuple[tuple[Pod, ...], dict[str, str]]:
        """The pods with each full name's first only (upstream filterInvalidPods)."""
        kept: list[Pod] = []
        names: set[str] = set()
        refused: dict[str, str] = {}
        for pod in pods:
            if pod.full_name in names:
                refused[pod.uid] = (
                    f'pod "{pod.full_name}" (UID {pod.uid}) from source "{source}" ignored: '
                    "duplicate pod name in the same source"
                )
                continue
            names.add(pod.full_name)
            kept.append(pod)
        return tuple(kept), refused

    def _holders(self, exclude: str) -> dict[str, str]:
        """Full name -> the source holding it, over every source but ``exclude``."""
        return {
            pod.full_name: source
            for source, pods in self._admitted.items()
            if source != exclude
            for pod in pods.values()
        }

    def _admit_refused(self, names: set[str], exclude: str) -> list[Pod]:
        """Admit, per freed name, the refused pod of the earliest-seen other source."""
        admitted: list[Pod] = []
        for source in self._seen:
            if source == exclude or not names:
                continue
            for ref in self._wanted.get(source, ()):
                if ref.full_name not in names or ref.uid not in self._refused[source]:
                    continue
                del self._refused[source][ref.uid]
                pod = self._stamped(self._annotated(ref, source))
                self._admitted[source][pod.uid] = pod
                admitted.append(pod)
                names.discard(ref.full_name)
        return admitted

    @staticmethod
    def _annotated(pod: Pod, source: str) -> Pod:
        """The pod with ``config.source`` set (a static pod already has it)."""
        if CONFIG_SOURCE in pod.metadata.annotations:
            return pod
        return _with_annotations(pod, {**pod.metadata.annotations, CONFIG_SOURCE: source})

    def _stamped(self, pod: Pod) -> Pod:
        """The pod stamped with the time the kubelet first saw it."""
        seen = rfc3339_nano(self._clock.now())
        return _with_annotations(pod, {**pod.metadata.annotations, CONFIG_SEEN: seen})

    @staticmethod
    def _check(existing: Pod, ref: Pod) -> tuple[Pod, str]:
        """Upstream checkAndUpdatePod: the pod to keep and "update", "delete",
        "reconcile" or "" (nothing to tell)."""
        # The kubelet's own annotations carry over from what it already holds.
        local = {k: v for k, v in existing.metadata.annotations.items() if k in _LOCAL_ANNOTATIONS}
        stored = _with_annotations(ref, {**ref.metadata.annotations, **local})
        if not differ_semantically(existing, ref):
            return (existing, "") if stored == existing else (stored, "reconcile")
        return stored, "delete" if ref.metadata.deletion_timestamp is not None else "update"
