"""runtime.eviction: flags, observations, evaluation, ranking, messages and admission, with
cases ported from upstream's helpers_test.go and eviction_manager_test.go."""

from __future__ import annotations

import msgspec
import pytest

from runtime.errors import ConfigError
from runtime.eviction.admit import admit_under_pressure, tolerates
from runtime.eviction.api import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    DISK_PRESSURE,
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    MEMORY_PRESSURE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    PID_PRESSURE,
    EvictionConfig,
    Quantity,
    Threshold,
    ThresholdValue,
    format_quantity,
)
from runtime.eviction.evaluate import EvictionState, evaluate, thresholds_met
from runtime.eviction.parse import parse_map, parse_threshold_config
from runtime.eviction.rank import choose, eviction_message, is_critical, rank
from runtime.eviction.signals import (
    ContainerUsage,
    NodeSignals,
    Observation,
    PodUsage,
    VolumeUsage,
    observe,
)
from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    ResourceRequirements,
    Toleration,
    Volume,
)
from runtime.stats import summary as s

Mi = 1 << 20
Gi = 1 << 30


def hard(signal: str, value: str) -> Threshold:
    config = parse_threshold_config({signal: value})
    return config.thresholds[0]


# --- ParseThresholdConfig --------------------------------------------------------------------


def test_the_flag_maps_parse_as_upstream_writes_them() -> None:
    assert parse_map("memory.available<100Mi, nodefs.available<10%", "<", "--eviction-hard") \
        == {"memory.available": "100Mi", "nodefs.available": "10%"}
    with pytest.raises(ConfigError, match=r'--eviction-hard "memory.available=1": malformed '
                                          r'pair "memory.available=1", expect string<string'):
        parse_map("memory.available=1", "<", "--eviction-hard")


def test_hard_soft_grace_and_minimum_reclaim() -> None:
    config = parse_threshold_config(
        {"memory.available": "150Mi"}, {"memory.available": "300Mi"},
        {"memory.available": 30.0}, {"memory.available": "0", "nodefs.available": "2Gi"},
        pressure_transition_period=60.0, max_pod_grace_period=20)
    mem_hard, mem_soft = config.thresholds
    assert mem_hard == Threshold(MEMORY_AVAILABLE, ThresholdValue(Quantity(150 * Mi)), 0.0,
                                 ThresholdValue(Quantity(0, False)))
    assert mem_soft.grace_period == 30.0 and not mem_soft.hard and mem_hard.hard
    assert str(mem_soft.value) == "300Mi"
    assert (config.pressure_transition_period, config.max_pod_grace_period) == (60.0, 20)


def test_percentages_are_float32_fractions_and_0_and_100_percent_are_ignored() -> None:
    config = parse_threshold_config({"nodefs.available": "10%", "imagefs.available": "0%",
                                     "nodefs.inodesFree": "100%"})
    (only,) = config.thresholds
    assert only.signal == NODEFS_AVAILABLE and str(only.value) == "10%"
    assert only.value.percentage == pytest.approx(0.1, rel=1e-7)
    assert only.value.amount(1000 * Gi).value == int(1000 * Gi * only.value.percentage)


@pytest.mark.parametrize(("hard_map", "soft", "graces", "reclaim", "message"), [
    ({"mem.available": "150Mi"}, {}, {}, {}, "unsupported eviction signal mem.available"),
    ({"memory.available": "-150Mi"}, {}, {}, {},
     "eviction threshold memory.available must be positive: -150Mi"),
    ({"memory.available": "0"}, {}, {}, {},
     "eviction threshold memory.available must be positive: 0"),
    ({"memory.available": "-15%"}, {}, {}, {},
     "eviction percentage threshold memory.available must be >= 0%: -15%"),
    ({"memory.available": "115%"}, {}, {}, {},
     "eviction percentage threshold memory.available must be <= 100%: 115%"),
    ({}, {"memory.available": "150Mi"}, {}, {},
     "grace period must be specified for the soft eviction threshold memory.available"),
    ({}, {"memory.available": "150Mi"}, {"memory.available": -30.0}, {},
     "invalid eviction grace period specified: -30s, must be a positive value"),
    ({"memory.available": "150Mi"}, {}, {}, {"memory.available": "-300Mi"},
     "negative eviction minimum reclaim specified for memory.available"),
    ({"memory.available": "150Mi"}, {}, {}, {"memory.available": "-10%"},
     "eviction percentage minimum reclaim memory.available must be positive: -10%"),
    ({"memory.available": "150Mi"}, {}, {}, {"memory.available": "0%"},
     "eviction percentage minimum reclaim memory.available must be positive: 0%"),
    ({"memory.available": "many"}, {}, {}, {}, "quantities must match"),
])
def test_invalid_configurations_fail_with_upstreams_messages(
        hard_map: dict[str, str], soft: dict[str, str], graces: dict[str, float],
        reclaim: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("%", "%").replace(".", r"\.")):
        parse_threshold_config(hard_map, soft, graces, reclaim)


@pytest.mark.parametrize(("value", "binary", "text"), [
    (100 * Mi, True, "100Mi"), (50 * Mi, True, "50Mi"), (1536, True, "1536"),
    (500, True, "500"), (0, True, "0"), (Gi, True, "1Gi"), (5000, False, "5k"),
    (16354909, False, "16354909"), (3 * 10**6, False, "3M"), (123456789, True, "123456789"),
])
def test_quantities_print_as_go_prints_them(value: int, binary: bool, text: str) -> None:
    assert format_quantity(value, binary) == text


# --- observations ----------------------------------------------------------------------------


def summary() -> s.Summary:
    t = "2026-01-01T00:00:00Z"
    node = s.NodeStats(
        "node", t, memory=s.MemoryStats(t, available_bytes=3 * Gi, working_set_bytes=1 * Gi),
        system_containers=(s.ContainerStats(s.SYSTEM_CONTAINER_PODS, t, memory=s.MemoryStats(
            t, available_bytes=2 * Gi, working_set_bytes=Gi // 2)),),
        fs=s.FsStats(t, available_bytes=20 * Gi, capacity_bytes=100 * Gi, inodes_free=900,
                     inodes=1000),
        runtime=s.RuntimeStats(image_fs=s.FsStats(t, available_bytes=20 * Gi,
                                                  capacity_bytes=100 * Gi, inodes_free=900,
                                                  inodes=1000)),
        rlimit=s.RlimitStats(t, maxpid=4096, curproc=96))
    pod = s.PodStats(s.PodReference("p", "default", "u1"), t, (
        s.ContainerStats("c", t, memory=s.MemoryStats(t, working_set_bytes=64 * Mi),
                         rootfs=s.FsStats(t, used_bytes=10, inodes_used=1),
                         logs=s.FsStats(t, used_bytes=5, inodes_used=2)),),
        memory=s.MemoryStats(t, working_set_bytes=70 * Mi),
        volume=(s.VolumeStats(t, used_bytes=300, inodes_used=3, name="scratch"),),
        process_stats=s.ProcessStats(4))
    return s.Summary(node, (pod,))


def test_observations_are_made_from_the_summary() -> None:
    signals = observe(summary(), 100.0)
    assert signals.get(MEMORY_AVAILABLE) == Observation(MEMORY_AVAILABLE, 3 * Gi, 4 * Gi)
    assert signals.get(ALLOCATABLE_MEMORY_AVAILABLE) == Observation(
        ALLOCATABLE_MEMORY_AVAILABLE, 2 * Gi, 2 * Gi + Gi // 2)
    assert signals.get(NODEFS_AVAILABLE) == Observation(NODEFS_AVAILABLE, 20 * Gi, 100 * Gi)
    assert signals.get(NODEFS_INODES_FREE) == Observation(NODEFS_INODES_FREE, 900, 1000)
    assert signals.get(IMAGEFS_AVAILABLE) is not None
    assert signals.get(PID_AVAILABLE) == Observation(PID_AVAILABLE, 4000, 4096)
    assert not signals.dedicated_image_fs  # the same filesystem
    assert signals.pod("u1") == PodUsage("u1", 70 * Mi, 4, (ContainerUsage(
        "c", 64 * Mi, 10, 1, 5, 2),), (VolumeUsage("scratch", 300, 3),))


# --- evaluation ------------------------------------------------------------------------------


def node(at: float, memory: int | None = None, nodefs: int | None = None,
         pods: tuple[PodUsage, ...] = ()) -> NodeSignals:
    obs: list[Observation] = []
    if memory is not None:
        obs.append(Observation(MEMORY_AVAILABLE, memory, 2 * Gi))
    if nodefs is not None:
        obs.append(Observation(NODEFS_AVAILABLE, nodefs, 100 * Gi))
    return NodeSignals(at, tuple(obs), pods)


def test_thresholds_met_with_and_without_minimum_reclaim() -> None:
    mem = Threshold(MEMORY_AVAILABLE, ThresholdValue(Quantity(500 * Mi)),
                    min_reclaim=ThresholdValue(Quantity(500 * Mi)))
    assert thresholds_met([mem], node(1, memory=1000 * Mi), False) == []
    assert thresholds_met([mem], node(1, memory=999 * Mi), True) == [mem]
    assert thresholds_met([mem], node(1, memory=1000 * Mi), True) == []  # not below
    assert thresholds_met([mem], node(1, memory=499 * Mi), False) == [mem]
    assert thresholds_met([mem], node(1), False) == []  # no observation: not met


def test_a_hard_threshold_evicts_at_once_and_the_condition_outlasts_it() -> None:
    config = EvictionConfig((hard(MEMORY_AVAILABLE, "1Gi"),), pressure_transition_period=300)
    first = evaluate(config, EvictionState(), node(1.0, memory=500 * Mi), now=10.0)
    assert first.state.conditions == (MEMORY_PRESSURE,)
    assert first.reclaim == config.thresholds[0] and first.resource == "memory"
    # The same observations again: nothing new to act on, the condition holds.
    again = evaluate(config, first.state, node(1.0, memory=500 * Mi), now=20.0)
    assert again.reclaim is None and again.state.conditions == (MEMORY_PRESSURE,)
    # Relieved: the condition stays for the transition period, then goes.
    relieved = evaluate(config, again.state, node(2.0, memory=3 * Gi), now=30.0)
    assert relieved.reclaim is None and relieved.state.conditions == (MEMORY_PRESSURE,)
    later = evaluate(config, relieved.state, node(3.0, memory=3 * Gi), now=20.0 + 300.0)
    assert later.state.conditions == ()


def test_a_soft_threshold_waits_out_its_grace_period() -> None:
    soft = Threshold(MEMORY_AVAILABLE, ThresholdValue(Quantity(Gi)), grace_period=60.0)
    config = EvictionConfig((soft,), max_pod_grace_period=5)
    first = evaluate(config, EvictionState(), node(1.0, memory=500 * Mi), now=0.0)
    assert first.state.conditions == (MEMORY_PRESSURE,) and first.reclaim is None
    within = evaluate(config, first.state, node(2.0, memory=500 * Mi), now=59.0)
    assert within.reclaim is None
    after = evaluate(config, within.state, node(3.0, memory=500 * Mi), now=60.0)
    assert after.reclaim == soft
    # Relieved before the grace period: the clock starts again.
    reset = evaluate(config, after.state, node(4.0, memory=3 * Gi), now=61.0)
    again = evaluate(config, reset.state, node(5.0, memory=500 * Mi), now=62.0)
    assert again.reclaim is None


def test_minimum_reclaim_keeps_a_threshold_met_until_it_is_reclaimed() -> None:
    mem = Threshold(MEMORY_AVAILABLE, ThresholdValue(Quantity(Gi)),
                    min_reclaim=ThresholdValue(Quantity(500 * Mi)))
    config = EvictionConfig((mem,))
    first = evaluate(config, EvictionState(), node(1.0, memory=500 * Mi), now=0.0)
    short = evaluate(config, first.state, node(2.0, memory=Gi + 100 * Mi), now=10.0)
    assert short.reclaim == mem  # above the threshold, not above it plus the reclaim
    done = evaluate(config, short.state, node(3.0, memory=2 * Gi), now=20.0)
    assert done.reclaim is None


def test_memory_is_reclaimed_before_disk() -> None:
    config = EvictionConfig((hard(NODEFS_AVAILABLE, "10%"), hard(MEMORY_AVAILABLE, "1Gi")))
    verdict = evaluate(config, EvictionState(), node(1.0, memory=Mi, nodefs=Gi), now=0.0)
    assert verdict.state.conditions == (MEMORY_PRESSURE, DISK_PRESSURE)
    assert verdict.reclaim is not None and verdict.reclaim.signal == MEMORY_AVAILABLE


# --- ranking ----------------------------------------------------------------------------------


def make_pod(uid: str, priority: int = 0, memory_request: str | None = None,
             storage_request: str | None = None, source: str = "api",
             volumes: tuple[Volume, ...] = (), mirror: str = "") -> Pod:
    meta = {"kubernetes.io/config.mirror": mirror} if mirror else {}
    requests = {k: v for k, v in (("memory", memory_request),
                                  ("ephemeral-storage", storage_request)) if v}
    return Pod(
        metadata=ObjectMeta(name=uid, namespace="default", uid=uid,
                            annotations={"kubernetes.io/config.source": source, **meta}),
        spec=PodSpec(containers=(Container(name="c", image="busybox", resources=(
            ResourceRequirements(requests=requests) if requests else None)),),
            priority=priority, volumes=volumes))


def usage(uid: str, memory: int = 0, rootfs: int = 0, logs: int = 0,
          volumes: tuple[VolumeUsage, ...] = (), processes: int = 0) -> PodUsage:
    return PodUsage(uid, memory, processes, (ContainerUsage("c", memory, rootfs, 0, logs, 0),),
                    volumes)


def test_memory_ranking_exceeds_requests_then_priority_then_usage_above_request() -> None:
    # helpers_test.go TestOrderedByExceedsRequestMemory / TestOrderedByPriorityMemory
    below = make_pod("below-requests", memory_request="100Mi")
    above = make_pod("above-requests", memory_request="100Mi")
    best_effort_low = make_pod("best-effort-low", priority=-1)
    best_effort_high = make_pod("best-effort-high", priority=100)
    big = make_pod("big")
    signals = node(1.0, pods=(usage("below-requests", 50 * Mi), usage("above-requests", 200 * Mi),
                              usage("best-effort-low", 10 * Mi),
                              usage("best-effort-high", 500 * Mi), usage("big", 300 * Mi)))
    ranked = rank(MEMORY_AVAILABLE, [below, best_effort_high, above, big, best_effort_low],
                  signals)
    assert [p.uid for p in ranked] == ["best-effort-low", "big", "above-requests",
                                       "best-effort-high", "below-requests"]


def test_a_pod_without_stats_ranks_first() -> None:
    known, unknown = make_pod("known"), make_pod("unknown")
    ranked = rank(MEMORY_AVAILABLE, [known, unknown], node(1.0, pods=(usage("known", Gi),)))
    assert [p.uid for p in ranked] == ["unknown", "known"]


def test_disk_ranking_counts_layers_logs_and_local_volumes() -> None:
    scratch = Volume(name="scratch", empty_dir=EmptyDirVolumeSource())
    memory_backed = Volume(name="tmp", empty_dir=EmptyDirVolumeSource(medium="Memory"))
    writer = make_pod("writer", volumes=(scratch,))
    tmpfs = make_pod("tmpfs", volumes=(memory_backed,))
    requested = make_pod("requested", storage_request="1Gi", volumes=(scratch,))
    signals = node(1.0, pods=(
        usage("writer", rootfs=Mi, logs=Mi, volumes=(VolumeUsage("scratch", 300 * Mi, 1),)),
        usage("tmpfs", rootfs=Mi, volumes=(VolumeUsage("tmp", 900 * Mi, 1),)),
        usage("requested", volumes=(VolumeUsage("scratch", 800 * Mi, 1),))))
    ranked = rank(NODEFS_AVAILABLE, [tmpfs, requested, writer], signals)
    assert [p.uid for p in ranked] == ["writer", "tmpfs", "requested"]


def test_pid_ranking_is_priority_then_process_count() -> None:
    many, few, important = make_pod("many"), make_pod("few"), make_pod("important", 10)
    signals = node(1.0, pods=(usage("many", processes=100), usage("few", processes=2),
                              usage("important", processes=1000)))
    assert [p.uid for p in rank(PID_AVAILABLE, [few, important, many], signals)] == [
        "many", "few", "important"]


def test_critical_pods_are_never_chosen() -> None:
    static = make_pod("static", source="file")
    mirror = make_pod("mirror", mirror="abc")
    system = make_pod("system", priority=2_000_000_000)
    plain = make_pod("plain")
    assert all(is_critical(p) for p in (static, mirror, system)) and not is_critical(plain)
    threshold = hard(MEMORY_AVAILABLE, "1Gi")
    config = EvictionConfig((threshold,))
    signals = node(1.0, memory=Mi, pods=tuple(usage(u, Gi) for u in
                                              ("static", "mirror", "system", "plain")))
    order = choose(config, threshold, "memory", [static, mirror, system, plain], signals,
                   (threshold,))
    assert order is not None and order.uid == "plain" and order.grace_period == 1
    assert choose(config, threshold, "memory", [static, mirror, system], signals,
                  (threshold,)) is None


def test_soft_evictions_use_the_max_pod_grace_period() -> None:
    soft = Threshold(MEMORY_AVAILABLE, ThresholdValue(Quantity(Gi)), grace_period=30.0)
    config = EvictionConfig((soft,), max_pod_grace_period=7)
    order = choose(config, soft, "memory", [make_pod("p")],
                   node(1.0, memory=Mi, pods=(usage("p", Mi),)), (soft,))
    assert order is not None and order.grace_period == 7
    # A pod whose own grace period is shorter gets its own, as upstream.
    quick = msgspec.structs.replace(make_pod("q"), spec=msgspec.structs.replace(
        make_pod("q").spec, termination_grace_period_seconds=3))
    order = choose(config, soft, "memory", [quick],
                   node(1.0, memory=Mi, pods=(usage("q", Mi),)), (soft,))
    assert order is not None and order.grace_period == 3


# --- the message ------------------------------------------------------------------------------


def test_the_eviction_message_names_the_threshold_and_the_containers_above_requests() -> None:
    threshold = hard(MEMORY_AVAILABLE, "100Mi")
    pod = make_pod("p", memory_request="10Mi")
    signals = node(1.0, memory=50 * Mi, pods=(usage("p", 60 * Mi),))
    assert eviction_message("memory", pod, signals, (threshold,)) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container c was using 60Mi, request is 10Mi, has larger consumption of memory. ")
    within = node(1.0, memory=50 * Mi, pods=(usage("p", 5 * Mi),))
    assert eviction_message("memory", pod, within, (threshold,)) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ")


def test_the_disk_message_counts_layer_and_logs_and_a_percentage_threshold() -> None:
    threshold = hard(NODEFS_AVAILABLE, "10%")
    pod = make_pod("p")
    signals = node(1.0, nodefs=5 * Gi, pods=(usage("p", rootfs=3 * Mi, logs=Mi),))
    quantity = threshold.value.amount(100 * Gi)
    assert eviction_message("ephemeral-storage", pod, signals, (threshold,)) == (
        f"The node was low on resource: ephemeral-storage. Threshold quantity: {quantity}, "
        "available: 5Gi. Container c was using 4Mi, request is 0, has larger consumption of "
        "ephemeral-storage. ")


# --- admission ---------------------------------------------------------------------------------


def test_admission_under_pressure() -> None:
    best_effort = make_pod("be")
    burstable = make_pod("burstable", memory_request="10Mi")
    tolerant = Pod(metadata=best_effort.metadata, spec=PodSpec(
        containers=best_effort.spec.containers, tolerations=(Toleration(
            key="node.kubernetes.io/memory-pressure", operator="Exists",
            effect="NoSchedule"),)))
    static = make_pod("static", source="file")
    assert admit_under_pressure(best_effort, ()) is None
    assert admit_under_pressure(best_effort, (MEMORY_PRESSURE,)) == (
        "Evicted", "The node had condition: [MemoryPressure]. ")
    assert admit_under_pressure(burstable, (MEMORY_PRESSURE,)) is None
    assert admit_under_pressure(tolerant, (MEMORY_PRESSURE,)) is None
    assert admit_under_pressure(burstable, (MEMORY_PRESSURE, DISK_PRESSURE)) == (
        "Evicted", "The node had condition: [MemoryPressure DiskPressure]. ")
    assert admit_under_pressure(tolerant, (DISK_PRESSURE,)) is not None
    assert admit_under_pressure(burstable, (PID_PRESSURE,)) is not None
    assert admit_under_pressure(static, (DISK_PRESSURE, PID_PRESSURE)) is None


def test_tolerations_match_as_upstreams() -> None:
    key = "node.kubernetes.io/memory-pressure"
    assert tolerates((Toleration(operator="Exists"),), key, "NoSchedule")
    assert tolerates((Toleration(key=key, operator="Equal", value=""),), key, "NoSchedule")
    assert not tolerates((Toleration(key=key, effect="NoExecute", operator="Exists"),), key,
                         "NoSchedule")
    assert not tolerates((Toleration(key="other", operator="Exists"),), key, "NoSchedule")
