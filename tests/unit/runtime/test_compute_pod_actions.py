"""Upstream's computePodActions tables, ported to compute_pod_actions.

Source: kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager_test.go, the tables
of TestComputePodActions, TestComputePodActionsWithInitContainers,
TestComputePodActionsWithRestartableInitContainers and
TestComputePodActionsWithInitAndEphemeralContainers (the sidecar-aware variants, without the
LegacySidecarContainers gate). Case ids are upstream's case names, verbatim.

Each case builds the table's base pod and runtime status
(tests/unit/runtime/kuberuntime_fixtures.py), applies the case's pod mutator and then its
status mutator (which may also set probe verdicts, upstream's liveness and startup
managers), and compares the plan field by field:
kill_pod, create_sandbox, sandbox_id, attempt, init_containers_to_start, containers_to_start,
and containers_to_kill as a set of container ids (upstream compares a map keyed by id), with
the kill's container name (upstream's containerToKillInfo.name) and reason.

Kill reasons: upstream's verifyActions blanks message and reason before comparing, so its
tables never state a reason. The reasons expected here are the ones upstream's
computePodActions / computeInitContainerActions set for that path: "" for a changed
definition, LivenessProbe, StartupProbe, and Unknown for a container in unknown state.

TestComputePodActionsWithInitAndEphemeralContainers is ported whole, with
ephemeral_containers_to_start compared too (upstream's EphemeralContainersToStart). (That
test's re-runs of the first two tables are the tables below.)

Not ported at all: TestComputePodActionsWithInitContainersWithLegacySidecarContainers and
...WithInitAndEphemeralContainersWithLegacySidecarContainers (LegacySidecarContainers gate,
NextInitContainerToStart path, not implemented here), and TestComputePodActionsForPodResize
(in-place resize, not modelled).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from runtime.cri.types import ContainerState
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime.actions import KillReason, PodActions, compute_pod_actions
from runtime.pod.model import EphemeralContainer, Pod, Probe
from runtime.prober.results import ProbeResult
from tests.unit.runtime.kuberuntime_fixtures import (
    SANDBOX_ID,
    Scenario,
    make_base_pod_and_status,
    make_base_pod_and_status_with_init_and_ephemeral_containers,
    make_base_pod_and_status_with_init_containers,
    make_base_pod_and_status_with_restartable_init_containers,
    restart_policy,
    with_init_container,
    with_spec,
)

EXITED = ContainerState.EXITED
RUNNING = ContainerState.RUNNING
CREATED = ContainerState.CREATED
UNKNOWN = ContainerState.UNKNOWN

ALWAYS = restart_policy("Always")
ON_FAILURE = restart_policy("OnFailure")
NEVER = restart_policy("Never")


@dataclass(frozen=True)
class Expected:
    """upstream's expected podActions; kills map a base-status index to the kill reason."""

    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_id: SandboxID | None = SANDBOX_ID
    attempt: int = 0
    init_containers_to_start: tuple[int, ...] = ()
    containers_to_start: tuple[int, ...] = ()
    containers_to_kill: Mapping[int, KillReason] = field(default_factory=dict)
    ephemeral_containers_to_start: tuple[int, ...] = ()


NO_ACTION = Expected()


@dataclass(frozen=True)
class Case:
    expected: Expected
    mutate_pod: Callable[[Pod], Pod] | None = None
    mutate_status: Callable[[Scenario], Any] | None = None


def case(
    name: str,
    expected: Expected,
    *,
    mutate_pod: Callable[[Pod], Pod] | None = None,
    mutate_status: Callable[[Scenario], Any] | None = None,
) -> Any:
    return pytest.param(Case(expected, mutate_pod, mutate_status), id=name)


def run_case(
    make_base: Callable[[], Scenario],
    test: Case,
    kill_specs: Literal["containers", "init_containers"],
) -> None:
    # A reference pair, as upstream's basePod/baseStatus, to resolve the expected kills.
    reference = make_base()
    scenario = make_base()
    if test.mutate_pod is not None:
        scenario.pod = test.mutate_pod(scenario.pod)
    if test.mutate_status is not None:
        test.mutate_status(scenario)
    actions = compute_pod_actions(
        scenario.pod, scenario.status(), scenario.liveness, scenario.startup
    )
    verify_actions(test.expected, actions, reference, kill_specs)


def verify_actions(
    expected: Expected,
    actual: PodActions,
    reference: Scenario,
    kill_specs: Literal["containers", "init_containers"],
) -> None:
    assert actual.kill_pod == expected.kill_pod, "kill_pod"
    assert actual.create_sandbox == expected.create_sandbox, "create_sandbox"
    assert actual.sandbox_id == expected.sandbox_id, "sandbox_id"
    assert actual.attempt == expected.attempt, "attempt"
    assert actual.init_containers_to_start == expected.init_containers_to_start, (
        "init_containers_to_start"
    )
    assert actual.containers_to_start == expected.containers_to_start, "containers_to_start"
    assert actual.ephemeral_containers_to_start == expected.ephemeral_containers_to_start, (
        "ephemeral_containers_to_start"
    )

    # upstream's getKillMap / getKillMapWithInitContainers: keyed by the id of the base
    # status at that index, naming the spec container at the same index.
    specs = getattr(reference.pod.spec, kill_specs)
    want: dict[ContainerID, tuple[str, KillReason]] = {
        reference.containers[i].id: (specs[i].name, reason)
        for i, reason in expected.containers_to_kill.items()
    }
    kills = actual.kills()
    assert set(kills) == set(want), "containers_to_kill"
    got = {cid: (k.name, k.reason) for cid, k in kills.items()}
    assert got == want, "containers_to_kill name/reason"


def sandbox_recreated(**changes: Any) -> Expected:
    """KillPod + CreateSandbox with attempt 1, as upstream writes for a dead sandbox."""
    values: dict[str, Any] = {"kill_pod": True, "create_sandbox": True, "attempt": 1}
    values.update(changes)
    return Expected(**values)


# --- TestComputePodActions ------------------------------------------------------------------

COMPUTE_POD_ACTIONS = [
    case("everything is good; do nothing", NO_ACTION),
    case(
        "start pod sandbox and all containers for a new pod",
        # No container or sandbox exists.
        mutate_status=lambda s: s.clear_sandboxes().clear_containers(),
        expected=Expected(
            kill_pod=True,
            create_sandbox=True,
            sandbox_id=None,
            attempt=0,
            containers_to_start=(0, 1, 2),
        ),
    ),
    case(
        "restart exited containers if RestartPolicy == Always",
        mutate_pod=ALWAYS,
        # The first container completed, the second failed: restart both.
        mutate_status=lambda s: s.set_container(0, state=EXITED, exit_code=0).set_container(
            1, state=EXITED, exit_code=111
        ),
        expected=Expected(containers_to_start=(0, 1)),
    ),
    case(
        "restart failed containers if RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        # The first container completed (not restarted), the second failed (restarted).
        mutate_status=lambda s: s.set_container(0, state=EXITED, exit_code=0).set_container(
            1, state=EXITED, exit_code=111
        ),
        expected=Expected(containers_to_start=(1,)),
    ),
    case(
        "restart created but not started containers if RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        # The first container completed; the second was created but never started.
        mutate_status=lambda s: s.set_container(0, state=EXITED, exit_code=0).set_container(
            1, state=CREATED
        ),
        expected=Expected(containers_to_start=(1,)),
    ),
    case(
        "don't restart containers if RestartPolicy == Never",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(0, state=EXITED, exit_code=0).set_container(
            1, state=EXITED, exit_code=111
        ),
        expected=NO_ACTION,
    ),
    case(
        "Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.sandbox_not_ready(),
        expected=sandbox_recreated(containers_to_start=(0, 1, 2)),
    ),
    case(
        "Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox "
        "is dead, and RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: s.sandbox_not_ready().set_container(1, state=EXITED, exit_code=0),
        expected=sandbox_recreated(containers_to_start=(0, 2)),
    ),
    case(
        "Kill pod and recreate all containers if the PodSandbox does not have an IP",
        mutate_status=lambda s: s.set_sandbox(ip=""),
        expected=sandbox_recreated(containers_to_start=(0, 1, 2)),
    ),
    case(
        "Kill and recreate the container if the container's spec changed",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(1, hash="432423432"),
        expected=Expected(containers_to_start=(1,), containers_to_kill={1: KillReason.NONE}),
    ),
    case(
        "Kill and recreate the container if the liveness check has failed",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_liveness(1, ProbeResult.FAILURE),
        expected=Expected(
            containers_to_start=(1,), containers_to_kill={1: KillReason.LIVENESS_PROBE}
        ),
    ),
    case(
        "Kill and recreate the container if the startup check has failed",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_startup(1, ProbeResult.FAILURE),
        expected=Expected(
            containers_to_start=(1,), containers_to_kill={1: KillReason.STARTUP_PROBE}
        ),
    ),
    case(
        "Verify we do not create a pod sandbox if no ready sandbox for pod with "
        "RestartPolicy=Never and all containers exited",
        mutate_pod=NEVER,
        # No ready sandbox; all containers exited.
        mutate_status=lambda s: (
            s.sandbox_not_ready()
            .set_sandbox_attempt(1)
            .set_all_containers(state=EXITED, exit_code=0)
        ),
        expected=Expected(kill_pod=True, create_sandbox=False, attempt=2),
    ),
    case(
        "Verify we do not create a pod sandbox if no ready sandbox for pod with "
        "RestartPolicy=OnFailure and all containers succeeded",
        mutate_pod=ON_FAILURE,
        # No ready sandbox; all containers succeeded.
        mutate_status=lambda s: (
            s.sandbox_not_ready()
            .set_sandbox_attempt(1)
            .set_all_containers(state=EXITED, exit_code=0)
        ),
        expected=Expected(kill_pod=True, create_sandbox=False, attempt=2),
    ),
    case(
        "Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never "
        "and no containers have ever been created",
        mutate_pod=NEVER,
        # No ready sandbox; no visible containers.
        mutate_status=lambda s: s.sandbox_not_ready().set_sandbox_attempt(2).clear_containers(),
        expected=sandbox_recreated(attempt=3, containers_to_start=(0, 1, 2)),
    ),
    case(
        "Kill and recreate the container if the container is in unknown state",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(1, state=UNKNOWN),
        expected=Expected(containers_to_start=(1,), containers_to_kill={1: KillReason.UNKNOWN}),
    ),
    case(
        "Restart the container if the container is in created state",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(1, state=CREATED),
        expected=Expected(containers_to_start=(1,)),
    ),
]


@pytest.mark.parametrize("test", COMPUTE_POD_ACTIONS)
def test_compute_pod_actions(test: Case) -> None:
    run_case(make_base_pod_and_status, test, "containers")


# --- TestComputePodActionsWithInitContainers ------------------------------------------------

WITH_INIT_CONTAINERS = [
    case(
        "initialization completed; start all containers",
        Expected(containers_to_start=(0, 1, 2)),
    ),
    case(
        "no init containers have been started; start the first one",
        mutate_status=lambda s: s.clear_containers(),
        expected=Expected(init_containers_to_start=(0,)),
    ),
    case(
        "initialization in progress; do nothing",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, state=RUNNING),
        expected=NO_ACTION,
    ),
    case(
        "Kill pod and restart the first init container if the pod sandbox is dead",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.sandbox_not_ready(),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "initialization failed; restart the last init container if RestartPolicy == Always",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, exit_code=137),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "initialization failed; restart the last init container if RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: s.set_container(2, exit_code=137),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "initialization failed; kill pod if RestartPolicy == Never",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(2, exit_code=137),
        expected=Expected(kill_pod=True),
    ),
    case(
        "init container state unknown; kill and recreate the last init container if "
        "RestartPolicy == Always",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, state=UNKNOWN),
        expected=Expected(
            init_containers_to_start=(2,), containers_to_kill={2: KillReason.UNKNOWN}
        ),
    ),
    case(
        "init container state unknown; kill and recreate the last init container if "
        "RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: s.set_container(2, state=UNKNOWN),
        expected=Expected(
            init_containers_to_start=(2,), containers_to_kill={2: KillReason.UNKNOWN}
        ),
    ),
    case(
        "init container state unknown; kill pod if RestartPolicy == Never",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(2, state=UNKNOWN),
        expected=Expected(kill_pod=True),
    ),
    case(
        "Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.sandbox_not_ready(),
        expected=Expected(kill_pod=True, create_sandbox=False, attempt=1),
    ),
    case(
        "Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  "
        "create a new pod sandbox",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.sandbox_not_ready().clear_containers(),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; "
        "create a new pod sandbox",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: s.sandbox_not_ready().set_container(2, exit_code=137),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "some of the init container statuses are missing but the last init container is "
        "running, don't restart preceding ones",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, state=RUNNING).keep_containers(2),
        expected=Expected(kill_pod=False),
    ),
    case(
        "an init container is in the created state due to an unknown error when starting "
        "container; restart it",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, state=CREATED),
        expected=Expected(kill_pod=False, init_containers_to_start=(2,)),
    ),
]


@pytest.mark.parametrize("test", WITH_INIT_CONTAINERS)
def test_compute_pod_actions_with_init_containers(test: Case) -> None:
    run_case(make_base_pod_and_status_with_init_containers, test, "init_containers")


# --- TestComputePodActionsWithRestartableInitContainers -------------------------------------

WITH_RESTARTABLE_INIT_CONTAINERS = [
    case(
        "initialization completed; start all containers",
        Expected(containers_to_start=(0, 1, 2)),
    ),
    case(
        "no init containers have been started; start the first one",
        mutate_status=lambda s: s.clear_containers(),
        expected=Expected(init_containers_to_start=(0,)),
    ),
    case(
        "an init container is stuck in the created state; restart it",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(2, state=CREATED),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "restartable init container has started; start the next",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.keep_containers(None, 1),
        expected=Expected(init_containers_to_start=(1,)),
    ),
    case(
        "livenessProbe has not been run; start the nothing",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.forget_liveness(1).keep_containers(None, 2),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "livenessProbe in progress; start the next",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_liveness(1, ProbeResult.UNKNOWN).keep_containers(None, 2),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "livenessProbe has completed; start the next",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.keep_containers(None, 2),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "kill and recreate the restartable init container if the liveness check has failed",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_liveness(2, ProbeResult.FAILURE),
        expected=Expected(
            init_containers_to_start=(2,),
            containers_to_kill={2: KillReason.LIVENESS_PROBE},
            containers_to_start=(0, 1, 2),
        ),
    ),
    case(
        "startupProbe has not been run; do nothing",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.forget_startup(1).keep_containers(None, 2),
        expected=NO_ACTION,
    ),
    case(
        "startupProbe in progress; do nothing",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_startup(1, ProbeResult.UNKNOWN).keep_containers(None, 2),
        expected=NO_ACTION,
    ),
    case(
        "startupProbe has completed; start the next",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.keep_containers(None, 2),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "kill and recreate the restartable init container if the startup check has failed",
        mutate_pod=lambda pod: with_init_container(ALWAYS(pod), 2, startup_probe=Probe()),
        mutate_status=lambda s: s.set_startup(2, ProbeResult.FAILURE),
        expected=Expected(
            init_containers_to_start=(2,),
            containers_to_kill={2: KillReason.STARTUP_PROBE},
            containers_to_start=(),
        ),
    ),
    case(
        "kill and recreate the restartable init container if the container definition changes",
        # The status keeps the hash of the old spec: the definition changed.
        mutate_pod=lambda pod: with_init_container(ALWAYS(pod), 2, image="foo-image"),
        expected=Expected(
            init_containers_to_start=(2,),
            containers_to_kill={2: KillReason.NONE},
            containers_to_start=(0, 1, 2),
        ),
    ),
    case(
        "restart terminated restartable init container and next init container",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(0, state=EXITED).set_container(2, state=EXITED),
        expected=Expected(init_containers_to_start=(0, 2)),
    ),
    case(
        "restart terminated restartable init container and regular containers",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(0, state=EXITED),
        expected=Expected(init_containers_to_start=(0,), containers_to_start=(0, 1, 2)),
    ),
    case(
        "Pod sandbox not ready, restartable init container failed, but RestartPolicy == "
        "Never; kill pod only",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.sandbox_not_ready().set_container(2, state=EXITED, exit_code=137),
        expected=Expected(kill_pod=True, create_sandbox=False, attempt=1),
    ),
    case(
        "Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init "
        "containers;  create a new pod sandbox",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.sandbox_not_ready().clear_containers(),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "Pod sandbox not ready, restartable init container failed, and RestartPolicy == "
        "OnFailure; create a new pod sandbox",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: s.sandbox_not_ready().set_container(2, state=EXITED, exit_code=137),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "Pod sandbox not ready, restartable init container failed, and RestartPolicy == "
        "Always; create a new pod sandbox",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.sandbox_not_ready().set_container(2, state=EXITED, exit_code=137),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "initialization failed; restart the last restartable init container even if pod's "
        "RestartPolicy == Never",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(2, state=EXITED, exit_code=137),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "restartable init container state unknown; kill and recreate the last restartable "
        "init container even if pod's RestartPolicy == Never",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(2, state=UNKNOWN),
        expected=Expected(
            init_containers_to_start=(2,), containers_to_kill={2: KillReason.UNKNOWN}
        ),
    ),
    case(
        "restart restartable init container if regular containers are running even if pod's "
        "RestartPolicy == Never",
        mutate_pod=NEVER,
        # All main containers are running.
        mutate_status=lambda s: s.set_container(
            2, state=EXITED, exit_code=137
        ).add_regular_statuses(RUNNING),
        expected=Expected(init_containers_to_start=(2,)),
    ),
    case(
        "kill the pod if all main containers succeeded if pod's RestartPolicy == Never",
        mutate_pod=NEVER,
        # All main containers succeeded.
        mutate_status=lambda s: s.add_regular_statuses(EXITED, exit_code=0),
        expected=Expected(kill_pod=True),
    ),
    case(
        "some of the init container statuses are missing but the last init container is "
        "running, restart restartable init and regular containers",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.keep_containers(2),
        expected=Expected(init_containers_to_start=(0, 1), containers_to_start=(0, 1, 2)),
    ),
]


@pytest.mark.parametrize("test", WITH_RESTARTABLE_INIT_CONTAINERS)
def test_compute_pod_actions_with_restartable_init_containers(test: Case) -> None:
    run_case(make_base_pod_and_status_with_restartable_init_containers, test, "init_containers")


# --- TestComputePodActionsWithInitAndEphemeralContainers ------------------------------------
# Base statuses: [foo1, foo2, foo3 running] + [init1 exited] + [debug running].

WITH_INIT_AND_EPHEMERAL_CONTAINERS = [
    case("steady state; do nothing; ignore ephemeral container", NO_ACTION),
    case(
        "No ephemeral containers running; start one",
        mutate_status=lambda s: s.keep_containers(None, 4),
        expected=Expected(ephemeral_containers_to_start=(0,)),
    ),
    case(
        "Start second ephemeral container",
        mutate_pod=lambda pod: with_spec(pod, ephemeral_containers=(
            *pod.spec.ephemeral_containers, EphemeralContainer(name="debug2", image="busybox"))),
        expected=Expected(ephemeral_containers_to_start=(1,)),
    ),
    case(
        "Ephemeral container exited; do not restart",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.set_container(4, state=EXITED),
        expected=NO_ACTION,
    ),
    case(
        "initialization in progress; start ephemeral container",
        mutate_status=lambda s: s.set_container(3, state=RUNNING).keep_containers(None, 4),
        expected=Expected(ephemeral_containers_to_start=(0,)),
    ),
    case(
        "Create a new pod sandbox if the pod sandbox is dead, init container failed and "
        "RestartPolicy == OnFailure",
        mutate_pod=ON_FAILURE,
        mutate_status=lambda s: (
            s.sandbox_not_ready().keep_containers(3).set_container(0, exit_code=137)
        ),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "Kill pod and do not restart ephemeral container if the pod sandbox is dead",
        mutate_pod=ALWAYS,
        mutate_status=lambda s: s.sandbox_not_ready(),
        expected=sandbox_recreated(init_containers_to_start=(0,)),
    ),
    case(
        "Kill pod if all containers exited except ephemeral container",
        mutate_pod=NEVER,
        # All regular containers exited.
        mutate_status=lambda s: s.set_containers(range(3), state=EXITED, exit_code=0),
        expected=Expected(kill_pod=True, create_sandbox=False),
    ),
    case(
        "Ephemeral container is in unknown state; leave it alone",
        mutate_pod=NEVER,
        mutate_status=lambda s: s.set_container(4, state=UNKNOWN),
        expected=NO_ACTION,
    ),
]


@pytest.mark.parametrize("test", WITH_INIT_AND_EPHEMERAL_CONTAINERS)
def test_compute_pod_actions_with_init_and_ephemeral_containers(test: Case) -> None:
    run_case(make_base_pod_and_status_with_init_and_ephemeral_containers, test, "init_containers")


def test_table_sizes() -> None:
    """Guard against a table silently losing cases (upstream counts minus documented skips)."""
    assert len(COMPUTE_POD_ACTIONS) == 17
    assert len(WITH_INIT_CONTAINERS) == 15
    assert len(WITH_RESTARTABLE_INIT_CONTAINERS) == 24
    assert len(WITH_INIT_AND_EPHEMERAL_CONTAINERS) == 9
