"""Image GC planning (runtime.kuberuntime.image_gc), the cases of upstream's
image_gc_manager_test.go in this project's terms: detection, eviction order, thresholds,
minimum and maximum age, pinned images, and the policy's validation."""

from __future__ import annotations

import pytest

from runtime.errors import ConfigError
from runtime.kuberuntime.image_gc import (
    GCImage,
    ImageFs,
    ImageGCPolicy,
    ImageGCReason,
    ImageRecord,
    ImageRemoval,
    detect_images,
    free_disk_space_failed,
    plan_delete_unused,
    plan_image_gc,
)

T0 = 1_000.0
NO_MIN_AGE = ImageGCPolicy(high_threshold=90, low_threshold=80, min_age=0.0)


def image(n: int, size: int, pinned: bool = False) -> GCImage:
    return GCImage(f"sha256:image-{n}", (f"image-{n}-name",), size, pinned)


def used(*ns: int) -> frozenset[str]:
    """What containers name their images by: the image's name (container.Image)."""
    return frozenset(f"image-{n}-name" for n in ns)


def detect(records: dict[str, ImageRecord], images: list[GCImage], in_use: frozenset[str],
           now: float) -> dict[str, ImageRecord]:
    return detect_images(records, images, in_use, now)


def ids(removals: tuple[ImageRemoval, ...]) -> list[str]:
    return [r.image_id for r in removals]


def test_initial_detection_records_first_detected_and_last_used() -> None:
    # An image used by a container is matched by ID or by name.
    in_use = frozenset({"sha256:image-1", "image-2-name"})
    records = detect({}, [image(0, 1024), image(1, 2048), image(2, 2048)], in_use, T0)
    assert len(records) == 3
    assert (records["sha256:image-0"].first_detected, records["sha256:image-0"].last_used) \
        == (T0, 0.0)
    assert records["sha256:image-1"].last_used == T0
    assert records["sha256:image-2"].last_used == T0


def test_detecting_a_new_image_keeps_the_old_records() -> None:
    records = detect({}, [image(0, 1024), image(1, 2048)], used(1), T0)
    records = detect(records, [image(0, 1024), image(1, 1024), image(2, 1024)], used(1), T0 + 1)
    assert records["sha256:image-0"].first_detected == T0
    assert records["sha256:image-1"].last_used == T0 + 1
    assert records["sha256:image-1"].image.size == 1024  # sizes as listed now
    assert records["sha256:image-2"].first_detected == T0 + 1
    assert records["sha256:image-2"].last_used == 0.0


def test_a_stopped_container_leaves_its_image_last_used_when_last_seen() -> None:
    records = detect({}, [image(0, 1024), image(1, 2048)], used(1), T0)
    records = detect(records, [image(0, 1024), image(1, 2048)], used(), T0 + 50)
    assert records["sha256:image-1"].last_used == T0
    assert not records["sha256:image-1"].in_use


def test_removed_images_are_forgotten() -> None:
    records = detect({}, [image(0, 1024), image(1, 2048)], used(1), T0)
    assert detect(records, [], used(), T0 + 1) == {}


def test_images_in_use_are_never_freed() -> None:
    records = detect({}, [image(0, 1024), image(1, 2048)], used(1), T0)
    plan = plan_delete_unused(records, NO_MIN_AGE, T0)
    assert ids(plan.removals) == ["sha256:image-0"]


def test_delete_unused_images_removes_every_unused_image() -> None:
    records = detect({}, [image(0, 1024), image(1, 2048), image(2, 2048)], used(2), T0)
    plan = plan_delete_unused(records, NO_MIN_AGE, T0)
    assert sorted(ids(plan.removals)) == ["sha256:image-0", "sha256:image-1"]
    assert sum(r.size for r in plan.removals) == 3072


def test_pinned_images_are_exempt() -> None:
    records = detect({}, [image(0, 1024, pinned=True), image(1, 2048)], used(), T0)
    assert ids(plan_delete_unused(records, NO_MIN_AGE, T0).removals) == ["sha256:image-1"]


def _over(capacity: int, available: int) -> ImageFs:
    return ImageFs(capacity, available)


def test_least_recently_used_goes_first() -> None:
    images = [image(0, 1024), image(1, 2048)]
    records = detect({}, images, used(0, 1), T0)
    records = detect(records, images, used(1), T0 + 10)  # 1 used more recently than 0
    records = detect(records, images, used(), T0 + 20)
    # 95 % used, to 80 %: 150 bytes to free; the first image frees it.
    plan = plan_image_gc(records, _over(1000, 50), NO_MIN_AGE, T0 + 20, T0)
    assert ids(plan.removals) == ["sha256:image-0"]
    assert plan.bytes_to_free == 150 and plan.usage_percent == 95


def test_ties_on_last_used_are_broken_by_first_detected() -> None:
    records = detect({}, [image(0, 1024)], used(0), T0)
    records = detect(records, [image(0, 1024), image(1, 2048)], used(0), T0 + 10)
    records = detect(records, [image(0, 1024), image(1, 2048)], used(), T0 + 20)
    # image 1 was never used: it goes before image 0, which was.
    plan = plan_image_gc(records, _over(1000, 50), NO_MIN_AGE, T0 + 20, T0)
    assert ids(plan.removals) == ["sha256:image-1"]
    tie = {k: ImageRecord(r.image, r.first_detected, 5.0) for k, r in records.items()}
    plan = plan_image_gc(tie, _over(1000, 50), NO_MIN_AGE, T0 + 20, T0)
    assert ids(plan.removals) == ["sha256:image-0"]  # detected first


def test_below_the_high_threshold_nothing_goes() -> None:
    records = detect({}, [image(0, 450)], used(), T0)
    plan = plan_image_gc(records, _over(1000, 600), NO_MIN_AGE, T0, T0)  # 40 %
    assert plan.removals == () and plan.bytes_to_free == 0
    assert free_disk_space_failed(plan, 0) == ""


def test_over_the_high_threshold_enough_is_freed() -> None:
    records = detect({}, [image(0, 450)], used(), T0)
    plan = plan_image_gc(records, _over(1000, 50), NO_MIN_AGE, T0, T0)
    assert ids(plan.removals) == ["sha256:image-0"]
    assert free_disk_space_failed(plan, 450) == ""


def test_not_enough_eligible_is_free_disk_space_failed() -> None:
    records = detect({}, [image(0, 50)], used(), T0)
    plan = plan_image_gc(records, _over(1000, 50), NO_MIN_AGE, T0, T0)
    assert free_disk_space_failed(plan, 50) == (
        "Failed to garbage collect required amount of images. Attempted to free 150 bytes, "
        "but only found 50 bytes eligible to free.")


def test_no_capacity_is_an_error() -> None:
    plan = plan_image_gc({}, None, NO_MIN_AGE, T0, T0)
    assert plan.error == "invalid capacity 0 on image filesystem"
    assert plan_image_gc({}, ImageFs(0, 0), NO_MIN_AGE, T0, T0).error


def test_an_image_not_old_enough_stays() -> None:
    policy = ImageGCPolicy(high_threshold=90, low_threshold=80, min_age=60.0)
    records = detect({}, [image(0, 1024), image(1, 2048)], used(1), T0)
    assert plan_image_gc(records, _over(1000, 50), policy, T0, T0).removals == ()
    later = detect(records, [image(0, 1024), image(1, 2048)], used(1), T0 + 60)
    assert ids(plan_image_gc(later, _over(1000, 50), policy, T0 + 60, T0).removals) == [
        "sha256:image-0"]


def test_images_unused_for_longer_than_max_age_go_whatever_the_usage() -> None:
    policy = ImageGCPolicy(high_threshold=90, low_threshold=80, min_age=0.0, max_age=3600.0)
    records = detect({}, [image(0, 1024), image(1, 2048)], used(0, 1), T0)
    records = detect(records, [image(0, 1024), image(1, 2048)], used(1), T0 + 100)
    roomy = _over(1000, 900)
    # Not yet max-age since the collector started: nothing goes.
    assert plan_image_gc(records, roomy, policy, T0 + 3600, T0).removals == ()
    now = T0 + 3601
    records = detect(records, [image(0, 1024), image(1, 2048)], used(1), now)
    plan = plan_image_gc(records, roomy, policy, now, T0)
    assert [(r.image_id, r.reason) for r in plan.removals] == [
        ("sha256:image-0", ImageGCReason.AGE)]


def test_max_age_zero_never_removes_for_age() -> None:
    records = detect({}, [image(0, 1024)], used(), T0)
    assert plan_image_gc(records, _over(1000, 900), NO_MIN_AGE, T0 + 10**6, T0).removals == ()


@pytest.mark.parametrize(("policy", "message"), [
    (ImageGCPolicy(high_threshold=101), "imageGCHighThresholdPercent (--image-gc-high-threshold)"
                                        " 101 must be between 0 and 100, inclusive"),
    (ImageGCPolicy(low_threshold=-1), "imageGCLowThresholdPercent (--image-gc-low-threshold) -1 "
                                      "must be between 0 and 100, inclusive"),
    (ImageGCPolicy(high_threshold=80, low_threshold=80), "imageGCLowThresholdPercent "
     "(--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent "
     "(--image-gc-high-threshold) 80"),
    (ImageGCPolicy(min_age=120.0, max_age=60.0), "imageMaximumGCAge 1m0s must be greater than "
                                                 "imageMinimumGCAge 2m0s"),
])
def test_policy_validation(policy: ImageGCPolicy, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        policy.validate()


def test_a_high_threshold_of_100_turns_image_gc_off() -> None:
    policy = ImageGCPolicy(high_threshold=100, low_threshold=100)
    policy.validate()
    assert not policy.enabled and ImageGCPolicy().enabled
