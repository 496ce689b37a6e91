"""client-go's EventCorrelator, with upstream's tables (tools/record/events_cache_test.go)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runtime.events import correlator as c
from runtime.events.recorder import ObjectRef
from runtime.events.v1 import CoreEvent, go_duration, make_event


class SimpleIntervalClock:
    """k8s.io/utils/clock/testing SimpleIntervalClock: each read moves time on."""

    def __init__(self, start: float, step: float) -> None:
        self.time, self.step = start, step

    def __call__(self) -> float:
        self.time += self.step
        return self.time


def ref(kind: str, name: str, namespace: str) -> ObjectRef:
    return ObjectRef(kind, namespace, name, "C934D34AFB20242", "version", "",
                     "spec.containers{mycontainer}")


def event(reason: str, message: str, involved: ObjectRef) -> CoreEvent:
    return CoreEvent(name="", namespace="", involved=involved, reason=reason,
                     message=message, type="Normal", first_timestamp=0.0,
                     last_timestamp=0.0, count=1, source_component="kubelet",
                     source_host="kublet.node1")


def unique_events(n: int) -> list[CoreEvent]:
    return [event(f"reason-{i}", f"message-{i}", ref("Pod", f"pod-{i}", f"ns-{i}"))
            for i in range(n)]


def similar_events(n: int, template: CoreEvent, prefix: str) -> list[CoreEvent]:
    return [template.replace(message=f"{prefix}-{i}-{template.message}") for i in range(n)]


FIRST = event("first", "i am first", ref("Pod", "my-pod", "my-ns"))
DUPLICATE = event("duplicate", "me again", ref("Pod", "my-pod", "my-ns"))
UNIQUE = event("unique", "snowflake", ref("Pod", "my-pod", "my-ns"))
_SIMILAR_REF = ObjectRef("Pod", "my-ns", "my-pod", "C934D34AFB20242", "version", "",
                         "spec.containers{container1}")
SIMILAR = event("similar", "similar message", _SIMILAR_REF)
AGGREGATE = event(SIMILAR.reason, c.aggregate_message(SIMILAR), SIMILAR.involved)
SIMILAR_OTHER_CONTAINER = SIMILAR.replace(involved=ObjectRef(
    "Pod", "my-ns", "my-pod", "C934D34AFB20242", "version", "", "spec.containers{container2}"))

# name -> previous events, new event, expected (event, count) or None for skip, interval
SCENARIOS: dict[str, tuple[list[CoreEvent], CoreEvent, tuple[CoreEvent, int] | None, int]] = {
    "create-a-single-event": ([], FIRST, (FIRST, 1), 5),
    "the-same-event-should-just-count": ([DUPLICATE], DUPLICATE, (DUPLICATE, 2), 5),
    "the-same-event-should-just-count-even-if-more-than-aggregate": (
        [DUPLICATE] * c.AGGREGATE_MAX_EVENTS, DUPLICATE,
        (DUPLICATE, c.AGGREGATE_MAX_EVENTS + 1), 30),
    "the-same-event-is-spam-if-happens-too-frequently": (
        [DUPLICATE] * (c.SPAM_BURST + 1), DUPLICATE, None, 1),
    "create-many-unique-events": (unique_events(30), UNIQUE, (UNIQUE, 1), 5),
    "similar-events-should-aggregate-event": (
        similar_events(c.AGGREGATE_MAX_EVENTS - 1, SIMILAR, SIMILAR.message), SIMILAR,
        (AGGREGATE, 1), 5),
    "similar-events-many-times-should-count-the-aggregate": (
        similar_events(c.AGGREGATE_MAX_EVENTS, SIMILAR, SIMILAR.message), SIMILAR,
        (AGGREGATE, 2), 5),
    "events-from-different-containers-do-not-aggregate": (
        [SIMILAR_OTHER_CONTAINER], SIMILAR, (SIMILAR, 1), 5),
    "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate": (
        similar_events(c.AGGREGATE_MAX_EVENTS - 1, SIMILAR, SIMILAR.message), SIMILAR,
        (SIMILAR, 1), c.AGGREGATE_INTERVAL_SECONDS),
}


def _stamped(e: CoreEvent, clock: Callable[[], float]) -> CoreEvent:
    now = clock()
    return e.replace(first_timestamp=now, last_timestamp=now)


def _compare(got: CoreEvent, want: CoreEvent, count: int) -> None:
    """Upstream validateEvent: timestamps set, equal only for a count of 1; name by prefix;
    everything else equal."""
    assert got.first_timestamp and got.last_timestamp
    assert (got.first_timestamp == got.last_timestamp) == (count == 1)
    assert got.name.startswith(want.name)
    normalised = got.replace(first_timestamp=0.0, last_timestamp=0.0, name=want.name)
    assert normalised == want.replace(count=count, first_timestamp=0.0, last_timestamp=0.0)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_event_correlator(name: str) -> None:
    previous, new, expected, interval = SCENARIOS[name]
    clock = SimpleIntervalClock(1_700_000_000.0, float(interval))
    correlator = c.EventCorrelator(clock)
    for e in previous:
        result = correlator.correlate(_stamped(e, clock))
        if not result.skip and result.event is not None:
            correlator.update_state(result.event)
    result = correlator.correlate(_stamped(new, clock))
    assert result.skip == (expected is None)
    if expected is not None:
        assert result.event is not None
        _compare(result.event, *expected)


def _by_reason(e: CoreEvent) -> str:
    o = e.involved
    return "".join((e.source_component, e.source_host, o.kind, o.namespace, o.name, o.uid,
                    o.api_version, e.reason))


ORIGINAL = event("original", "i am first", ref("Pod", "my-pod", "my-ns"))
DIFFERENT_REASON = event("duplicate", "me again", ref("Pod", "my-pod", "my-ns"))
SPAM = event("original", "me again", ref("Pod", "my-pod", "my-ns"))


@pytest.mark.parametrize(("new", "skip", "key_func"), [
    # spam if the object is the same, for the default spam filter
    (DIFFERENT_REASON, True, c.spam_key),
    # not spam if the reason differs, for a filter keyed by reason too
    (DIFFERENT_REASON, False, _by_reason),
    # spam if the reason is the same but the message differs, for that filter
    (SPAM, True, _by_reason),
])
def test_event_spam_filter(new: CoreEvent, skip: bool,
                           key_func: Callable[[CoreEvent], str]) -> None:
    clock = SimpleIntervalClock(1_700_000_000.0, 1.0)
    correlator = c.EventCorrelator(clock, burst=1, spam_key_func=key_func)
    first = correlator.correlate(ORIGINAL)
    assert first.event is not None
    correlator.update_state(first.event)
    result = correlator.correlate(new)
    assert result.skip == skip
    if not skip:
        assert result.event is not None and result.event.reason == new.reason


def test_aggregator_by_reason_groups_messages_apart_from_reasons() -> None:
    """TestEventAggregatorByReasonFunc."""
    one = event("end-of-world", "it was fun", ref("Pod", "pod1", "other"))
    two = event("end-of-world", "it was awful", ref("Pod", "pod1", "other"))
    three = event("nevermind", "it was a bug", ref("Pod", "pod1", "other"))
    (agg1, local1), (agg2, local2) = c.aggregate_by_reason(one), c.aggregate_by_reason(two)
    assert agg1 == agg2 and local1 != local2
    assert agg1 != c.aggregate_by_reason(three)[0]


def test_aggregate_message_prefix() -> None:
    """TestEventAggregatorByReasonMessageFunc."""
    assert c.aggregate_message(FIRST).startswith("(combined from similar events): ")


def test_a_repeat_is_a_patch_of_count_last_timestamp_and_message() -> None:
    clock = SimpleIntervalClock(1_700_000_000.0, 1.0)
    correlator = c.EventCorrelator(clock)
    pod = ObjectRef("Pod", "default", "web", "u1")
    first = correlator.correlate(make_event(pod, "Warning", "BackOff", "m", 1_700_000_001.0,
                                            "kubelet", "node-a"))
    assert first.patch is None and first.event is not None
    second = correlator.correlate(make_event(pod, "Warning", "BackOff", "m", 1_700_000_050.0,
                                             "kubelet", "node-a"))
    assert second.event is not None and second.event.name == first.event.name
    assert second.patch == {"count": 2, "lastTimestamp": "2023-11-14T22:14:10Z",
                            "message": "m"}


def test_spam_bucket_refills_one_token_in_five_minutes() -> None:
    bucket = c.TokenBucket(c.SPAM_QPS, 2)
    assert bucket.try_accept(0.0) and bucket.try_accept(0.0)
    assert not bucket.try_accept(299.0)
    assert bucket.try_accept(300.0)
    assert not bucket.try_accept(300.0)


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0, "0s"), (0.25, "250ms"), (1.234, "1.234s"), (1.5, "1.5s"), (60.0, "1m0s"),
    (123.25, "2m3.25s"), (3600.0, "1h0m0s"), (0.0000015, "1.5µs"), (2e-9, "2ns"),
])
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
