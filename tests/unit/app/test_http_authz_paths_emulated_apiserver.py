"""Every path of the main port against every subresource: the SubjectAccessReviews the
kubelet asks the emulated API server for, in order, with KubeletFineGrainedAuthz's
fallback to ``proxy`` (upstream's GetRequestAttributes and InstallAuthFilter)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon
import pytest

from actors.app.http.auth import (
    WEBHOOK,
    APIReviews,
    AuthSettings,
    KubeletAuth,
    UserInfo,
    is_subpath,
    request_attributes,
)
from actors.app.http.routes import WSGIApp
from actors.app.http.server import ANY_PORT, DISABLED, MAIN, KubeletHTTPServer
from actors.app.http.stats import StatsEndpoints
from actors.app.http.stream_routes import StreamHost
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from actors.kubelet.stats_collector import StatsCache
from runtime import errors
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.unit.app.test_http_auth_emulated_apiserver import Answer, Kubelet
from tests.unit.app.test_http_server import FakeView

NODE = "node-a"
CONFIGZ = b'{"kubeletconfig":{}}'

# Each route the main port serves (its falcon template), a path it answers, and the
# subresources upstream asks for that path, in order.
SERVED: dict[str, tuple[str, tuple[str, ...]]] = {
    "/healthz": ("/healthz", ("healthz", "proxy")),
    "/healthz/{check}": ("/healthz/syncloop", ("healthz", "proxy")),
    "/pods": ("/pods", ("pods", "proxy")),
    "/runningpods": ("/runningpods", ("pods", "proxy")),
    "/runningpods/": ("/runningpods/", ("pods", "proxy")),
    "/configz": ("/configz", ("configz", "proxy")),
    "/metrics": ("/metrics", ("metrics",)),
    "/metrics/resource": ("/metrics/resource", ("metrics",)),
    "/metrics/cadvisor": ("/metrics/cadvisor", ("metrics",)),
    "/metrics/probes": ("/metrics/probes", ("metrics",)),
    "/stats/summary": ("/stats/summary", ("stats",)),
    "/containerLogs/{namespace}/{pod}/{container}": ("/containerLogs/ns/p/c", ("proxy",)),
    "/exec/{namespace}/{pod}/{name}": ("/exec/ns/p/c", ("proxy",)),
    "/exec/{namespace}/{pod}/{name}/{container}": ("/exec/ns/p/uid/c", ("proxy",)),
    "/attach/{namespace}/{pod}/{name}": ("/attach/ns/p/c", ("proxy",)),
    "/attach/{namespace}/{pod}/{name}/{container}": ("/attach/ns/p/uid/c", ("proxy",)),
    "/portForward/{namespace}/{pod}": ("/portForward/ns/p", ("proxy",)),
    "/portForward/{namespace}/{pod}/{name}": ("/portForward/ns/p/uid", ("proxy",)),
    "/debug/timeline": ("/debug/timeline", ("proxy",)),
}

# Paths not served here, authorized all the same (before routing, as upstream's filter).
UNSERVED: dict[str, tuple[str, ...]] = {
    "/stats": ("stats",), "/stats/": ("stats",), "/logs/": ("log",),
    "/logs/kubelet.log": ("log",), "/logs": ("log",), "/checkpoint/ns/p/c": ("checkpoint",),
    "/flagz": ("configz",), "/statusz": ("statusz",), "/spec/": ("proxy",),
    "/run/ns/p/c": ("proxy",), "/debug/pprof/heap": ("proxy",), "/podsx": ("proxy",),
    "/pods/x": ("pods", "proxy"), "/healthzz": ("proxy",), "/configz/x": ("configz", "proxy"),
    "/metricsx": ("proxy",), "/statsx": ("proxy",), "/runningpodsx": ("proxy",), "/": ("proxy",),
}

TABLE = [*SERVED.values(), *UNSERVED.items()]
METHODS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
           "DELETE": "delete", "HEAD": "", "OPTIONS": ""}


def _routes(nodes: Any) -> Iterator[str]:
    for node in nodes:
        if node.resource is not None:
            yield node.uri_template
        yield from _routes(node.children)


def _server(view: FakeView, tls: tuple[Any, str, str] | None = None,
            auth: KubeletAuth | None = None) -> KubeletHTTPServer:
    """The main port as the daemon builds it: stats, streams, timeline and /configz."""
    return KubeletHTTPServer(view, port=ANY_PORT, read_only_port=DISABLED,
                             healthz_port=DISABLED, tls=tls, auth=auth,
                             stats=StatsEndpoints(StatsCache()),
                             streams=StreamHost(view, object()),  # type: ignore[arg-type]
                             configz=CONFIGZ)


def test_the_table_names_every_route_the_main_port_serves(tmp_path: Path) -> None:
    app: WSGIApp = _server(FakeView(tmp_path))._app(MAIN)
    assert isinstance(app, falcon.App)
    assert sorted(_routes(app._router._roots)) == sorted(SERVED)


@pytest.mark.parametrize(("path", "expected"), TABLE, ids=[p for p, _ in TABLE])
@pytest.mark.parametrize("method", METHODS)
def test_request_attributes_as_upstream(method: str, path: str,
                                        expected: tuple[str, ...]) -> None:
    attrs = request_attributes(UserInfo("u"), method, path, NODE)
    assert [a.subresource for a in attrs] == list(expected)
    assert [(a.verb, a.resource, a.name, a.path, a.user.name) for a in attrs] == [
        (METHODS[method], "nodes", NODE, path, "u")] * len(expected)


@pytest.mark.parametrize(("subpath", "path", "expected"), [
    ("", "", True), ("/foo", "/foo", True), ("/foo/", "/foo/", True), ("/foo", "/", True),
    ("/foo/bar", "/", True), ("/foo/", "/foo", True), ("/foo/bar", "/foo", True),
    ("/foo", "/bar", False), ("/foo", "/foobar", False), ("/foobar", "/foo", False),
])
def test_is_subpath_as_upstream(subpath: str, path: str, expected: bool) -> None:
    assert is_subpath(subpath, path) is expected


# --- through the server, against the emulated API server -------------------------------

@dataclass
class Cluster:
    apiserver: EmulatedAPIServer
    kubelet: Kubelet
    users: Iterator[int]

    @property
    def rules(self) -> Rules:
        policy = self.apiserver.sar_policy
        assert isinstance(policy, Rules)
        return policy

    def user(self, prefix: str) -> tuple[str, str]:
        """A new user (so no answer the kubelet cached is reused) and its token."""
        n = next(self.users)
        name, token = f"{prefix}-{n}", f"token-{prefix}-{n}"
        self.apiserver.add_token(token, name)
        return name, token

    def asked(self, user: str) -> list[tuple[Any, ...]]:
        """The SubjectAccessReviews asked for ``user``: verb, resource, subresource, name,
        version, and whether each was allowed."""
        out = []
        for review in self.apiserver.reviews_of("SubjectAccessReview"):
            spec: Mapping[str, Any] = review["spec"]
            if spec["user"] != user:
                continue
            ra = spec["resourceAttributes"]
            out.append((ra["verb"], ra["resource"], ra["subresource"], ra["name"],
                        ra["version"], review["status"]["allowed"]))
        return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Upstream's cluster defaults: no anonymous, token webhook, Webhook authorization."""
    tmp = tmp_path_factory.mktemp("authz")
    with EmulatedAPIServer(sar_policy=Rules()) as apiserver:
        config = load_kubeconfig(apiserver.write_kubeconfig(
            tmp / "kubelet.kubeconfig", f"system:node:{NODE}", groups=("system:nodes",)))
        transport = Transport(config)
        tls = TLSSettings(cert_dir=str(tmp / "pki"), node_name=NODE, node_ips=("127.0.0.1",))
        cert, key = serving_pair(tls)
        auth = KubeletAuth(AuthSettings(NODE, anonymous=False, token_webhook=True,
                                        mode=WEBHOOK), APIReviews(KubeClient(transport)))
        server = _server(FakeView(tmp), (server_context(tls, cert, key), cert, key), auth)
        server.start()
        try:
            yield Cluster(apiserver, Kubelet(server, cert, tmp), itertools.count())
        finally:
            server.stop()
            transport.close()


def _let_in(answer: Answer) -> bool:
    """Past the auth filter: whatever the handler made of it (a 404 on an unserved path,
    the stats not collected yet), not the filter's 401, 403 or 500."""
    return answer.status not in (401, 403) and not answer.body.startswith(
        "Authorization error")


def _sars(subresources: tuple[str, ...], allowed: tuple[bool, ...],
          verb: str = "get") -> list[tuple[Any, ...]]:
    return [(verb, "nodes", sub, NODE, "v1", ok) for sub, ok in zip(subresources, allowed,
                                                                     strict=True)]


@pytest.mark.parametrize(("path", "expected"), TABLE, ids=[p for p, _ in TABLE])
def test_denied_every_subresource_is_asked_in_order_then_403_emulated_apiserver(
        cluster: Cluster, path: str, expected: tuple[str, ...]) -> None:
    user, token = cluster.user("nobody")
    assert cluster.kubelet.call(path, token=token) == Answer(
        403, f"Forbidden (user={user}, verb=get, resource=nodes, "
             f"subresource(s)=[{' '.join(expected)}])\n")
    assert cluster.asked(user) == _sars(expected, (False,) * len(expected))


@pytest.mark.parametrize(("path", "expected"), TABLE, ids=[p for p, _ in TABLE])
def test_the_first_subresource_alone_lets_the_request_in_emulated_apiserver(
        cluster: Cluster, path: str, expected: tuple[str, ...]) -> None:
    user, token = cluster.user("narrow")
    cluster.rules.allow(user, verbs=("get",), subresources=(expected[0],), name=NODE)
    assert _let_in(cluster.kubelet.call(path, token=token))
    assert cluster.asked(user) == _sars(expected[:1], (True,))  # no fallback asked


FINE_GRAINED = [(p, e) for p, e in TABLE if len(e) == 2]


@pytest.mark.parametrize(("path", "expected"), FINE_GRAINED,
                         ids=[p for p, _ in FINE_GRAINED])
def test_proxy_alone_lets_a_fine_grained_path_in_through_the_fallback_emulated_apiserver(
        cluster: Cluster, path: str, expected: tuple[str, ...]) -> None:
    user, token = cluster.user("proxy")
    cluster.rules.allow(user, verbs=("get",), subresources=("proxy",), name=NODE)
    assert _let_in(cluster.kubelet.call(path, token=token))
    assert cluster.asked(user) == _sars(expected, (False, True))


def test_pods_alone_opens_pods_and_runningpods_only_emulated_apiserver(
        cluster: Cluster) -> None:
    user, token = cluster.user("pods")
    cluster.rules.allow(user, verbs=("get",), subresources=("pods",), name=NODE)
    assert cluster.kubelet.call("/pods", token=token).status == 200
    assert cluster.kubelet.call("/runningpods/", token=token).status == 200
    assert cluster.kubelet.call("/exec/ns/p/c", token=token).status == 403
    assert cluster.kubelet.call("/stats/summary", token=token).status == 403
    assert cluster.kubelet.call("/healthz", token=token).status == 403
    assert cluster.kubelet.call("/configz", token=token).status == 403
    # A POST to /pods asks "create" on both, and is refused.
    assert cluster.kubelet.call("/pods", token=token, method="POST") == Answer(
        403, f"Forbidden (user={user}, verb=create, resource=nodes, "
             "subresource(s)=[pods proxy])\n")


def test_head_asks_with_an_empty_verb_as_upstream_emulated_apiserver(
        cluster: Cluster) -> None:
    # Upstream's verb switch names no HEAD: a role granting "get" does not cover it.
    user, token = cluster.user("head")
    cluster.rules.allow(user, verbs=("get",), name=NODE)
    assert cluster.kubelet.call("/pods", token=token, method="HEAD").status == 403
    assert cluster.asked(user) == _sars(("pods", "proxy"), (False, False), verb="")


def test_configz_is_served_to_whom_configz_is_allowed_emulated_apiserver(
        cluster: Cluster) -> None:
    user, token = cluster.user("configz")
    cluster.rules.allow(user, verbs=("get",), subresources=("configz",), name=NODE)
    assert cluster.kubelet.call("/configz", token=token) == Answer(200, CONFIGZ.decode())
    assert cluster.kubelet.call("/flagz", token=token).status == 404  # allowed, not served


# --- a review that cannot be made -----------------------------------------------------------

class FailingReviews:
    """A SubjectAccessReview that fails (the API server away), after ``allowed`` answers."""

    def __init__(self) -> None:
        self.sars: list[Mapping[str, Any]] = []

    def token_review(self, token: str) -> Mapping[str, Any]:
        return {"authenticated": True, "user": {"username": "alice"}}

    def subject_access_review(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        self.sars.append(spec)
        raise errors.APIUnreachable("connection refused")


def test_a_failed_review_is_500_naming_its_subresource_and_the_fallback_is_not_asked(
        tmp_path: Path) -> None:
    tls = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                      node_ips=("127.0.0.1",))
    cert, key = serving_pair(tls)
    reviews = FailingReviews()
    auth = KubeletAuth(AuthSettings(NODE, anonymous=False, token_webhook=True,
                                    mode=WEBHOOK), reviews)
    server = _server(FakeView(tmp_path), (server_context(tls, cert, key), cert, key), auth)
    server.start()
    try:
        kubelet = Kubelet(server, cert, tmp_path)
        assert kubelet.call("/pods", token="t") == Answer(
            500, "Authorization error (user=alice, verb=get, resource=nodes, "
                 "subresource=pods)")
        assert [s["resourceAttributes"]["subresource"] for s in reviews.sars] == ["pods"]
    finally:
        server.stop()
