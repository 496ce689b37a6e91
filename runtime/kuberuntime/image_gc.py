"""Image garbage collection, planned (upstream's images/image_gc_manager.go, as pure functions).

The collector remembers each image it has seen (``ImageRecord``: when first detected, when
last used by a container, its size, whether the runtime pins it); ``detect_images`` brings
those records up to date from one listing. ``plan_image_gc`` is one periodic round: images
unused for longer than ``max_age`` go (when set, and once that long has passed since the
collector started); then, when the image filesystem's usage is at or over the high
threshold, unused images go, least recently used first (ties: first detected first), until
usage would be at the low threshold. An image in use by any container (running or not), a
pinned image (the runtime's sandbox image) and an image first seen less than ``min_age``
ago never go. ``plan_delete_unused`` is a reclaim: every unused image old enough goes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from msgspec import Struct

from runtime.errors import ConfigError
from runtime.events.v1 import go_duration

DEFAULT_HIGH_THRESHOLD = 85
DEFAULT_LOW_THRESHOLD = 80
DEFAULT_MIN_AGE = 120.0
DEFAULT_MAX_AGE = 0.0
DISABLED_AT = 100
"""A high threshold of 100 turns image GC off (upstream: "ImageGCHighThresholdPercent is
set 100, Disable image GC")."""


class ImageGCPolicy(Struct, frozen=True):
    """Upstream's ImageGCPolicy: ``--image-gc-high-threshold``, ``--image-gc-low-threshold``
    (percent of the image filesystem), ``--minimum-image-ttl-duration``,
    ``--image-maximum-gc-age`` (0: images are never removed for their age alone)."""

    high_threshold: int = DEFAULT_HIGH_THRESHOLD
    low_threshold: int = DEFAULT_LOW_THRESHOLD
    min_age: float = DEFAULT_MIN_AGE
    max_age: float = DEFAULT_MAX_AGE

    @property
    def enabled(self) -> bool:
        return self.high_threshold != DISABLED_AT

    def validate(self) -> None:
        """Upstream's checks (NewImageGCManager and ValidateKubeletConfiguration)."""
        for value, name, flag in ((self.high_threshold, "imageGCHighThresholdPercent",
                                   "--image-gc-high-threshold"),
                                  (self.low_threshold, "imageGCLowThresholdPercent",
                                   "--image-gc-low-threshold")):
            if not 0 <= value <= 100:
                raise ConfigError(f"invalid configuration: {name} ({flag}) {value} must be "
                                  "between 0 and 100, inclusive", field=name)
        if self.low_threshold >= self.high_threshold and self.enabled:
            raise ConfigError(
                f"invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) "
                f"{self.low_threshold} must be less than imageGCHighThresholdPercent "
                f"(--image-gc-high-threshold) {self.high_threshold}",
                field="imageGCLowThresholdPercent", related=("imageGCHighThresholdPercent",))
        if self.min_age < 0:
            raise ConfigError(f"invalid configuration: imageMinimumGCAge "
                              f"{go_duration(self.min_age)} must not be negative",
                              field="imageMinimumGCAge")
        if self.max_age < 0:
            raise ConfigError(f"invalid configuration: imageMaximumGCAge "
                              f"{go_duration(self.max_age)} must not be negative",
                              field="imageMaximumGCAge")
        if self.max_age > 0 and self.max_age <= self.min_age:
            raise ConfigError(f"invalid configuration: imageMaximumGCAge "
                              f"{go_duration(self.max_age)} must be greater than "
                              f"imageMinimumGCAge {go_duration(self.min_age)}",
                              field="imageMaximumGCAge", related=("imageMinimumGCAge",))


class GCImage(Struct, frozen=True):
    """One image the runtime lists: its ID, the names it goes by, its size, pinned."""

    id: str
    names: tuple[str, ...] = ()  # repo tags and digests
    size: int = 0
    pinned: bool = False

    def used_by(self, in_use: frozenset[str]) -> bool:
        """Whether a container names this image (by ID, tag or digest)."""
        return self.id in in_use or any(n in in_use for n in self.names)


class ImageRecord(Struct, frozen=True):
    """What the collector remembers of an image (upstream's imageRecord)."""

    image: GCImage
    first_detected: float
    last_used: float = 0.0  # 0: never seen in use
    in_use: bool = False  # used by a container at the last detection


class ImageFs(Struct, frozen=True):
    """The image filesystem's size and free space, in bytes."""

    capacity: int
    available: int


class ImageGCReason(enum.Enum):
    """Why an image went: upstream's kubelet_image_garbage_collected_total reasons."""

    AGE = "age"
    SPACE = "space"


class ImageRemoval(Struct, frozen=True):
    image_id: str
    names: tuple[str, ...]
    size: int
    reason: ImageGCReason


class ImageGCPlan(Struct, frozen=True):
    """What one image GC round removes, in order, and how much it had to free."""

    removals: tuple[ImageRemoval, ...] = ()
    usage_percent: int = 0
    bytes_to_free: int = 0  # 0: usage was under the high threshold
    error: str = ""  # the round could not be planned (no capacity)


Records = Mapping[str, ImageRecord]


def detect_images(records: Records, images: Iterable[GCImage], in_use: frozenset[str],
                  now: float) -> dict[str, ImageRecord]:
    """The records after one listing: new images detected now, used ones used now, sizes
    and pins as listed, images gone from the runtime forgotten."""
    out: dict[str, ImageRecord] = {}
    for image in images:
        old = records.get(image.id)
        used = image.used_by(in_use)
        first = old.first_detected if old is not None else now
        last = now if used else (old.last_used if old is not None else 0.0)
        out[image.id] = ImageRecord(image, first, last, used)
    return out


def eviction_order(records: Records) -> list[ImageRecord]:
    """Unused, unpinned images, least recently used first, then first detected first."""
    candidates = [r for r in records.values() if not r.in_use and not r.image.pinned]
    return sorted(candidates, key=lambda r: (r.last_used, r.first_detected, r.image.id))


def _removal(record: ImageRecord, reason: ImageGCReason) -> ImageRemoval:
    return ImageRemoval(record.image.id, record.image.names, record.image.size, reason)


def _free_space(candidates: list[ImageRecord], bytes_to_free: int, policy: ImageGCPolicy,
                now: float) -> list[ImageRemoval]:
    """Upstream's freeSpace: old-enough unused images until ``bytes_to_free`` is reached."""
    chosen: list[ImageRemoval] = []
    freed = 0
    for record in candidates:
        if record.last_used >= now:
            continue  # used at this very detection
        if now - record.first_detected < policy.min_age:
            continue  # just pulled, maybe for a container about to start
        chosen.append(_removal(record, ImageGCReason.SPACE))
        freed += record.image.size
        if freed >= bytes_to_free:
            break
    return chosen


def plan_image_gc(records: Records, fs: ImageFs | None, policy: ImageGCPolicy, now: float,
                  started: float) -> ImageGCPlan:
    """One periodic round (upstream's GarbageCollect), on records detected at ``now``;
    ``started``: when the collector began (images are not removed for age before
    ``max_age`` has passed since then)."""
    candidates = eviction_order(records)
    removals: list[ImageRemoval] = []
    if policy.max_age > 0 and now - started > policy.max_age:
        old = [r for r in candidates if now - r.last_used > policy.max_age]
        removals += [_removal(r, ImageGCReason.AGE) for r in old]
        candidates = [r for r in candidates if r not in old]
    if fs is None or fs.capacity <= 0:
        return ImageGCPlan(tuple(removals), error="invalid capacity 0 on image filesystem")
    available = min(fs.available, fs.capacity)
    usage = 100 - available * 100 // fs.capacity
    if usage < policy.high_threshold:
        return ImageGCPlan(tuple(removals), usage)
    to_free = fs.capacity * (100 - policy.low_threshold) // 100 - available
    removals += _free_space(candidates, to_free, policy, now)
    return ImageGCPlan(tuple(removals), usage, to_free)


def plan_delete_unused(records: Records, policy: ImageGCPolicy, now: float) -> ImageGCPlan:
    """A reclaim (upstream's DeleteUnusedImages): every unused image old enough goes."""
    removals = _free_space(eviction_order(records), 2**63 - 1, policy, now)
    return ImageGCPlan(tuple(removals))


def forget_removed(records: Records, removed: Iterable[str]) -> dict[str, ImageRecord]:
    """The records without images just removed (the next listing would drop them too)."""
    gone = set(removed)
    return {k: v for k, v in records.items() if k not in gone}


def free_disk_space_failed(plan: ImageGCPlan, freed: int) -> str:
    """Upstream's FreeDiskSpaceFailed message, or "" when enough was freed."""
    if plan.bytes_to_free <= 0 or freed >= plan.bytes_to_free:
        return ""
    return (f"Failed to garbage collect required amount of images. Attempted to free "
            f"{plan.bytes_to_free} bytes, but only found {freed} bytes eligible to free.")
