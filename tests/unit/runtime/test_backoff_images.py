"""Backoff (upstream flowcontrol.Backoff) and ImageManager (upstream imageManager: pull
policies, pull back-off) with FakeClock and FakeRuntime."""

from __future__ import annotations

import pytest

from runtime.clock import FakeClock
from runtime.errors import CRIError, SyncError
from runtime.kuberuntime.backoff import Backoff
from runtime.kuberuntime.images import ImageManager, PullKey, is_valid_image_name
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.pod.validation import default_pull_policy
from runtime.testing.fake_images import image_id_for
from runtime.testing.fake_runtime import FakeRuntime

# --- Backoff --------------------------------------------------------------------------------


def make_backoff() -> tuple[FakeClock, Backoff[str]]:
    clock = FakeClock()
    return clock, Backoff[str](clock, initial=10.0, maximum=300.0)


def test_every_read_goes_through_observe_which_may_answer_otherwise() -> None:
    """The tables are shared by every pod worker: a kubelet records each read as an input
    (and a replay answers with the recorded value), so the answer is observe's."""
    clock = FakeClock()
    seen: list[tuple[str, float]] = []

    def observe(name: str, value: float) -> float:
        seen.append((name, value))
        return 42.0

    b = Backoff[str](clock, initial=10.0, maximum=300.0, name="crash", observe=observe)
    b.next("k", clock.now())
    clock.step(4)
    assert b.in_backoff_since("k", clock.now() - 4) == 42.0
    assert b.in_backoff_since_update("k") == 42.0
    assert b.get("k") == 42.0
    assert seen == [("crash.remaining", 6.0), ("crash.remaining", 6.0), ("crash.get", 10.0)]


def test_doubling_to_cap() -> None:
    clock, b = make_backoff()
    seen = []
    for _ in range(8):
        seen.append(b.next("k", clock.now()))
        clock.step(1)
    assert seen == [10, 20, 40, 80, 160, 300, 300, 300]
    assert b.get("k") == 300
    assert b.get("other") == 0


def test_keys_are_independent() -> None:
    clock, b = make_backoff()
    b.next("a", clock.now())
    b.next("a", clock.now())
    assert (b.get("a"), b.get("b")) == (20, 0)
    assert b.next("b", clock.now()) == 10


@pytest.mark.parametrize(
    ("failures", "elapsed", "remaining"),
    [(0, 0.0, 0.0), (1, 0.0, 10.0), (1, 9.0, 1.0), (1, 10.0, 0.0), (2, 5.0, 15.0),
     (3, 39.0, 1.0), (3, 40.0, 0.0)],
)
def test_in_backoff_since(failures: int, elapsed: float, remaining: float) -> None:
    clock, b = make_backoff()
    for _ in range(failures):
        b.next("k", clock.now())
    exited = clock.now()
    clock.step(elapsed)
    assert b.in_backoff_since("k", exited) == remaining


@pytest.mark.parametrize(
    ("elapsed", "remaining"), [(0.0, 10.0), (4.0, 6.0), (10.0, 0.0), (100.0, 0.0)],
)
def test_in_backoff_since_update(elapsed: float, remaining: float) -> None:
    clock, b = make_backoff()
    b.next("k", clock.now())
    clock.step(elapsed)
    assert b.in_backoff_since_update("k") == remaining
    assert b.in_backoff_since_update("unknown") == 0.0


def test_reset_after_twice_max_without_events() -> None:
    clock, b = make_backoff()
    for _ in range(4):
        b.next("k", clock.now())
    assert b.get("k") == 80
    clock.step(600)  # exactly 2 * max: not yet expired
    assert b.next("k", clock.now()) == 160
    clock.step(601)
    assert b.in_backoff_since("k", clock.now()) == 0.0
    assert b.next("k", clock.now()) == 10


def test_in_backoff_since_ignores_expired_entry() -> None:
    clock, b = make_backoff()
    b.next("k", clock.now())
    assert b.in_backoff_since("k", clock.now() + 601) == 0.0


def test_reset_forgets_key() -> None:
    clock, b = make_backoff()
    b.next("k", clock.now())
    b.next("k", clock.now())
    b.reset("k")
    assert b.get("k") == 0
    assert b.next("k", clock.now()) == 10


def test_gc() -> None:
    clock, b = make_backoff()
    b.next("old", clock.now())
    clock.step(500)
    b.next("new", clock.now())
    clock.step(101)  # old: 601 s without events, new: 101 s
    b.gc()
    assert (b.get("old"), b.get("new")) == (0, 10)


def test_forget_drops_only_the_keys_it_picks() -> None:
    clock, b = make_backoff()
    for key in ("pod-a/c1", "pod-a/c2", "pod-b/c1"):
        b.next(key, clock.now())
    assert len(b) == 3
    b.forget(lambda key: key.startswith("pod-a/"))
    assert len(b) == 1 and b.get("pod-b/c1") == 10


# --- image names and default pull policy ----------------------------------------------------

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("image", "valid"),
    [
        ("busybox", True),
        ("busybox:1.35", True),
        ("library/busybox:latest", True),
        ("docker.io/library/busybox:1.35", True),
        ("localhost:5000/team/app:v1.2-rc_3", True),
        ("registry.example.com/a/b/c", True),
        (f"busybox@{DIGEST}", True),
        (f"busybox:1.35@{DIGEST}", True),
        ("my-app__x.y", True),
        ("", False),
        ("BusyBox", False),
        ("busybox:", False),
        ("busybox:-bad", False),
        ("busybox@sha256:short", False),
        ("/busybox", False),
        ("busybox/", False),
        ("bad image", False),
        ("busybox:" + "t" * 129, False),
        ("a//b", False),
    ],
)
def test_is_valid_image_name(image: str, valid: bool) -> None:
    assert is_valid_image_name(image) is valid


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("localhost:5000/busybox", "Always"),
        ("busybox:1.35", "IfNotPresent"),
        ("localhost:5000/busybox:1.35", "IfNotPresent"),
        (f"busybox@{DIGEST}", "IfNotPresent"),
    ],
)
def test_default_pull_policy(image: str, policy: str) -> None:
    assert default_pull_policy(image) == policy


# --- ImageManager ---------------------------------------------------------------------------

POD = Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"), spec=PodSpec())


def manager(present: tuple[str, ...] = (), pullable: tuple[str, ...] = ()
            ) -> tuple[FakeClock, FakeRuntime, ImageManager]:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=present, pullable=pullable)
    for image in present:
        fake.add_image(image)
    for image in pullable:
        fake.make_pullable(image)
    return clock, fake, ImageManager(fake, clock)


def container(image: str, policy: str = "") -> Container:
    return Container(name="app", image=image, image_pull_policy=policy)


PULL_CASES = [
    # image, policy, present, pulls
    ("busybox:1.35", "Always", True, 1),
    ("busybox:1.35", "IfNotPresent", True, 0),
    ("busybox:1.35", "IfNotPresent", False, 1),
    ("busybox:1.35", "Never", True, 0),
    ("busybox:1.35", "", True, 0),
    ("busybox:1.35", "", False, 1),
    ("busybox:latest", "", True, 1),
    ("busybox", "", True, 1),
    (f"busybox@{DIGEST}", "", False, 1),
]


@pytest.mark.parametrize(("image", "policy", "present", "pulls"), PULL_CASES)
def test_pull_policy(image: str, policy: str, present: bool, pulls: int) -> None:
    _, fake, images = manager(present=(image,) if present else (), pullable=(image,))
    ref = images.ensure_image(POD, container(image, policy), None)
    assert fake.called("pull_image") == pulls
    assert ref == image_id_for(image)
    assert fake.has_image(image)


def test_never_and_absent() -> None:
    _, fake, images = manager(pullable=("busybox:1.35",))
    with pytest.raises(SyncError) as err:
        images.ensure_image(POD, container("busybox:1.35", "Never"), None)
    assert err.value.reason == "ErrImageNeverPull"
    assert fake.called("pull_image") == 0


@pytest.mark.parametrize("image", ["", "BusyBox", "bad image", "busybox:"])
def test_invalid_image_name(image: str) -> None:
    _, fake, images = manager()
    with pytest.raises(SyncError) as err:
        images.ensure_image(POD, container(image), None)
    assert err.value.reason == "InvalidImageName"
    assert fake.calls == []


def pull_reason(images: ImageManager, image: str = "busybox:1.35", pod: Pod = POD) -> str:
    try:
        images.ensure_image(pod, container(image), None)
    except SyncError as err:
        return err.reason
    return ""


def test_pull_failure_then_back_off() -> None:
    clock, fake, images = manager()
    assert pull_reason(images) == "ErrImagePull"
    assert fake.called("pull_image") == 1
    assert pull_reason(images) == "ImagePullBackOff"
    assert fake.called("pull_image") == 1  # no pull while backing off
    clock.step(9.9)
    assert pull_reason(images) == "ImagePullBackOff"
    clock.step(0.2)
    assert pull_reason(images) == "ErrImagePull"  # 10 s passed: pulls again, fails again
    assert fake.called("pull_image") == 2
    clock.step(10.1)
    assert pull_reason(images) == "ImagePullBackOff"  # now 20 s
    with pytest.raises(SyncError) as err:  # the delay travels as a number, not only text
        images.ensure_image(POD, container("busybox:1.35"), None)
    assert err.value.backoff == 20.0
    clock.step(10)
    fake.make_pullable("busybox:1.35")
    assert pull_reason(images) == ""  # succeeds and resets
    assert fake.called("pull_image") == 3
    assert images.backoff.get(PullKey(POD.uid, "busybox:1.35")) == 0


def test_back_off_is_per_pod_and_image() -> None:
    _, fake, images = manager(pullable=("busybox:1.36",))
    other_pod = Pod(metadata=ObjectMeta(name="b", namespace="default", uid="uid-2"))
    assert pull_reason(images) == "ErrImagePull"
    assert pull_reason(images, pod=other_pod) == "ErrImagePull"
    assert pull_reason(images, "busybox:1.36") == ""
    assert fake.called("pull_image") == 3


def test_a_successful_pull_drops_back_offs_idle_for_twice_the_maximum() -> None:
    clock, _, images = manager(pullable=("busybox:1.36",))
    other_pod = Pod(metadata=ObjectMeta(name="b", namespace="default", uid="uid-2"))
    assert pull_reason(images) == "ErrImagePull"
    clock.step(500)
    assert pull_reason(images, pod=other_pod) == "ErrImagePull"
    clock.step(101)  # the first entry idle for 601 s, the second for 101 s
    assert pull_reason(images, "busybox:1.36") == ""
    assert len(images.backoff) == 1
    assert images.backoff.get(PullKey("uid-2", "busybox:1.35")) == 10


def test_pull_error_message_carries_cri_detail() -> None:
    _, fake, images = manager()
    fake.fail("pull_image", CRIError("PullImage", "registry unreachable"))
    with pytest.raises(SyncError) as err:
        images.ensure_image(POD, container("busybox:1.35"), None)
    assert err.value.reason == "ErrImagePull"
    assert "registry unreachable" in err.value.message
