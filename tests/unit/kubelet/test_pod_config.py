"""PodConfig merge: upstream's config_test.go cases (incremental mode), as tables."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from msgspec.structs import replace

from actors.kubelet.messages import SourceSnapshot
from actors.kubelet.pod_config import PodChanges, PodConfig, rfc3339_nano
from runtime.clock import FakeClock
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.pod.static import CONFIG_HASH, CONFIG_SEEN, CONFIG_SOURCE, make_static_pod

T0 = 1_700_000_000.0
SEEN0 = "2023-11-14T22:13:20Z"


def pod(
    name: str,
    namespace: str = "new",
    *,
    uid: str = "",
    image: str = "image",
    container: str = "ctr",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    deleted: bool = False,
    resource_version: str = "",
) -> Pod:
    """Upstream's CreateValidPod: the UID is name + namespace unless given."""
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=uid or name + namespace,
            labels=labels or {},
            annotations=annotations or {},
            deletion_timestamp="2024-01-01T00:00:00Z" if deleted else None,
            resource_version=resource_version,
        ),
        spec=PodSpec(containers=(Container(name=container, image=image),)),
    )


def ops(changes: PodChanges) -> dict[str, list[str]]:
    return {op: [p.uid for p in pods] for op, pods in changes.ops()}


@dataclass
class Step:
    pods: tuple[Pod, ...]
    expect: dict[str, list[str]]
    source: str = "test"
    conflicts: int = 0
    advance: float = 1.0  # seconds the clock moves before this step
    check: dict[str, dict[str, str]] = field(default_factory=dict)  # uid -> annotations


CASES: dict[str, list[Step]] = {
    "new pod added (TestNewPodAdded)": [
        Step((pod("foo"),), {"ADD": ["foonew"]}),
        Step((pod("foo"),), {}),
    ],
    "empty namespace and default namespace": [
        Step((pod("foo", ""), pod("bar", "default")), {"ADD": ["foo", "bardefault"]}),
    ],
    "same name, different namespaces": [
        Step((pod("foo", "default"),), {"ADD": ["foodefault"]}),
        Step((pod("foo", "default"), pod("foo", "new")), {"ADD": ["foonew"]}),
    ],
    "duplicate name in one source keeps the first (TestInvalidPodFiltered)": [
        Step((pod("foo"), pod("foo", uid="other")), {"ADD": ["foonew"]}, conflicts=1),
        Step((pod("foo"), pod("foo", uid="other")), {}),
    ],
    "added, updated, removed (TestNewPodAddedUpdatedRemoved)": [
        Step((pod("foo"),), {"ADD": ["foonew"]}),
        Step((pod("foo"),), {}),
        Step(
            (pod("foo", container="bar", image="test"),),
            {"UPDATE": ["foonew"]},
            check={"foonew": {CONFIG_SEEN: SEEN0}},  # the first-seen time is kept
        ),
        Step((), {"REMOVE": ["foonew"]}),
    ],
    "gracefully deleted (TestNewPodAddedDelete)": [
        Step((pod("foo"),), {"ADD": ["foonew"]}),
        Step((pod("foo", deleted=True),), {"DELETE": ["foonew"]}),
        Step((pod("foo", deleted=True),), {}),
    ],
    "set becomes remove, add, update in order (TestNewPodAddedUpdatedSet)": [
        Step((pod("foo"), pod("foo2"), pod("foo3")), {"ADD": ["foonew", "foo2new", "foo3new"]}),
        Step(
            (pod("foo2", container="bar", image="test"), pod("foo3"), pod("foo4")),
            {"REMOVE": ["foonew"], "ADD": ["foo4new"], "UPDATE": ["foo2new"]},
        ),
    ],
    "status-only change reconciles (TestNewPodAddedSetReconciled)": [
        Step((pod("p0"), pod("p1"), pod("p2")), {"ADD": ["p0new", "p1new", "p2new"]}),
        Step((pod("p0"), pod("p1"), pod("p2")), {}),
        Step((pod("p0", resource_version="7"), pod("p1"), pod("p2")), {"RECONCILE": ["p0new"]}),
        Step(
            (pod("p0", resource_version="8", container="x"), pod("p1"), pod("p2")),
            {"UPDATE": ["p0new"]},
        ),
    ],
    "initial empty set, then a pod (TestInitialEmptySet)": [
        Step((), {}),
        Step((), {}),
        Step((pod("foo"),), {"ADD": ["foonew"]}),
    ],
    "annotations (TestPodUpdateAnnotations)": [
        Step(
            (pod("foo1"), pod("foo2", annotations={"kubernetes.io/blah": "blah"}), pod("foo3")),
            {"ADD": ["foo1new", "foo2new", "foo3new"]},
        ),
        Step(
            (
                pod("foo1"),
                pod("foo2", annotations={"kubernetes.io/blah": "superblah"}),
                pod("foo3"),
            ),
            {"UPDATE": ["foo2new"]},
            check={"foo2new": {"kubernetes.io/blah": "superblah", CONFIG_SEEN: SEEN0}},
        ),
        Step(
            (
                pod("foo1"),
                pod("foo2", annotations={"kubernetes.io/blah": "superblah", "o": "doh"}),
                pod("foo3"),
            ),
            {"UPDATE": ["foo2new"]},
        ),
        Step(
            (pod("foo1"), pod("foo2", annotations={"o": "doh"}), pod("foo3")),
            {"UPDATE": ["foo2new"]},
        ),
        # The kubelet's own annotations are no reason for an update.
        Step(
            (
                pod("foo1", annotations={CONFIG_SEEN: "2000-01-01T00:00:00Z"}),
                pod("foo2", annotations={"o": "doh", CONFIG_SOURCE: "test"}),
                pod("foo3"),
            ),
            {},
        ),
    ],
    "labels (TestPodUpdateLabels)": [
        Step((pod("foo2", labels={"key": "value"}),), {"ADD": ["foo2new"]}),
        Step((pod("foo2", labels={"key": "newValue"}),), {"UPDATE": ["foo2new"]}),
        Step((pod("foo2", labels={"key": "newValue"}),), {}),
    ],
    "an edited static pod is a new UID: remove and add": [
        Step((pod("web", uid="u1"),), {"ADD": ["u1"]}),
        Step((pod("web", uid="u2", image="nginx:2"),), {"REMOVE": ["u1"], "ADD": ["u2"]}),
    ],
    "a name held by another source is refused until it is freed": [
        Step((pod("foo", uid="f1"),), {"ADD": ["f1"]}, source="file"),
        Step(
            (pod("foo", uid="h1"), pod("bar", uid="h2")),
            {"ADD": ["h2"]},
            source="http",
            conflicts=1,
        ),
        Step((pod("foo", uid="h1"), pod("bar", uid="h2")), {}, source="http"),
        # file drops the name: http's pod gets in within the same changes.
        Step((), {"REMOVE": ["f1"], "ADD": ["h1"]}, source="file"),
        Step((pod("foo", uid="f1"),), {}, source="file", conflicts=1),
    ],
}


@pytest.mark.parametrize("steps", list(CASES.values()), ids=list(CASES))
def test_merge_table(steps: list[Step]) -> None:
    clock = FakeClock(T0 - 1.0)
    config = PodConfig(clock)
    for i, step in enumerate(steps):
        clock.step(step.advance)
        changes = config.apply(SourceSnapshot(step.source, step.pods))
        assert ops(changes) == step.expect, f"step {i}"
        assert len(changes.conflicts) == step.conflicts, f"step {i}: {changes.conflicts}"
        current = {p.uid: p for p in config.pods()}
        for uid, wanted in step.check.items():
            for key, value in wanted.items():
                assert current[uid].metadata.annotations.get(key) == value, f"step {i} {key}"


def test_add_annotates_seen_and_source() -> None:
    config = PodConfig(FakeClock(T0 + 0.25))
    changes = config.apply(SourceSnapshot("test", (pod("foo"),)))
    (added,) = changes.adds
    assert added.metadata.annotations[CONFIG_SEEN] == "2023-11-14T22:13:20.25Z"
    assert added.metadata.annotations[CONFIG_SOURCE] == "test"
    assert changes.first_snapshot
    assert config.pods() == (added,)


def test_static_pod_keeps_its_source_and_hash() -> None:
    static = make_static_pod(pod("web", "", uid=""), "Node1", "file", "/etc/k/web.yaml")
    config = PodConfig(FakeClock(T0))
    (added,) = config.apply(SourceSnapshot("file", (static,))).adds
    annotations = added.metadata.annotations
    assert annotations[CONFIG_SOURCE] == "file"
    assert annotations[CONFIG_HASH] == static.uid
    assert annotations[CONFIG_SEEN] == SEEN0
    assert added.metadata.name == "web-node1"


def test_update_keeps_first_seen_and_replaces_pod() -> None:
    clock = FakeClock(T0)
    config = PodConfig(clock)
    config.apply(SourceSnapshot("test", (pod("foo"),)))
    clock.step(60)
    (updated,) = config.apply(SourceSnapshot("test", (pod("foo", image="two"),))).updates
    assert updated.spec.containers[0].image == "two"
    assert updated.metadata.annotations[CONFIG_SEEN] == SEEN0
    assert config.pod("foonew") == updated


def test_deleted_pod_that_changes_again_is_deleted_again() -> None:
    config = PodConfig(FakeClock(T0))
    config.apply(SourceSnapshot("test", (pod("foo"),)))
    assert ops(config.apply(SourceSnapshot("test", (pod("foo", deleted=True),)))) == {
        "DELETE": ["foonew"]
    }
    later = pod("foo", deleted=True)
    later = replace(later, metadata=replace(later.metadata, deletion_grace_period_seconds=5))
    assert ops(config.apply(SourceSnapshot("test", (later,)))) == {"DELETE": ["foonew"]}


def test_sources_ready() -> None:
    config = PodConfig(FakeClock(T0))
    expected = frozenset({"file", "http"})
    assert not config.sources_ready(expected)
    assert config.sources_ready(frozenset())
    first = config.apply(SourceSnapshot("file", ()))
    assert first.first_snapshot and first.empty
    assert not config.sources_ready(expected)
    assert config.seen_sources == frozenset({"file"})
    config.apply(SourceSnapshot("http", ()))
    assert config.sources_ready(expected)
    assert not config.apply(SourceSnapshot("http", ())).first_snapshot


def test_pods_merges_sources_in_order_first_seen() -> None:
    config = PodConfig(FakeClock(T0))
    config.apply(SourceSnapshot("http", (pod("b", uid="h"),)))
    config.apply(SourceSnapshot("file", (pod("a", uid="f1"), pod("c", uid="f2"))))
    assert [p.uid for p in config.pods()] == ["h", "f1", "f2"]


def test_conflict_message_is_readable() -> None:
    config = PodConfig(FakeClock(T0))
    config.apply(SourceSnapshot("file", (pod("foo", uid="f1"),)))
    changes = config.apply(SourceSnapshot("http", (pod("foo", uid="h1"),)))
    (message,) = changes.conflicts
    assert '"foo_new"' in message and '"http"' in message and '"file"' in message
    assert not changes.empty and not changes.ops()
    assert config.refused() == (message,)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(T0, "2023-11-14T22:13:20Z"), (T0 + 0.5, "2023-11-14T22:13:20.5Z"),
     (T0 + 0.000123, "2023-11-14T22:13:20.000123Z")],
)  # fmt: skip
def test_rfc3339_nano(seconds: float, text: str) -> None:
    assert rfc3339_nano(seconds) == text
