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
