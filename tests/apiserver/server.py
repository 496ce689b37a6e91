"""EmulatedAPIServer: the emulated kube-apiserver a test starts, and the controls it holds.

A listener thread accepts connections and serves each on its own thread with the request
handler (handler.py: HTTP/1.1, keep-alive, chunked watch streams), after a TLS handshake that
asks for an optional client certificate. The server holds the state the handler serves: the
store and its registry (registry.py), the authenticator and the test's policies, the fault
rules and the request log. CertificateSigningRequests are approved and signed by
kube-controller-manager's controllers, emulated on a thread of their own (csrcontrollers.py);
bootstrap tokens authenticate from kube-system Secrets (bootstrap.py). Tests drive it through
its methods: kubeconfigs and credentials, bootstrap tokens and CSR decisions, watches cut or
expired, history compacted, and network partitions.

Not emulated: server-side apply, protobuf, garbage collection of dependents, admission beyond
the ServiceAccount and DefaultTolerationSeconds plug-ins, and OpenAPI schemas (/openapi/v2 is
404; /openapi/v3 has only what tells kubectl to validate on the server, see
resources.openapi_v3).
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import select
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.apiserver import bootstrap, csr, errors
from tests.apiserver.auth import Attributes, Authenticator, Policy, Rules, User, allow_all
from tests.apiserver.certs import CertificateAuthority, KeyPair
from tests.apiserver.csrcontrollers import DEFAULT_SIGNING_DURATION, CSRControllers
from tests.apiserver.faults import Faults
from tests.apiserver.handler import Handler
from tests.apiserver.registry import Registry
from tests.apiserver.requestlog import RequestLog
from tests.apiserver.resources import by_kind
from tests.apiserver.store import Store

ADMIN = User("kubernetes-admin", groups=("kubeadm:cluster-admins", "system:masters",
                                         "system:authenticated"))
APISERVER_KUBELET_CLIENT = ("kube-apiserver-kubelet-client", ("kubeadm:cluster-admins",))

# OpenSSL's X509_V_FLAG_NO_CHECK_TIME: the handshake checks a client certificate's chain but
# not its dates, which the x509 authenticator checks on every request (an expired certificate
# is a 401, as upstream, not a failed handshake).
_NO_CHECK_TIME = 0x200000


class EmulatedAPIServer:
    """An emulated kube-apiserver on a loopback port; a context manager.

    ``schedule_to`` binds pods created without spec.nodeName to that node, as a one-node
    scheduler would. ``sar_policy`` answers SubjectAccessReviews; ``authorizer`` decides the
    server's own requests (both default to allowing everything). ``node_urls`` maps node names
    to kubelet base URLs for pods/log; otherwise the node's InternalIP and
    status.daemonEndpoints.kubeletEndpoint.Port are used, over HTTPS.

    TLS bootstrap as a kubeadm cluster has it (csr.py, csrcontrollers.py, bootstrap.py):
    CertificateSigningRequests, approved by the csrapproving controller when
    ``csr_auto_approve`` (kubelet client requests only, never serving ones: see
    :meth:`approve_csr`) and signed by the cluster CA (``ca.cert_pem``, which clients of the
    API server and of a kubelet's serving certificate trust) for at most
    ``cluster_signing_duration`` seconds; bootstrap tokens (:meth:`create_bootstrap_token`,
    or a ``bootstrap.kubernetes.io/token`` Secret created through the API), whose users may
    do only what ``rbac`` (kubeadm's bindings) allows. Both switches can change while the
    server runs.
    """

    def __init__(self, *, tls: bool = True, host: str = "127.0.0.1", port: int = 0,
                 schedule_to: str | None = None, bookmark_interval: float = 1.0,
                 watch_timeout: float = 300.0, sar_policy: Policy = allow_all,
                 authorizer: Policy = allow_all, node_urls: dict[str, str] | None = None,
                 kubelet_ca: bytes | None = None, csr_auto_approve: bool = True,
                 cluster_signing_duration: float = DEFAULT_SIGNING_DURATION) -> None:
        self.tls = tls
        self.host = host
        self.port = port
        self.ca = CertificateAuthority()
        self._server_pair = self.ca.server_pair()
        self.authenticator = Authenticator()
        self.admin_token = secrets.token_urlsafe(24)
        self.authenticator.add_token(self.admin_token, ADMIN)
        self.sar_policy = sar_policy
        self.authorizer = authorizer
        self.node_urls = dict(node_urls or {})
        self.kubelet_ca = kubelet_ca
        self.faults = Faults()
        self.request_log = RequestLog()
        self.store = Store()
        self.registry = Registry(self.store, self.ca.cert_pem.decode(), schedule_to=schedule_to,
                                 bookmark_interval=bookmark_interval,
                                 default_watch_timeout=watch_timeout,
                                 issue_token=self._issue_token)
        self.registry.bootstrap()
        # The cluster's RBAC for bootstrap users and the approver's SubjectAccessReviews.
        self.rbac: Rules = bootstrap.kubeadm_rbac()
        self.authenticator.token_authenticators.append(
            lambda token: bootstrap.authenticate(self.store, token, self.authenticator.clock()))
        self.csr_controllers = CSRControllers(self.registry, self.ca, self.rbac,
                                              auto_approve=csr_auto_approve,
                                              signing_duration=cluster_signing_duration)
        self.requests = 0
        self.reviews: list[dict[str, Any]] = []  # TokenReviews and SARs answered, in order
        self._reviews_lock = threading.Lock()
        self.stopping = False
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._listener_lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._heal_timer: threading.Timer | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="emulated-apiserver-")
        self._ssl: ssl.SSLContext | None = None
        self._kubelet_client: ssl.SSLContext | None = None

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> EmulatedAPIServer:
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            cert, key = self._write_pair("server", self._server_pair)
            ctx.load_cert_chain(cert, key)
            ctx.load_verify_locations(cadata=self.ca.cert_pem.decode())
            ctx.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is one way in
            ctx.verify_flags |= _NO_CHECK_TIME
            ctx.set_alpn_protocols(["http/1.1"])  # no HTTP/2: Go clients fall back
            self._ssl = ctx
        self._listen()
        self.csr_controllers.start()
        self._thread = threading.Thread(target=self._accept_loop, name="emulated-apiserver",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        if self._heal_timer is not None:
            self._heal_timer.cancel()
        with self.store.cond:
            self.store.stopped = True
            self.store.cond.notify_all()
        self._close_listener()
        self._wake.set()
        self._cut_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.csr_controllers.stop()
        self._tmp.cleanup()

    def __enter__(self) -> EmulatedAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # --- sockets ------------------------------------------------------------------------

    def _listen(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        with self._listener_lock:
            self._listener = sock
        self._wake.set()

    def _close_listener(self) -> None:
        with self._listener_lock:
            sock, self._listener = self._listener, None
        if sock is not None:
            # shutdown first: the accept loop's select() holds the socket open past close(),
            # and a connect in that window would still be accepted.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _cut_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _accept_loop(self) -> None:
        while not self.stopping:
            with self._listener_lock:
                sock = self._listener
            if sock is None:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            try:
                ready, _, _ = select.select([sock], [], [], 0.2)
                if not ready:
                    continue
                conn, addr = sock.accept()
            except (OSError, ValueError):
                continue  # the listener was closed under us (partition or stop)
            threading.Thread(target=self._serve_connection, args=(conn, addr),
                             name="emulated-apiserver-conn", daemon=True).start()

    def _serve_connection(self, conn: socket.socket, addr: Any) -> None:
        with self._conn_lock:
            self._connections.add(conn)
        try:
            # Headers and body go out in separate writes: without NODELAY, Nagle and the
            # client's delayed ACK add 40 ms to every response.
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                conn.settimeout(10)
                try:
                    conn = self._ssl.wrap_socket(conn, server_side=True)
                except (OSError, ssl.SSLError):
                    return
                conn.settimeout(None)
                with self._conn_lock:
                    self._connections.add(conn)
            Handler(conn, addr, self)  # type: ignore[arg-type]
        except (OSError, ssl.SSLError):
            pass
        finally:
            with self._conn_lock:
                self._connections.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    # --- authn/authz and tokens ---------------------------------------------------------

    def record_review(self, answer: dict[str, Any]) -> None:
        with self._reviews_lock:
            self.reviews.append(answer)

    def reviews_of(self, kind: str) -> list[dict[str, Any]]:
        """The TokenReviews or SubjectAccessReviews answered so far (spec and status)."""
        with self._reviews_lock:
            return [r for r in self.reviews if r["kind"] == kind]

    def authorize(self, attrs: Attributes) -> bool:
        if bootstrap.is_bootstrap_user(attrs.user):
            return bool(self.rbac(attrs))  # kubeadm's bindings, nothing else
        return bool(self.authorizer(attrs))

    # --- TLS bootstrap controls -----------------------------------------------------------

    @property
    def csr_auto_approve(self) -> bool:
        """Whether the csrapproving controller runs (kubelet client requests only)."""
        return self.csr_controllers.auto_approve

    @csr_auto_approve.setter
    def csr_auto_approve(self, on: bool) -> None:
        self.csr_controllers.auto_approve = on
        if on:
            self.csr_controllers.resync()

    @property
    def cluster_signing_duration(self) -> float:
        """kube-controller-manager's --cluster-signing-duration, in seconds."""
        return self.csr_controllers.signing_duration

    @cluster_signing_duration.setter
    def cluster_signing_duration(self, seconds: float) -> None:
        self.csr_controllers.signing_duration = float(seconds)

    def create_bootstrap_token(self, *, ttl: float | None = 3600.0,
                               extra_groups: tuple[str, ...] = (
                                   bootstrap.KUBEADM_NODE_TOKEN_GROUP,),
                               token_id: str | None = None, token_secret: str | None = None,
                               usage_authentication: bool = True) -> str:
        """``kubeadm token create``: a bootstrap token Secret in kube-system, expiring ``ttl``
        seconds from now (None: never); returns the bearer token ``<id>.<secret>``."""
        new_id, new_secret = bootstrap.new_token()
        token_id, token_secret = token_id or new_id, token_secret or new_secret
        expiration = None
        if ttl is not None:
            expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                       time.gmtime(self.authenticator.clock() + ttl))
        self.registry.create(by_kind("Secret"), bootstrap.NAMESPACE, bootstrap.token_secret(
            token_id, token_secret, expiration=expiration, extra_groups=extra_groups,
            usage_authentication=usage_authentication))
        return f"{token_id}.{token_secret}"

    def write_bootstrap_kubeconfig(self, path: str | Path, token: str | None = None) -> Path:
        """A bootstrap kubeconfig (``--bootstrap-kubeconfig``) with ``token`` (default: a new
        bootstrap token from :meth:`create_bootstrap_token`)."""
        return self._write_config(Path(path), "kubelet-bootstrap",
                                  {"token": token or self.create_bootstrap_token()})

    def approve_csr(self, name: str, message: str = "approved by the test") -> dict[str, Any]:
        """Approve a CertificateSigningRequest through /approval, as ``kubectl certificate
        approve`` would (reason ``TestApprove``); the signer then issues it."""
        return self.csr_controllers.set_condition(name, csr.APPROVED, "TestApprove", message)

    def deny_csr(self, name: str, message: str = "denied by the test") -> dict[str, Any]:
        """Deny a CertificateSigningRequest through /approval (reason ``TestDeny``)."""
        return self.csr_controllers.set_condition(name, csr.DENIED, "TestDeny", message)

    def add_token(self, token: str, user: str, groups: tuple[str, ...] = ()) -> None:
        self.authenticator.add_token(token, User(user, groups=(*groups, "system:authenticated")))

    def client_cert(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate the server accepts as ``user`` in ``groups``."""
        return self.ca.issue(user, groups)

    def _issue_token(self, ns: str, name: str, spec: dict[str, Any]) -> tuple[str, int]:
        sa = self.store.get("serviceaccounts", (ns, name)) or {"metadata": {}}
        return self.authenticator.issue_service_account_token(
            ns, name, sa["metadata"].get("uid", ""), spec)

    def _write_pair(self, name: str, pair: KeyPair) -> tuple[str, str]:
        base = Path(self._tmp.name)
        cert, key = base / f"{name}.crt", base / f"{name}.key"
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        key.chmod(0o600)
        return str(cert), str(key)

    def write_kubeconfig(self, path: str | Path, user: str = "kubernetes-admin", *,
                         groups: tuple[str, ...] = ("kubeadm:cluster-admins", "system:masters"),
                         token: str | None = None, use_token: bool = False) -> Path:
        """A kubeconfig for ``user``: a CA-signed client certificate by default, a bearer
        token with ``use_token`` (``token`` or a new one) — the server's CA is trusted."""
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        creds: dict[str, Any]
        if use_token or token is not None:
            token = token or secrets.token_urlsafe(24)
            self.add_token(token, user, groups)
            creds = {"token": token}
        else:
            pair = self.client_cert(user, groups)
            creds = {"client-certificate-data": b64(pair.cert_pem),
                     "client-key-data": b64(pair.key_pem)}
        return self._write_config(Path(path), user, creds)

    def _write_config(self, target: Path, user: str, creds: dict[str, Any]) -> Path:
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca.cert_pem).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "emulated", "cluster": cluster}],
            "users": [{"name": user, "user": creds}],
            "contexts": [{"name": "emulated", "context": {"cluster": "emulated", "user": user}}],
            "current-context": "emulated",
        }
        target.write_text(yaml.safe_dump(config))
        target.chmod(0o600)
        return target

    # --- kubelet proxying ---------------------------------------------------------------

    def kubelet_url(self, node_name: str) -> str:
        if node_name in self.node_urls:
            return self.node_urls[node_name].rstrip("/")
        node = self.store.get("nodes", ("", node_name))
        if node is None:
            raise errors.not_found("nodes", node_name)
        status = node.get("status", {})
        port = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint", {}).get("Port")
        address = next((a["address"] for a in status.get("addresses") or []
                        if a.get("type") == "InternalIP"), None)
        if not port or not address:
            raise errors.bad_request(f"node {node_name} has no InternalIP address or kubelet "
                                     "port in its status")
        host = f"[{address}]" if ":" in address else address
        return f"https://{host}:{port}"

    def kubelet_client_context(self) -> ssl.SSLContext:
        """TLS to kubelets: the apiserver's kubelet-client certificate; the kubelet's serving
        certificate checked only when ``kubelet_ca`` was given (as upstream without
        --kubelet-certificate-authority)."""
        if self._kubelet_client is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            if self.kubelet_ca is not None:
                ctx.load_verify_locations(cadata=self.kubelet_ca.decode())
            else:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            cert, key = self._write_pair("kubelet-client",
                                         self.ca.issue(*APISERVER_KUBELET_CLIENT))
            ctx.load_cert_chain(cert, key)
            self._kubelet_client = ctx
        return self._kubelet_client

    # --- faults and history -------------------------------------------------------------

    def compact(self, rv: int | None = None) -> int:
        """Compact history up to ``rv`` (default now): older versions answer 410 Gone."""
        with self.store.cond:
            return self.store.compact(rv)

    def _watchers(self, resource: str | None) -> Iterator[Any]:
        for watcher in self.store.watchers:
            if resource is None or watcher.resource == resource:
                yield watcher

    def drop_watches(self, resource: str | None = None) -> int:
        """Cut open watch streams (of ``resource``, e.g. "pods"), as a lost connection would."""
        with self.store.cond:
            watchers = list(self._watchers(resource))
            for watcher in watchers:
                watcher.dropped = True
            self.store.cond.notify_all()
        return len(watchers)

    def expire_watches(self, resource: str | None = None) -> int:
        """End open watches with an ERROR event carrying a 410 Expired Status."""
        with self.store.cond:
            watchers = list(self._watchers(resource))
            for watcher in watchers:
                watcher.expired = True
            self.store.cond.notify_all()
        return len(watchers)

    def open_watches(self, resource: str | None = None) -> int:
        with self.store.cond:
            return len(list(self._watchers(resource)))

    def partition(self, seconds: float | None = None) -> None:
        """Refuse connections (the port closes and open connections are cut), for
        ``seconds`` or until :meth:`heal`."""
        self._close_listener()
        self.drop_watches()
        self._cut_connections()
        if seconds is not None:
            self._heal_timer = threading.Timer(seconds, self.heal)
            self._heal_timer.daemon = True
            self._heal_timer.start()

    def heal(self) -> None:
        """End a partition: listen again on the same port."""
        if self._heal_timer is not None:
            self._heal_timer.cancel()
            self._heal_timer = None
        with self._listener_lock:
            listening = self._listener is not None
        if not listening and not self.stopping:
            self._listen()
