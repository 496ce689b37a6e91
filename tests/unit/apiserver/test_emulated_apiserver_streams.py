"""pods/exec, attach and portforward: the emulated API server rewrites the client's query
into the kubelet's as upstream's pod strategy does (streamLocation, PortForwardLocation,
streamParams, validateContainer; apimachinery's query conversion).

The table pins the kubelet URL for a client URL; the kubectl tests pin what real kubectl's
own requests become on their way to a stand-in kubelet (which records the path it was
asked and refuses the upgrade, so kubectl then fails: only the URL matters here).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.client import RawClient
from tests.apiserver.errors import APIError
from tests.apiserver.kubectl import Kubectl
from tests.apiserver.streams import kubelet_location

PODS = "/api/v1/namespaces/default/pods"


def _pod(*containers: str, init: tuple[str, ...] = (), ephemeral: tuple[str, ...] = (),
         node: str = "n1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "busybox:1"} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c, "image": "busybox:1"} for c in init]
    if ephemeral:
        spec["ephemeralContainers"] = [{"name": c, "image": "busybox:1"} for c in ephemeral]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def _location(subresource: str, pod: dict[str, Any], query: str) -> str:
    return kubelet_location(subresource, pod,
                            urllib.parse.parse_qs(query, keep_blank_values=True))


@pytest.mark.parametrize(("subresource", "client", "kubelet"), [
    # kubectl exec -it web -- sh: the kubelet's words, "1", keys sorted (url.Values.Encode).
    ("exec", "stdin=true&stdout=true&tty=true&command=sh&container=main",
     "/exec/default/web/main?command=sh&input=1&output=1&tty=1"),
    # kubectl exec web -- sh -c 'echo a&b': the command's words in order, escaped as Go does.
    ("exec", "command=sh&command=-c&command=echo+a%26b&container=main&stderr=true&stdout=true",
     "/exec/default/web/main?command=sh&command=-c&command=echo+a%26b&error=1&output=1"),
    # A bool is false only when absent, 0 or false (any case); empty or any other word is on.
    ("exec", "command=id&stdout=1&stderr=FALSE&stdin=0&tty=",
     "/exec/default/web/main?command=id&output=1&tty=1"),
    ("exec", "command=id&stdout=yes", "/exec/default/web/main?command=id&output=1"),
    # No stream at all is the kubelet's to refuse ("you must specify at least 1 of ...").
    ("exec", "command=id", "/exec/default/web/main?command=id"),
    # Attach has no command: it is not copied.
    ("attach", "container=main&stdin=true&stdout=true&stderr=true&command=x",
     "/attach/default/web/main?error=1&input=1&output=1"),
    # Unknown words are not copied.
    ("attach", "stdout=true&follow=true&port=80", "/attach/default/web/main?output=1"),
    # Port-forward: every port, repeated or comma-joined, in one comma-joined "port".
    ("portforward", "ports=8080&ports=9090,80",
     "/portForward/default/web?port=8080%2C9090%2C80"),
    ("portforward", "", "/portForward/default/web"),
    ("portforward", "container=main&ports=0", "/portForward/default/web?port=0"),
])
def test_the_kubelet_url_for_a_client_url(subresource: str, client: str, kubelet: str) -> None:
    assert _location(subresource, _pod("main"), client) == kubelet


@pytest.mark.parametrize(("subresource", "pod", "query", "message"), [
    ("exec", _pod("a", "b", init=("setup",), ephemeral=("debug",)), "command=id&stdout=1",
     "a container name must be specified for pod web, choose one of: [setup a b debug]"),
    ("attach", _pod(ephemeral=("debug",)), "stdout=1",
     "a container name must be specified for pod web"),
    ("exec", _pod("main"), "container=nope&stdout=1&command=id",
     "container nope is not valid for pod web"),
    # The container is checked before the node, as upstream.
    ("exec", _pod("main", node=""), "container=nope&stdout=1",
     "container nope is not valid for pod web"),
    ("exec", _pod("main", node=""), "stdout=1&command=id",
     "pod web does not have a host assigned"),
    ("portforward", _pod("main", node=""), "ports=80",
     "pod web does not have a host assigned"),
    ("portforward", _pod("main"), "ports=http",
     'cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax'),
    ("portforward", _pod("main"), "ports=80,",
     'cannot convert to []int32: strconv.ParseUint: parsing "": invalid syntax'),
    ("portforward", _pod("main"), "ports=70000",
     'cannot convert to []int32: strconv.ParseUint: parsing "70000": value out of range'),
])
def test_refusals_are_upstreams(subresource: str, pod: dict[str, Any], query: str,
                                message: str) -> None:
    with pytest.raises(APIError) as err:
        _location(subresource, pod, query)
    assert (err.value.code, err.value.message) == (400, message)


@pytest.mark.parametrize(("container", "pod"), [
    ("setup", _pod("a", "b", init=("setup",))),
    ("debug", _pod("a", "b", ephemeral=("debug",))),
])
def test_any_kind_of_container_may_be_named(container: str, pod: dict[str, Any]) -> None:
    assert _location("exec", pod, f"container={container}&stdout=1&command=id") == (
        f"/exec/default/web/{container}?command=id&output=1")


def test_kubectl_exec_reaches_the_kubelet_in_its_words(
        client: RawClient, kubectl: Kubectl, fake_kubelet: list[str]) -> None:
    client.post(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"},
                                         {"name": "side", "image": "busybox:1"}]}})
    done = kubectl.run("exec", "-i", "web", "-c", "side", "--", "sh", "-c", "echo a&b",
                       check=False)
    assert done.returncode != 0  # the stand-in does not upgrade
    assert fake_kubelet, done.stderr
    assert set(fake_kubelet) == {
        "/exec/default/web/side?command=sh&command=-c&command=echo+a%26b&error=1&input=1"
        "&output=1"}


def test_kubectl_attach_reaches_the_kubelet_in_its_words(
        client: RawClient, kubectl: Kubectl, fake_kubelet: list[str]) -> None:
    client.post(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"}]}})
    done = kubectl.run("attach", "web", check=False)
    assert done.returncode != 0
    assert fake_kubelet, done.stderr
    assert set(fake_kubelet) == {"/attach/default/web/app?error=1&output=1"}


def test_a_pod_of_several_containers_needs_one_named(server: EmulatedAPIServer,
                                                      kubectl: Kubectl,
                                                      client: RawClient) -> None:
    client.post(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"},
                                         {"name": "side", "image": "busybox:1"}]}})
    done = kubectl.run("get", "--raw",
                       "/api/v1/namespaces/default/pods/web/exec?command=id&stdout=true",
                       check=False)
    assert done.returncode == 1
    assert "a container name must be specified for pod web, choose one of: [app side]" in (
        done.stderr), done.stderr
