"""What the node refuses rather than run a pod without it: a user namespace
(``hostUsers: false``) its runtime handler cannot give, and resource claims no DRA driver
prepares. Each refusal is upstream's error, and no sandbox or container of the pod is made.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import RuntimeHandler, RuntimeHandlerFeatures
from runtime.events.recorder import ListRecorder
from runtime.ids import PodUID
from runtime.kuberuntime.dra import prepare_error
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.result import PodSyncResult
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.userns import user_namespace_error
from runtime.pod.model import (
    Container,
    ObjectMeta,
    Pod,
    PodExtendedResourceClaimStatus,
    PodResourceClaim,
    PodResourceClaimStatus,
    PodSpec,
    PodStatus,
)
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
NO_USERNS = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
USERNS = RuntimeHandlerFeatures(user_namespaces=True)


def make_pod(host_users: bool | None = None, claims: tuple[PodResourceClaim, ...] = (),
             status: PodStatus | None = None) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
        spec=PodSpec(containers=(Container(name="a", image=IMAGE,
                                           image_pull_policy="IfNotPresent"),),
                     host_users=host_users, resource_claims=claims),
        status=status,
    )


# --- hostUsers: false ----------------------------------------------------------------------


@pytest.mark.parametrize(("host_users", "handlers", "handler", "expected"), [
    pytest.param(None, (), "", None, id="unset: the node's user namespace"),
    pytest.param(True, (), "", None, id="true: the node's user namespace"),
    pytest.param(False, (), "", f'{NO_USERNS}: the handler "" is not known',
                 id="containerd 1.6: no handlers reported"),
    pytest.param(False, None, "", f"{NO_USERNS}: runtime handlers are not set",
                 id="before the runtime was asked"),
    pytest.param(False, (RuntimeHandler(""),), "", NO_USERNS,
                 id="the default handler without the feature"),
    pytest.param(False, (RuntimeHandler("", USERNS),), "kata",
                 "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not "
                 'support user namespaces: the handler "kata" is not known',
                 id="a RuntimeClass handler the runtime lacks"),
    pytest.param(False, (RuntimeHandler("kata"),), "kata",
                 "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not "
                 "support user namespaces", id="a RuntimeClass handler without the feature"),
    pytest.param(False, (RuntimeHandler("", USERNS),), "",
                 "can't set `spec.hostUsers: false`: this kubelet does not allocate user "
                 "namespace ID mappings", id="supported, but no mappings to give"),
])
def test_user_namespace_error(host_users: bool | None,
                              handlers: tuple[RuntimeHandler, ...] | None, handler: str,
                              expected: str | None) -> None:
    """Upstream GetOrCreateUserNamespaceMappings and HandlerSupportsUserNamespaces."""
    assert user_namespace_error(make_pod(host_users), handlers, handler) == expected


# --- resourceClaims ------------------------------------------------------------------------


def named(name: str, claim: str) -> PodResourceClaim:
    return PodResourceClaim(name=name, resource_claim_name=claim)


def templated(name: str) -> PodResourceClaim:
    return PodResourceClaim(name=name, resource_claim_template_name="gpu-template")


@pytest.mark.parametrize(("claims", "status", "expected"), [
    pytest.param((), None, None, id="no claims"),
    pytest.param((named("gpu", "my-gpu"),), None,
                 "prepare dynamic resources: fetch ResourceClaim my-gpu: "
                 'resourceclaims.resource.k8s.io "my-gpu" not found', id="by name"),
    pytest.param((templated("gpu"),), None,
                 'prepare dynamic resources: pod "default/web": ResourceClaim not created yet',
                 id="from a template, not created yet"),
    pytest.param((templated("gpu"),), PodStatus(resource_claim_statuses=(
        PodResourceClaimStatus(name="gpu", resource_claim_name="web-gpu-x1"),)),
                 "prepare dynamic resources: fetch ResourceClaim web-gpu-x1: "
                 'resourceclaims.resource.k8s.io "web-gpu-x1" not found',
                 id="from a template, created"),
    pytest.param((templated("gpu"),), PodStatus(resource_claim_statuses=(
        PodResourceClaimStatus(name="gpu"),)), None,
                 id="from a template, intentionally not created"),
    pytest.param((PodResourceClaim(name="gpu"),), None,
                 'prepare dynamic resources: pod "default/web", spec.resourceClaim "gpu": '
                 "none of the supported fields are set", id="neither name nor template"),
    pytest.param((), PodStatus(extended_resource_claim_status=PodExtendedResourceClaimStatus(
        request_mappings=(), resource_claim_name="web-extended")),
                 "prepare dynamic resources: fetch ResourceClaim web-extended: "
                 'resourceclaims.resource.k8s.io "web-extended" not found',
                 id="the extended resources' claim"),
])
def test_prepare_error(claims: tuple[PodResourceClaim, ...], status: PodStatus | None,
                       expected: str | None) -> None:
    """Upstream prepareResources and resourceclaim.Name, on a node without DRA drivers
    or ResourceClaim objects."""
    assert prepare_error(make_pod(claims=claims, status=status)) == expected


# --- the sync ------------------------------------------------------------------------------


class Node:
    def __init__(self, tmp_path: Path) -> None:
        self.fake = FakeRuntime(FakeClock(), images=[IMAGE])
        self.events = ListRecorder()
        settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        self.manager = KubeRuntimeManager(self.fake, settings, FakeClock(), events=self.events)

    def sync(self, pod: Pod) -> PodSyncResult:
        status = self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
        return self.manager.sync_pod(pod, status)

    def made_nothing(self) -> bool:
        return not self.fake.called("run_pod_sandbox") and not self.fake.called(
            "create_container")


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_a_pod_that_asks_for_a_user_namespace_gets_no_sandbox(node: Node) -> None:
    result = node.sync(make_pod(host_users=False))
    detail = f'{NO_USERNS}: the handler "" is not known'
    assert [(s.action, s.error, s.message) for s in result.steps] == [
        ("CreatePodSandbox", "CreatePodSandboxError", detail)]
    assert node.made_nothing()
    (event,) = node.events.find("FailedCreatePodSandBox")
    assert event.message == f"Failed to create pod sandbox: {detail}"


def test_a_pod_on_the_node_s_user_namespace_asks_the_runtime_nothing_more(
        node: Node) -> None:
    assert node.sync(make_pod(host_users=True)).ok
    assert node.fake.called("status") == 0
    assert node.fake.called("run_pod_sandbox") == 1


def test_a_pod_with_a_claim_no_driver_prepares_gets_no_sandbox(node: Node) -> None:
    result = node.sync(make_pod(claims=(named("gpu", "my-gpu"),)))
    message = ("Failed to prepare dynamic resources: prepare dynamic resources: fetch "
               'ResourceClaim my-gpu: resourceclaims.resource.k8s.io "my-gpu" not found')
    assert [(s.action, s.error, s.message) for s in result.steps] == [
        ("PrepareDynamicResources", "FailedPrepareDynamicResources", message)]
    assert node.made_nothing()
    assert [e.message for e in node.events.find("FailedPrepareDynamicResources")] == [message]
