"""The kubelet's certificates: CSRs as upstream makes them, the file store's layout, the
rotation deadline and backoff, the TLS bootstrap's decisions, and the transport using a
rotated pair (against the emulated API server)."""

from __future__ import annotations

import base64
import os
import random
import stat
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from runtime import errors
from runtime.clock import FakeClock
from runtime.kubeapi.bootstrap import TMP_PRIVATE_KEY_FILE, load_client_cert
from runtime.kubeapi.certificate_manager import CertificateManager
from runtime.kubeapi.certificate_store import FileStore, NoCertKeyError
from runtime.kubeapi.client import NODES, KubeClient
from runtime.kubeapi.csr import (
    CLIENT_KUBELET_SIGNER,
    KUBELET_SERVING_SIGNER,
    addresses_to_hostnames_and_ips,
    client_usages,
    digested_name,
    generate_key,
    make_csr,
    node_template,
    serving_template,
    serving_usages,
    wait_for_certificate,
)
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.apiserver.certs import CertificateAuthority
from tests.unit.runtime.csr_fakes import FakeCSRAPI, approve, deny

NODE = "node-a"


# --- CSRs ---------------------------------------------------------------------------------


def test_csr_subject_sans_and_usages_as_upstream() -> None:
    key, pem = generate_key()
    assert b"BEGIN EC PRIVATE KEY" in pem
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    csr = x509.load_pem_x509_csr(make_csr(key, node_template(NODE, ("a.example",),
                                                               ("10.0.0.7",))))
    assert csr.subject.rfc4514_string() == f"CN=system:node:{NODE},O=system:nodes"
    san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["a.example"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.7"]
    assert csr.is_signature_valid
    assert client_usages(key) == ("digital signature", "client auth")
    assert serving_usages(key) == ("digital signature", "server auth")
    rsa_key = rsa.generate_private_key(65537, 2048)
    assert client_usages(rsa_key) == ("digital signature", "key encipherment", "client auth")
    assert serving_usages(rsa_key) == ("digital signature", "key encipherment", "server auth")


def test_digested_name_is_stable_per_key_and_differs_between_keys() -> None:
    key, _ = generate_key()
    other, _ = generate_key()
    template = node_template(NODE)
    usages = client_usages(key)
    name = digested_name(key.public_key(), template, usages)
    assert name == digested_name(key.public_key(), template, usages)
    assert name.startswith("node-csr-") and len(name) == len("node-csr-") + 43
    assert "=" not in name
    assert name != digested_name(other.public_key(), template, usages)
    assert name != digested_name(key.public_key(), node_template("node-b"), usages)


def test_serving_sans_from_the_node_addresses() -> None:
    addresses = [("Hostname", "node-a"), ("InternalIP", "10.0.0.7"), ("ExternalIP", "1.2.3.4"),
                 ("InternalIP", "10.0.0.7"), ("Hostname", "10.0.0.9"), ("InternalDNS", "a.in"),
                 ("ExternalDNS", "a.example"), ("InternalIP", "not-an-ip"), ("Hostname", "")]
    assert addresses_to_hostnames_and_ips(addresses) == (
        ("a.example", "a.in", "node-a"), ("1.2.3.4", "10.0.0.7", "10.0.0.9"))
    template = serving_template(NODE, addresses)
    assert template is not None and template.common_name == f"system:node:{NODE}"
    assert template.organizations == ("system:nodes",)
    # No IP yet: no serving certificate is asked for.
    assert serving_template(NODE, [("Hostname", "node-a")]) is None


def test_wait_for_certificate_names_the_denial() -> None:
    clock = FakeClock()
    api = FakeCSRAPI(clock.now, decide=deny)
    key, _ = generate_key()
    api.create(None, {"metadata": {"name": "x"},  # type: ignore[arg-type]
                      "spec": {"request": base64.b64encode(make_csr(key, node_template(NODE))
                                                           ).decode()}})
    with pytest.raises(errors.CertificateError,
                       match="certificate signing request is denied, reason: NotAllowed, "
                             "message: the test says no"):
        wait_for_certificate(cast(KubeClient, api), "x", "", 60, clock)


def test_wait_for_certificate_times_out_in_upstreams_words() -> None:
    clock = FakeClock()
    api = FakeCSRAPI(clock.now, decide=lambda _csr: None)
    key, _ = generate_key()
    api.create(None, {"metadata": {"name": "x"},  # type: ignore[arg-type]
                      "spec": {"request": base64.b64encode(make_csr(key, node_template(NODE))
                                                           ).decode()}})
    original = api.watch

    def watch_that_takes_time(*args: Any, **kwargs: Any) -> Any:
        clock.step(30)
        return original(*args, **kwargs)

    api.watch = watch_that_takes_time  # type: ignore[method-assign]
    with pytest.raises(errors.CertificateError, match="timed out waiting for the condition"):
        wait_for_certificate(cast(KubeClient, api), "x", "", 100, clock)


# --- the store ----------------------------------------------------------------------------


def _pair(api: FakeCSRAPI, cn: str = f"system:node:{NODE}") -> tuple[bytes, bytes]:
    key, key_pem = generate_key()
    template = node_template(cn.removeprefix("system:node:"))
    return api.sign(make_csr(key, template)), key_pem


def test_store_layout_and_symlink(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now)
    store = FileStore("kubelet-client", str(tmp_path), clock=clock)
    with pytest.raises(NoCertKeyError, match="no cert/key files read at"):
        store.current()
    first = store.update(*_pair(api))
    current = tmp_path / "kubelet-client-current.pem"
    assert current.is_symlink() and os.path.isabs(os.readlink(current))
    stamped = Path(os.readlink(current))
    assert stamped.parent == tmp_path
    assert stamped.name.startswith("kubelet-client-20") and stamped.name.endswith(".pem")
    assert stat.S_IMODE(stamped.stat().st_mode) == 0o600
    text = stamped.read_bytes()
    assert text.index(b"BEGIN CERTIFICATE") < text.index(b"BEGIN EC PRIVATE KEY")
    assert store.current().serial == first.serial
    clock.step(5)
    second = store.update(*_pair(api))
    assert Path(os.readlink(current)) != stamped and stamped.exists()
    assert store.current().serial == second.serial != first.serial
    # A rotation cut between the two renames: the "updated" link is taken on load.
    os.rename(current, tmp_path / "kubelet-client-updated.pem")
    assert FileStore("kubelet-client", str(tmp_path)).current().serial == second.serial
    # A regular file where the link should be is refused, naming it.
    current.unlink()
    current.write_bytes(text)
    with pytest.raises(errors.CertificateError, match="to be a symlink but it is a file"):
        store.update(*_pair(api))


def test_store_refuses_a_key_of_another_certificate(tmp_path: Path) -> None:
    api = FakeCSRAPI(FakeClock().now)
    cert, _ = _pair(api)
    _, other_key = _pair(api)
    with pytest.raises(errors.CertificateError, match="private key does not match public key"):
        FileStore("kubelet-client", str(tmp_path)).update(cert, other_key)


# --- the manager --------------------------------------------------------------------------


class _FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def _manager(tmp_path: Path, clock: FakeClock, api: FakeCSRAPI, rng: random.Random,
             prefix: str = "kubelet-client") -> CertificateManager:
    return CertificateManager(
        store=FileStore(prefix, str(tmp_path), clock=clock), signer_name=CLIENT_KUBELET_SIGNER,
        get_template=lambda: node_template(NODE), get_usages=client_usages,
        client_for=lambda _pair: cast(KubeClient, api), clock=clock, rng=rng)


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
def test_rotation_deadline_is_a_jittered_70_to_90_percent(tmp_path: Path,
                                                          fraction: float) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, lifetime=1000.0)
    FileStore("kubelet-client", str(tmp_path), clock=clock).update(*_pair(api))
    manager = _manager(tmp_path, clock, api, _FixedRandom(fraction))
    pair = manager.current()
    assert pair is not None
    deadline = manager.next_rotation_deadline()
    # Certificates count whole seconds: the lifetime is the signed one.
    expected = pair.not_before + (pair.not_after - pair.not_before) * (0.7 + 0.2 * fraction)
    assert deadline == pytest.approx(expected)


def test_rotation_deadline_bounds_over_many_draws(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, lifetime=120.0)
    FileStore("kubelet-client", str(tmp_path), clock=clock).update(*_pair(api))
    manager = _manager(tmp_path, clock, api, random.Random(7))
    pair = manager.current()
    assert pair is not None
    life = pair.not_after - pair.not_before
    fractions = [(manager.next_rotation_deadline() - pair.not_before) / life
                 for _ in range(200)]
    assert min(fractions) >= 0.7 and max(fractions) <= 0.9
    assert max(fractions) - min(fractions) > 0.1  # jittered, not one value


def test_no_certificate_rotates_at_once_and_a_round_stores_and_tells(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, lifetime=600.0)
    manager = _manager(tmp_path, clock, api, random.Random(1))
    assert manager.current() is None
    assert manager.next_rotation_deadline() == clock.now()
    seen: list[int] = []
    manager.subscribe(lambda pair: seen.append(pair.serial))
    before = manager.generation
    assert manager.rotate()
    pair = manager.current()
    assert pair is not None and seen == [pair.serial]
    assert manager.generation == before + 1
    (request,) = api.created
    assert request["spec"]["signerName"] == CLIENT_KUBELET_SIGNER
    assert request["spec"]["usages"] == ["digital signature", "client auth"]
    assert request["metadata"]["name"].startswith("csr-")  # generateName, as upstream
    assert os.path.realpath(tmp_path / "kubelet-client-current.pem") == pair.path
    # Expired: the manager has none to hand out (and rotates at once).
    clock.step(601)
    assert manager.current() is None and manager.client_pair() is None


def test_a_denied_round_fails_and_backs_off_as_upstream(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, decide=deny)
    manager = _manager(tmp_path, clock, api, _FixedRandom(0.0))
    assert not manager.rotate()
    assert manager.renew_failures == 1 and manager.current() is None
    assert [manager.retry_delay(n) for n in range(1, 8)] == [2.0, 4.0, 8.0, 16.0, 32.0, 32.0,
                                                             32.0]


def test_a_certificate_missing_the_templates_names_is_rotated_at_once(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now)
    FileStore("kubelet-server", str(tmp_path), clock=clock).update(*_pair(api))
    addresses = [("InternalIP", "10.0.0.7")]
    manager = CertificateManager(
        store=FileStore("kubelet-server", str(tmp_path), clock=clock),
        signer_name=KUBELET_SERVING_SIGNER,
        get_template=lambda: serving_template(NODE, addresses), get_usages=serving_usages,
        client_for=lambda _pair: cast(KubeClient, api), clock=clock)
    assert manager.next_rotation_deadline() == clock.now()  # 10.0.0.7 is not in it
    assert manager.rotate()
    pair = manager.current()
    assert pair is not None and pair.ip_addresses == ("10.0.0.7",)
    assert api.created[-1]["spec"]["usages"] == ["digital signature", "server auth"]
    assert manager.next_rotation_deadline() > clock.now()


def test_the_watchdog_exits_only_after_five_minutes_without_a_valid_cert(
        tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, lifetime=100.0)
    manager = _manager(tmp_path, clock, api, random.Random(1))
    assert manager.rotate()
    clock.step(100)  # the last moment it is valid: seen by the 10 s check
    assert not manager.exit_due()
    clock.step(1)  # expired
    assert not manager.exit_due()
    clock.step(299)
    assert not manager.exit_due()  # five minutes since it was last seen valid: not yet
    clock.step(1)
    assert manager.exit_due()  # the server answered its last request


# --- the bootstrap ------------------------------------------------------------------------


def _bootstrap_kubeconfig(path: Path, ca: CertificateAuthority) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": "https://127.0.0.1:1",
            "certificate-authority-data": base64.b64encode(ca.cert_pem).decode()}}],
        "users": [{"name": "tls-bootstrap-token-user",
                   "user": {"token": "abcdef.0123456789abcdef"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c",
                                               "user": "tls-bootstrap-token-user"}}],
        "current-context": "c"}))
    return path


def _bootstrap(tmp_path: Path, clock: FakeClock, api: FakeCSRAPI) -> bool:
    return load_client_cert(str(tmp_path / "kubelet.conf"),
                            str(_bootstrap_kubeconfig(tmp_path / "bootstrap.conf", api.ca)),
                            str(tmp_path / "pki"), NODE, clock, server_wait=0,
                            client_for=lambda _rest: cast(KubeClient, api))


def test_bootstrap_writes_the_cert_and_a_kubeconfig_then_is_not_needed_again(
        tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, lifetime=3600.0)
    assert _bootstrap(tmp_path, clock, api)
    (request,) = api.created
    spec = request["spec"]
    assert spec["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    assert spec["usages"] == ["digital signature", "client auth"]
    csr = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
    assert csr.subject.rfc4514_string() == f"CN=system:node:{NODE},O=system:nodes"
    assert request["metadata"]["name"] == digested_name(
        csr.public_key(), node_template(NODE), spec["usages"])
    pem = tmp_path / "pki" / "kubelet-client-current.pem"
    assert pem.is_symlink()
    assert not (tmp_path / "pki" / TMP_PRIVATE_KEY_FILE).exists()
    doc = yaml.safe_load((tmp_path / "kubelet.conf").read_text())
    user = doc["users"][0]["user"]
    assert user == {"client-certificate": str(pem), "client-key": str(pem)}
    assert doc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    rest = load_kubeconfig(tmp_path / "kubelet.conf")
    assert rest.cert_data and b"BEGIN CERTIFICATE" in rest.cert_data
    assert rest.ca_data == api.ca.cert_pem
    # A restart with a valid certificate does not bootstrap again.
    assert not _bootstrap(tmp_path, clock, api)
    assert len(api.created) == 1
    # Once it has expired, it does, with the same key: while the old request (its
    # certificate expired) is there, it is not reused (upstream's ensureCompatible)...
    clock.step(3601)
    with pytest.raises(errors.CertificateError, match="retrieved csr is not compatible: one "
                                                      "of the certificates for the CSR has "
                                                      "expired"):
        _bootstrap(tmp_path, clock, api)
    # ... and once the API server's CSR cleaner removed it, a new one is made.
    api.csrs.clear()
    assert _bootstrap(tmp_path, clock, api)
    assert len(api.created) == 2
    assert api.created[1]["metadata"]["name"] == request["metadata"]["name"]


def test_a_denied_bootstrap_fails_naming_the_reason_and_keeps_its_key(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    api = FakeCSRAPI(clock.now, decide=deny)
    with pytest.raises(errors.CertificateError, match="denied, reason: NotAllowed"):
        _bootstrap(tmp_path, clock, api)
    key_file = tmp_path / "pki" / TMP_PRIVATE_KEY_FILE
    assert key_file.exists() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not (tmp_path / "kubelet.conf").exists()
    # The next start asks with the same key: the same CSR name, found and reused.
    api.decide = approve
    first = api.created[0]["metadata"]["name"]
    api.csrs[first]["status"] = {}
    api.csrs[first]["status"]["conditions"] = [{"type": "Approved", "reason": "R",
                                                "message": "m"}]
    api.csrs[first]["status"]["certificate"] = base64.b64encode(
        api.sign(base64.b64decode(api.csrs[first]["spec"]["request"]))).decode()
    assert _bootstrap(tmp_path, clock, api)
    assert len(api.created) == 1  # AlreadyExists: the existing request was reused


def test_an_unreadable_bootstrap_kubeconfig_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bootstrap.conf"
    bad.write_text("kind: Config\ncurrent-context: nope\n")
    with pytest.raises(errors.KubeconfigError, match=f"unable to load bootstrap kubeconfig: "
                                                      f"kubeconfig {bad}"):
        load_client_cert(str(tmp_path / "kubelet.conf"), str(bad), str(tmp_path / "pki"),
                         NODE, FakeClock(), server_wait=0)


# --- the transport ------------------------------------------------------------------------


class _Source:
    def __init__(self, pair: tuple[bytes, bytes]) -> None:
        self.pair: tuple[bytes, bytes] | None = pair
        self.generation = 1

    def client_pair(self) -> tuple[bytes, bytes] | None:
        return self.pair


def test_the_transport_uses_a_rotated_pair_for_new_connections(tmp_path: Path) -> None:
    policy = (Rules().allow("system:node:b", resource="nodes")
              .allow("system:node:a", verbs=("watch",), resource="nodes"))
    with EmulatedAPIServer(authorizer=policy) as server:
        rest = load_kubeconfig(server.write_kubeconfig(tmp_path / "k", "system:node:a",
                                                       groups=("system:nodes",)))
        a = server.client_cert("system:node:a", ("system:nodes",))
        b = server.client_cert("system:node:b", ("system:nodes",))
        source = _Source((a.cert_pem, a.key_pem))
        transport = Transport(rest, certificates=source)
        client = KubeClient(transport)
        try:
            with pytest.raises(errors.APIForbidden):
                client.list(NODES)
            stream = transport.stream("/api/v1/nodes", query={"watch": "true"}, timeout=60)
            # Rotated: the old connections are closed, the watch cut, the new pair used.
            source.pair, source.generation = (b.cert_pem, b.key_pem), 2
            transport.certificate_rotated()
            try:
                while stream.readline():
                    pass
                cut = True  # ended at once
            except errors.APIUnreachable as err:
                cut = not isinstance(err.__cause__, TimeoutError)  # not the read timeout
            assert cut
            assert client.list(NODES).items == ()
            # No valid pair: no client certificate is sent at all.
            source.pair, source.generation = None, 3
            transport.certificate_rotated()
            with pytest.raises(errors.APIUnauthorized):
                client.list(NODES)
        finally:
            transport.close()
