"""The main port over HTTPS with authentication and authorization, against the emulated API
server's TokenReview and SubjectAccessReview (tests/apiserver), and the pieces alone."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from actors.app.http.auth import (
    ALWAYS_ALLOW,
    WEBHOOK,
    APIReviews,
    AuthSettings,
    KubeletAuth,
    UserInfo,
    request_attributes,
)
from actors.app.http.server import ANY_PORT, DISABLED, MAIN, KubeletHTTPServer
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from runtime import errors
from runtime.errors import ConfigError
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.apiserver.certs import CertificateAuthority
from tests.unit.app.test_http_server import FakeView

NODE = "node-a"


@dataclass(frozen=True)
class Answer:
    status: int
    body: str


@dataclass
class Kubelet:
    """A KubeletHTTPServer whose main port is HTTPS, and a way to call it."""

    server: KubeletHTTPServer
    cert_file: str
    workdir: Path

    @property
    def port(self) -> int:
        return self.server.bound_ports[MAIN]

    def context(self, pair: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.cert_file)  # the self-signed CA
        if pair is not None:
            cert, key = self.workdir / "client.crt", self.workdir / "client.key"
            cert.write_bytes(pair[0])
            key.write_bytes(pair[1])
            ctx.load_cert_chain(str(cert), str(key))
        return ctx

    def call(self, path: str, *, method: str = "GET", token: str | None = None,
             pair: tuple[bytes, bytes] | None = None) -> Answer:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                           context=self.context(pair))
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            conn.request(method, path, headers=headers)
            response = conn.getresponse()
            return Answer(response.status, response.read().decode())
        finally:
            conn.close()


@pytest.fixture
def apiserver() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(sar_policy=Rules()) as srv:
        yield srv


@pytest.fixture
def kube_client(apiserver: EmulatedAPIServer, tmp_path: Path) -> Iterator[KubeClient]:
    config = load_kubeconfig(apiserver.write_kubeconfig(
        tmp_path / "kubelet.kubeconfig", f"system:node:{NODE}", groups=("system:nodes",)))
    transport = Transport(config)
    yield KubeClient(transport)
    transport.close()


def _start(tmp_path: Path, settings: AuthSettings, reviews: Any,
           client_ca: bytes | None) -> Kubelet:
    ca_file = ""
    if client_ca is not None:
        ca_path = tmp_path / "client-ca.crt"
        ca_path.write_bytes(client_ca)
        ca_file = str(ca_path)
    tls = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                      client_ca_file=ca_file, node_ips=("127.0.0.1",))
    cert, key = serving_pair(tls)
    auth = KubeletAuth(
        AuthSettings(**{**settings.__dict__, "client_ca_file": ca_file}), reviews)
    view = FakeView(tmp_path)
    server = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=DISABLED, tls=(server_context(tls, cert, key),
                                                           cert, key), auth=auth)
    server.start()
    return Kubelet(server, cert, tmp_path)


@pytest.fixture
def kubelet(apiserver: EmulatedAPIServer, kube_client: KubeClient,
            tmp_path: Path) -> Iterator[Kubelet]:
    """Upstream's KubeletConfiguration defaults: anonymous off, token webhook, Webhook."""
    settings = AuthSettings(NODE, anonymous=False, token_webhook=True, mode=WEBHOOK)
    k = _start(tmp_path, settings, APIReviews(kube_client), apiserver.ca.cert_pem)
    yield k
    k.server.stop()


def _pair(apiserver: EmulatedAPIServer, user: str, *groups: str) -> tuple[bytes, bytes]:
    pair = apiserver.client_cert(user, groups)
    return pair.cert_pem, pair.key_pem


def _sar_attrs(review: Mapping[str, Any]) -> tuple[Any, ...]:
    spec = review["spec"]
    ra = spec["resourceAttributes"]
    return (spec["user"], ra["verb"], ra["resource"], ra.get("subresource"), ra["name"])


# --- the serving certificate ------------------------------------------------------------

def test_a_self_signed_serving_pair_is_made_once_in_the_cert_dir_and_reused(
        tmp_path: Path) -> None:
    settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                           node_ips=("10.0.0.7",))
    cert, key = serving_pair(settings)
    assert (cert, key) == (str(tmp_path / "pki/kubelet.crt"), str(tmp_path / "pki/kubelet.key"))
    assert Path(key).stat().st_mode & 0o777 == 0o600
    chain = x509.load_pem_x509_certificates(Path(cert).read_bytes())
    assert len(chain) == 2  # the serving certificate, then its throw-away CA
    serving, ca = chain
    common_name = serving.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert str(common_name).startswith(f"{NODE}@")
    assert str(ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value).startswith(
        f"{NODE}-ca@")
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [NODE]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["10.0.0.7"]
    before = Path(cert).read_bytes()
    assert serving_pair(settings) == (cert, key)
    assert Path(cert).read_bytes() == before  # reused, not made again


def test_tls_flags_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="go together"):
        serving_pair(TLSSettings(str(tmp_path), NODE, cert_file="a.crt"))
    with pytest.raises(ConfigError, match="--tls-min-version"):
        serving_pair(TLSSettings(str(tmp_path), NODE, min_version="VersionTLS14"))
    with pytest.raises(ConfigError, match="--tls-cipher-suites"):
        serving_pair(TLSSettings(str(tmp_path), NODE, cipher_suites=("TLS_NOPE",)))


# --- authentication and authorization against the emulated API server -------------------

def test_a_request_without_credentials_is_401_and_asks_nothing_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    assert kubelet.call("/pods") == Answer(401, "Unauthorized")
    assert kubelet.call("/no/such/path") == Answer(401, "Unauthorized")
    assert apiserver.reviews == []


def test_a_certificate_from_another_ca_gets_nothing_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    stranger = CertificateAuthority("not-the-cluster").issue("kubernetes-admin",
                                                             ("system:masters",))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        kubelet.call("/pods", pair=(stranger.cert_pem, stranger.key_pem))
    assert apiserver.reviews == []


def test_a_token_the_api_denies_is_401_and_the_answer_is_cached_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    assert kubelet.call("/pods", token="not-a-token") == Answer(401, "Unauthorized")
    assert kubelet.call("/pods", token="not-a-token") == Answer(401, "Unauthorized")
    reviews = apiserver.reviews_of("TokenReview")
    assert len(reviews) == 1  # the second request was answered from the cache
    assert reviews[0]["spec"]["token"] == "not-a-token"
    assert not reviews[0]["status"]["authenticated"]
    assert apiserver.reviews_of("SubjectAccessReview") == []


def test_a_certificate_user_not_authorized_is_403_after_one_review_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    pair = _pair(apiserver, "jane", "developers")
    assert kubelet.call("/exec/ns/p/c", pair=pair) == Answer(
        403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[proxy])\n")
    assert kubelet.call("/exec/ns/p/c", pair=pair).status == 403
    [review] = apiserver.reviews_of("SubjectAccessReview")  # denied: cached 30 s
    assert _sar_attrs(review) == ("jane", "get", "nodes", "proxy", NODE)
    assert review["spec"]["groups"] == ["developers", "system:authenticated"]
    assert review["spec"]["resourceAttributes"]["version"] == "v1"
    assert apiserver.reviews_of("TokenReview") == []


def test_an_authorized_certificate_user_gets_200_and_each_subresource_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    apiserver.sar_policy.allow("kube-apiserver-kubelet-client",  # type: ignore[attr-defined]
                               verbs=("get",), subresources=("proxy", "metrics"))
    pair = _pair(apiserver, "kube-apiserver-kubelet-client", "kubeadm:cluster-admins")
    answer = kubelet.call("/pods", pair=pair)
    assert answer.status == 200 and '"PodList"' in answer.body
    assert kubelet.call("/metrics", pair=pair).status == 200
    assert kubelet.call("/healthz", pair=pair) == Answer(200, "ok")
    assert kubelet.call("/stats/summary", pair=pair).status == 403
    assert kubelet.call("/logs/", pair=pair).status == 403
    assert kubelet.call("/pods", pair=pair, method="POST").status == 403
    asked = [_sar_attrs(r)[1:4] for r in apiserver.reviews_of("SubjectAccessReview")]
    # /pods and /healthz ask their own subresource first, then proxy (whose allowed
    # answer /healthz found cached).
    assert asked == [("get", "nodes", "pods"), ("get", "nodes", "proxy"),
                     ("get", "nodes", "metrics"), ("get", "nodes", "healthz"),
                     ("get", "nodes", "stats"), ("get", "nodes", "log"),
                     ("create", "nodes", "pods"), ("create", "nodes", "proxy")]


def test_a_token_user_is_authorized_and_both_answers_are_cached_emulated_apiserver(
        kubelet: Kubelet, apiserver: EmulatedAPIServer) -> None:
    apiserver.add_token("metrics-token", "system:serviceaccount:monitoring:prometheus",
                        ("system:serviceaccounts",))
    apiserver.sar_policy.allow("system:serviceaccounts",  # type: ignore[attr-defined]
                               verbs=("get",), subresources=("metrics",), name=NODE)
    assert kubelet.call("/metrics", token="metrics-token").status == 200
    assert kubelet.call("/metrics", token="metrics-token").status == 200
    assert kubelet.call("/pods", token="metrics-token").status == 403
    [token_review] = apiserver.reviews_of("TokenReview")
    assert token_review["status"]["authenticated"]
    sars = apiserver.reviews_of("SubjectAccessReview")
    assert [_sar_attrs(r) for r in sars] == [
        ("system:serviceaccount:monitoring:prometheus", "get", "nodes", "metrics", NODE),
        ("system:serviceaccount:monitoring:prometheus", "get", "nodes", "pods", NODE),
        ("system:serviceaccount:monitoring:prometheus", "get", "nodes", "proxy", NODE)]
    assert "system:serviceaccounts" in sars[0]["spec"]["groups"]


def test_anonymous_and_always_allow_as_upstreams_flag_defaults(tmp_path: Path) -> None:
    k = _start(tmp_path, AuthSettings(NODE), None, None)
    try:
        assert k.call("/healthz") == Answer(200, "ok")
        assert k.call("/pods").status == 200
        # A presented token is never anonymous: without the webhook it is refused.
        assert k.call("/pods", token="anything") == Answer(401, "Unauthorized")
    finally:
        k.server.stop()


def test_webhooks_need_an_api_server() -> None:
    with pytest.raises(ValueError, match="token webhook"):
        KubeletAuth(AuthSettings(NODE, token_webhook=True), None)
    with pytest.raises(ValueError, match="Webhook"):
        KubeletAuth(AuthSettings(NODE, mode=WEBHOOK), None)


# --- the pieces alone ---------------------------------------------------------------------

@dataclass
class FakeReviews:
    allowed: bool = True
    users: dict[str, str] = field(default_factory=dict)
    tokens: list[str] = field(default_factory=list)
    sars: list[Mapping[str, Any]] = field(default_factory=list)
    down: bool = False

    def token_review(self, token: str) -> Mapping[str, Any]:
        if self.down:
            raise errors.APIUnreachable("connection refused")
        self.tokens.append(token)
        name = self.users.get(token)
        return {"authenticated": True, "user": {"username": name}} if name else {}

    def subject_access_review(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.down:
            raise errors.APIUnreachable("connection refused")
        self.sars.append(spec)
        return {"allowed": self.allowed}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_ttls_are_upstreams() -> None:
    clock = Clock()
    reviews = FakeReviews(users={"good": "alice"})
    auth = KubeletAuth(AuthSettings(NODE, anonymous=False, token_webhook=True, mode=WEBHOOK),
                       reviews, now=clock)
    authn, authz = auth.authenticator, auth.authorizer
    alice = authn.authenticate(None, "Bearer good")
    assert alice == UserInfo("alice", ("system:authenticated",))
    with pytest.raises(Exception, match="did not authenticate"):
        authn.authenticate(None, "Bearer bad")
    clock.now += 119
    authn.authenticate(None, "Bearer good")
    with pytest.raises(Exception, match="did not authenticate"):
        authn.authenticate(None, "Bearer bad")
    assert reviews.tokens == ["good", "bad"]  # both answers kept 2 min
    clock.now += 2
    authn.authenticate(None, "Bearer good")
    assert reviews.tokens == ["good", "bad", "good"]

    [attrs] = request_attributes(alice, "GET", "/exec/ns/p/c", NODE)
    assert authz.authorize(attrs)
    clock.now += 299
    assert authz.authorize(attrs)
    assert len(reviews.sars) == 1  # allowed: 5 min
    clock.now += 2
    reviews.allowed = False
    assert not authz.authorize(attrs)
    clock.now += 29
    assert not authz.authorize(attrs)
    assert len(reviews.sars) == 2  # denied: 30 s
    clock.now += 2
    reviews.allowed = True
    assert authz.authorize(attrs)
    assert len(reviews.sars) == 3


def test_an_api_server_that_cannot_answer_is_401_or_500_and_not_cached(
        tmp_path: Path) -> None:
    reviews = FakeReviews(users={"good": "alice"}, down=True)
    settings = AuthSettings(NODE, anonymous=False, token_webhook=True, mode=WEBHOOK)
    k = _start(tmp_path, settings, reviews, None)
    try:
        assert k.call("/pods", token="good") == Answer(401, "Unauthorized")
        reviews.down = False
        assert k.call("/pods", token="good").status == 200  # the failure was not cached
        auth_only = KubeletAuth(settings, reviews)
        reviews.down = True
        with pytest.raises(Exception, match="connection refused"):
            auth_only.authorizer.authorize(
                request_attributes(UserInfo("bob"), "GET", "/pods", NODE)[0])
    finally:
        k.server.stop()


def test_always_allow_never_asks() -> None:
    reviews = FakeReviews(allowed=False)
    auth = KubeletAuth(AuthSettings(NODE, mode=ALWAYS_ALLOW), reviews)
    assert all(auth.authorizer.authorize(a)
               for a in request_attributes(UserInfo("x"), "GET", "/pods", NODE))
    assert reviews.sars == []
