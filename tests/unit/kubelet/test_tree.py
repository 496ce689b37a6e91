"""The tree's recipes: what each incarnation of an actor is made of."""

from __future__ import annotations

from concurrent.futures import Executor

from actors.core.dispatch import Dispatch
from actors.core.timers import ManualTimers
from actors.core.trace.stubs import InertExecutor
from actors.kubelet import names, tree
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.testing.fake_runtime import FakeRuntime


def test_each_incarnation_gets_a_pool_of_its_own(tmp_path: object) -> None:
    """A stopping probe manager or killer shuts its pool down: a successor or a sibling
    sharing it would find every submit refused."""
    made: list[Executor] = []

    def executor() -> Executor:
        made.append(InertExecutor())
        return made[-1]

    clock = FakeClock()
    dispatch = Dispatch()
    runtime = FakeRuntime(clock)
    config = ReplayConfig(node=NodeSettings("node", root_dir=f"{tmp_path}/root",
                                            pod_logs_dir=f"{tmp_path}/logs"))
    parts = KubeletParts(dispatch, ManualTimers(dispatch, clock), clock, runtime,
                         KubeRuntimeManager(runtime, config.node, clock), config,
                         executor=executor)
    recipes = dict(tree.children(parts))
    pools = [recipes[name](n).kwargs["executor"]
             for name in (names.PROBES, names.KILLER) for n in (0, 1)]
    assert len({id(p) for p in pools}) == 4 and len(made) == 4


def test_cluster_mode_adds_the_api_actors_writers_before_the_api_source(
        tmp_path: object) -> None:
    """rest_for_one: the pod writer, node status, lease and event writer come after the
    kubelet's own actors, and the API pod source last, so a new writer is told every API
    pod again."""
    from actors.kubelet.cluster.context import Cluster
    from actors.kubelet.tree import Sources
    from runtime.kubeapi.nodestatus import NodeConfig

    clock = FakeClock()
    dispatch = Dispatch()
    runtime = FakeRuntime(clock)
    config = ReplayConfig(node=NodeSettings("node", root_dir=f"{tmp_path}/root",
                                            pod_logs_dir=f"{tmp_path}/logs"), cluster=True)
    cluster = Cluster(client=None, heartbeat=None,  # type: ignore[arg-type]  # never called
                      node=NodeConfig("node", "node", "10.0.0.1", "amd64"))
    sources = Sources("node", manifest_path=f"{tmp_path}/manifests", api=True)
    parts = KubeletParts(dispatch, ManualTimers(dispatch, clock), clock, runtime,
                         KubeRuntimeManager(runtime, config.node, clock), config,
                         sources=sources, cluster=cluster)
    order = [name for name, _ in tree.children(parts)]
    assert order[-6:] == [names.POD_WRITER, names.NODE_STATUS, names.NODE_LEASE,
                          names.EVENT_WRITER, names.SOURCE_FILE, names.SOURCE_API]
    assert sources.expected() == frozenset({"file", "api"})
    status = dict(tree.children(parts))[names.STATUS](0)
    assert status.kwargs == {"api": True}
