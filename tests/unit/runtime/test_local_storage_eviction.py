"""runtime.eviction.local_storage: the three local storage limits of upstream's
localStorageEviction (emptyDir sizeLimit, the pod's summed ephemeral-storage limit, a
container's own), each under and over its limit, in several units, with several
containers, and with a memory emptyDir that counts against none of them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from runtime.eviction.api import IMMEDIATE_GRACE_PERIOD
from runtime.eviction.local_storage import (
    SIGNAL_CONTAINER,
    SIGNAL_EMPTY_DIR,
    SIGNAL_POD,
    container_ephemeral_storage_limit,
    empty_dir_limit,
    local_storage_eviction,
    pod_ephemeral_storage_limit,
    quantity_text,
)
from runtime.eviction.rank import EvictionOrder
from runtime.eviction.signals import ContainerUsage, NodeSignals, PodUsage, VolumeUsage
from runtime.pod.model import (
    ConfigMapVolumeSource,
    Container,
    EmptyDirVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    ResourceRequirements,
    SecretVolumeSource,
    Volume,
)

Ki = 1 << 10
Mi = 1 << 20
Gi = 1 << 30


def container(name: str, limit: str | int | None = None) -> Container:
    resources = ResourceRequirements(limits={"ephemeral-storage": limit}) \
        if limit is not None else None
    return Container(name=name, image="busybox", resources=resources)


def make_pod(*containers: Container, volumes: tuple[Volume, ...] = (),
             init: tuple[Container, ...] = (), uid: str = "u1", priority: int = 0,
             overhead: dict[str, str | int | float] | None = None) -> Pod:
    return Pod(metadata=ObjectMeta(name=uid, namespace="default", uid=uid,
                                   annotations={"kubernetes.io/config.source": "api"}),
               spec=PodSpec(containers=containers or (container("c"),), init_containers=init,
                            volumes=volumes, priority=priority, overhead=overhead or {}))


def empty_dir(name: str, size: str | int | None = None, medium: str = "") -> Volume:
    return Volume(name=name, empty_dir=EmptyDirVolumeSource(medium=medium, size_limit=size))


def usage(containers: tuple[ContainerUsage, ...] = (), volumes: dict[str, int] | None = None,
          total: int | None = None, uid: str = "u1") -> PodUsage:
    vols = tuple(VolumeUsage(n, used, 1) for n, used in (volumes or {}).items())
    if total is None:  # the summary's sum: layers, logs and every volume it walked
        total = sum((c.rootfs or 0) + (c.logs or 0) for c in containers) + sum(
            v.used or 0 for v in vols)
    return PodUsage(uid, containers=containers, volumes=vols, ephemeral_storage=total)


def cu(name: str, rootfs: int = 0, logs: int = 0) -> ContainerUsage:
    return ContainerUsage(name, None, rootfs, 1, logs, 1)


# --- quantities as Go prints them ----------------------------------------------------------


@pytest.mark.parametrize(("value", "written", "text"), [
    (10 * Mi, "10Mi", "10Mi"),
    (Gi, "1024Mi", "1Gi"),
    (1536 * Mi, "1.5Gi", "1536Mi"),
    (10_000_000, "10M", "10M"),
    (10 * Mi, str(10 * Mi), "10485760"),  # no suffix: DecimalSI
    (10 * Mi, 10 * Mi, "10485760"),
    (1000, "1000", "1k"),
    (1_000_000, "1e6", "1e6"),
    (20 * Mi, "10Mi", "20Mi"),  # a sum keeps its first addend's format
])
def test_limits_print_as_gos_quantity_string(value: int, written: str | int, text: str) -> None:
    assert quantity_text(Decimal(value), written) == text


# --- 1. emptyDir sizeLimit -----------------------------------------------------------------


@pytest.mark.parametrize(("size", "used", "message"), [
    ("10Mi", 10 * Mi, None),  # at the limit: not over it
    ("10Mi", 10 * Mi + 1, 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". '),
    ("10M", 10_000_001, 'Usage of EmptyDir volume "scratch" exceeds the limit "10M". '),
    ("1Gi", 20 * Mi, None),
    ("1024Mi", Gi + 4096, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Gi". '),
    ("0", 20 * Mi, None),  # a zero sizeLimit is no limit (size.Sign() == 1)
    (None, 20 * Mi, None),  # no sizeLimit
])
def test_an_empty_dir_over_its_size_limit(size: str | None, used: int, message: str | None
                                          ) -> None:
    pod = make_pod(volumes=(empty_dir("scratch", size),))
    assert empty_dir_limit(pod, usage(volumes={"scratch": used})) == message


def test_the_first_empty_dir_over_its_limit_in_the_specs_order_names_the_message() -> None:
    pod = make_pod(volumes=(empty_dir("a", "1Mi"), empty_dir("b", "2Mi"), empty_dir("c", "4Mi")))
    assert empty_dir_limit(pod, usage(volumes={"a": Mi, "b": 3 * Mi, "c": 5 * Mi})) \
        == 'Usage of EmptyDir volume "b" exceeds the limit "2Mi". '
    # A volume the summary has no usage for is not over anything.
    assert empty_dir_limit(pod, usage(volumes={"a": Mi})) is None


def test_a_memory_empty_dir_is_not_held_to_its_size_limit_on_disk() -> None:
    pod = make_pod(volumes=(empty_dir("shm", "10Mi", medium="Memory"),))
    assert empty_dir_limit(pod, usage(volumes={"shm": 20 * Mi})) is None


# --- 2. the pod's summed limit ----------------------------------------------------------


@pytest.mark.parametrize(("limits", "layers", "message"), [
    # one container, under and over (its container limit is not over either: logs only)
    (("30Mi",), (20 * Mi,), None),
    # two containers: the pod's limit is the sum, in the first one's format
    (("10Mi", "20Mi"), (12 * Mi, 17 * Mi), None),
    (("10Mi", "20Mi"), (9 * Mi, 22 * Mi),
     "Pod ephemeral local storage usage exceeds the total limit of containers 30Mi. "),
    (("1G", "500M"), (Gi, 500 * Mi),
     "Pod ephemeral local storage usage exceeds the total limit of containers 1500M. "),
    # a container without a limit adds nothing to it, but its usage counts
    (("10Mi", None), (Mi, 10 * Mi),
     "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. "),
    # no container sets one: no pod limit
    ((None, None), (Gi, Gi), None),
])
def test_the_pods_usage_over_its_containers_summed_limits(
        limits: tuple[str | None, ...], layers: tuple[int, ...], message: str | None) -> None:
    names = [f"c{i}" for i in range(len(limits))]
    pod = make_pod(*(container(n, lim) for n, lim in zip(names, limits, strict=True)))
    # the usage is in the layers' logs ... and in a layer that has no limit of its own
    stats = tuple(cu(n, rootfs=used) for n, used in zip(names, layers, strict=True))
    found = pod_ephemeral_storage_limit(pod, usage(stats))
    assert found == message


def test_the_pods_usage_counts_disk_volumes_but_not_memory_or_secret_ones() -> None:
    pod = make_pod(container("c", "10Mi"), volumes=(
        empty_dir("disk"), empty_dir("shm", medium="Memory"),
        Volume(name="cm", config_map=ConfigMapVolumeSource(name="cm")),
        Volume(name="token", secret=SecretVolumeSource(secret_name="s"))))
    big = {"shm": 50 * Mi, "token": 50 * Mi}
    assert pod_ephemeral_storage_limit(pod, usage((cu("c", Mi),), {**big, "disk": 8 * Mi})) \
        is None
    over = "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. "
    assert pod_ephemeral_storage_limit(pod, usage((cu("c", Mi),), {**big, "disk": 10 * Mi})) \
        == over
    assert pod_ephemeral_storage_limit(pod, usage((cu("c", Mi),), {**big, "cm": 10 * Mi})) \
        == over


def test_an_init_container_larger_than_the_sum_and_the_overhead_set_the_pods_limit() -> None:
    pod = make_pod(container("a", "10Mi"), container("b", "10Mi"),
                   init=(container("setup", "50Mi"),))
    assert pod_ephemeral_storage_limit(pod, usage((cu("a", 45 * Mi),))) is None
    assert pod_ephemeral_storage_limit(pod, usage((cu("a", 51 * Mi),))) \
        == "Pod ephemeral local storage usage exceeds the total limit of containers 50Mi. "
    with_overhead = make_pod(container("a", "10Mi"), overhead={"ephemeral-storage": "6Mi"})
    assert pod_ephemeral_storage_limit(with_overhead, usage((cu("a", 15 * Mi),))) is None
    assert pod_ephemeral_storage_limit(with_overhead, usage((cu("a", 17 * Mi),))) \
        == "Pod ephemeral local storage usage exceeds the total limit of containers 16Mi. "


# --- 3. a container's own limit ----------------------------------------------------------


@pytest.mark.parametrize(("limit", "rootfs", "logs", "dedicated", "message"), [
    ("10Mi", 6 * Mi, 4 * Mi, False, None),
    ("10Mi", 6 * Mi, 4 * Mi + 1, False,
     'Container c exceeded its local ephemeral storage limit "10Mi". '),
    # with images on a filesystem of their own, only the logs count
    ("10Mi", 20 * Mi, 4 * Mi, True, None),
    ("10Mi", 0, 11 * Mi, True, 'Container c exceeded its local ephemeral storage limit "10Mi". '),
    ("5M", 5_000_001, 0, False, 'Container c exceeded its local ephemeral storage limit "5M". '),
    ("0", 20 * Mi, 0, False, None),  # a zero limit is none (Value() != 0)
])
def test_a_container_over_its_own_limit(limit: str, rootfs: int, logs: int, dedicated: bool,
                                        message: str | None) -> None:
    pod = make_pod(container("c", limit))
    assert container_ephemeral_storage_limit(
        pod, usage((cu("c", rootfs, logs),)), dedicated) == message


def test_of_several_containers_the_first_over_its_limit_is_named() -> None:
    pod = make_pod(container("a", "10Mi"), container("b", "1Mi"), container("c"))
    stats = (cu("a", 5 * Mi), cu("b", 2 * Mi), cu("c", Gi))
    assert container_ephemeral_storage_limit(pod, usage(stats), False) \
        == 'Container b exceeded its local ephemeral storage limit "1Mi". '
    assert container_ephemeral_storage_limit(pod, usage((cu("a", 11 * Mi), *stats[1:])),
                                             False) \
        == 'Container a exceeded its local ephemeral storage limit "10Mi". '


# --- the pass -----------------------------------------------------------------------------


def test_every_pod_over_a_limit_is_evicted_with_its_first_failed_check() -> None:
    both = make_pod(container("c", "5Mi"), volumes=(empty_dir("scratch", "10Mi"),), uid="both")
    own = make_pod(container("c", "5Mi"), container("d", "100Mi"), uid="own")
    fine = make_pod(container("c", "5Mi"), volumes=(empty_dir("shm", "1Mi", "Memory"),),
                    uid="fine")
    critical = make_pod(container("c", "1Mi"), uid="critical", priority=2_000_000_000)
    unseen = make_pod(container("c", "1Mi"), uid="unseen")
    signals = NodeSignals(1.0, (), (
        usage((cu("c", 6 * Mi),), {"scratch": 20 * Mi}, uid="both"),
        usage((cu("c", 6 * Mi), cu("d", Mi)), uid="own"),
        usage((cu("c", Mi),), {"shm": 20 * Mi}, uid="fine"),
        usage((cu("c", 2 * Mi),), uid="critical")))
    orders = local_storage_eviction((both, own, fine, critical, unseen), signals)
    assert orders == (
        EvictionOrder("both", SIGNAL_EMPTY_DIR, IMMEDIATE_GRACE_PERIOD,
                      'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ',
                      disruption=False),
        EvictionOrder("own", SIGNAL_CONTAINER, IMMEDIATE_GRACE_PERIOD,
                      'Container c exceeded its local ephemeral storage limit "5Mi". ',
                      disruption=False))


def test_the_pods_limit_is_checked_before_its_containers() -> None:
    pod = make_pod(container("a", "10Mi"), container("b", "10Mi"))
    signals = NodeSignals(1.0, (), (usage((cu("a", 11 * Mi), cu("b", 10 * Mi))),))
    (order,) = local_storage_eviction((pod,), signals)
    assert (order.signal, order.message) == (
        SIGNAL_POD, "Pod ephemeral local storage usage exceeds the total limit of containers "
                    "20Mi. ")
