"""HTTP(S) to the API server: TLS from the kubeconfig, credentials, connection reuse, and
upstream ``Status`` errors turned into the project's error hierarchy.

Plain ``http.client`` over ``ssl``: one small pool of keep-alive connections shared by the
threads that write (node status, lease, pod status), and a connection of its own for each
watch. Credentials, in client-go's order: a client certificate, a bearer token (``tokenFile``
re-read every minute, as client-go's cached file token source does), basic auth, or an
``exec`` plugin (ExecCredential v1/v1beta1: run with ``KUBERNETES_EXEC_INFO``, its token or
certificate kept until ``expirationTimestamp``, run again on expiry and after a 401, as
client-go's exec authenticator does). Connections made with an old client certificate are
dropped when the plugin hands out a new one.

A rotated client certificate (``certificates``: the kubelet's certificate manager) is used
as upstream's kubelet uses it (pkg/kubelet/certificate/transport.go): each new connection
takes the current pair, and ``close_all`` (called on each rotation) shuts every connection
this transport made, idle, busy and streaming, so the next requests and watches handshake
again with the new certificate; a watch cut so is reopened by its reflector from its
resourceVersion.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.client
import json
import os
import socket
import ssl
import subprocess
import tempfile
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from loguru import logger

from runtime import errors
from runtime.clock import Clock, RealClock
from runtime.kubeapi.kubeconfig import ExecConfig, RestConfig

__all__ = ["KUBE_API_BURST", "KUBE_API_QPS", "MAX_RETRIES", "CertificateSource", "Credentials",
           "ExecCredential",
           "RateLimiter", "Response", "Stream", "Transport", "error_from_status"]

TOKEN_FILE_PERIOD = 60.0
"""client-go re-reads a tokenFile at most once a minute (cachedFileTokenSource)."""
EXEC_TIMEOUT = 60.0
"""client-go waits on an exec plugin without limit; a kubelet must not hang at start."""
USER_AGENT = "kubelet-actors/v0.1.0 (linux) kubernetes/kubelet"
REQUEST_TIMEOUT = 30.0
"""For requests other than watches, when the caller gives none."""


@dataclass(frozen=True)
class Response:
    """A whole answer: status, lower-cased headers, body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Stream:
    """A streamed answer (a watch): read it line by line, then ``close()``.

    ``readline()`` returns b"" when the server ended the stream cleanly (its last chunk) and
    raises :class:`~runtime.errors.APIUnreachable` when the connection was cut or timed out.
    """

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse,
                 what: str) -> None:
        self._conn = conn
        self._response = response
        self._what = what

    def readline(self) -> bytes:
        try:
            return self._response.readline()
        except (OSError, http.client.HTTPException, ValueError, AttributeError) as err:
            # AttributeError: http.client, closing a response whose chunked stream was cut,
            # can trip over its own already-closed file (3.11's _close_conn).
            raise errors.APIUnreachable(f"{self._what}: stream cut: {err!r}") from err

    def close(self) -> None:
        # Closing the socket (not draining the stream) is how a client stops a watch.
        with contextlib.suppress(OSError):
            sock = self._conn.sock
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()


# --- credentials -------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecCredential:
    """What an exec plugin returned."""

    token: str = field(default="", repr=False)
    cert_data: bytes | None = field(default=None, repr=False)
    key_data: bytes | None = field(default=None, repr=False)
    expires_at: float | None = None


def _parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run_exec_plugin(config: ExecConfig, rest: RestConfig) -> ExecCredential:
    """Run the plugin once, as client-go does (non-interactive: a daemon has no terminal)."""
    who = f"exec plugin {config.command} (kubeconfig {rest.source})"
    if config.interactive_mode == "Always":
        raise errors.APIUnauthorized(f"{who}: interactiveMode Always needs a terminal, and a "
                                     "kubelet has none")
    info: dict[str, Any] = {"apiVersion": config.api_version, "kind": "ExecCredential",
                            "spec": {"interactive": False}}
    if config.provide_cluster_info:
        cluster: dict[str, Any] = {"server": rest.server}
        if rest.ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(rest.ca_data).decode()
        if rest.tls_server_name:
            cluster["tls-server-name"] = rest.tls_server_name
        if rest.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        info["spec"]["cluster"] = cluster
    env = dict(os.environ)
    env.update(config.env)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    command = config.command
    if os.sep in command and not os.path.isabs(command):
        command = os.path.join(config.workdir, command)
    try:
        done = subprocess.run([command, *config.args], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=EXEC_TIMEOUT, check=False)
    except FileNotFoundError as err:
        hint = f"\n\n{config.install_hint}" if config.install_hint else ""
        raise errors.APIUnauthorized(f"{who}: executable not found{hint}") from err
    except (OSError, subprocess.TimeoutExpired) as err:
        raise errors.APIUnauthorized(f"{who}: {err}") from err
    if done.returncode != 0:
        raise errors.APIUnauthorized(
            f"{who}: failed with exit code {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()[:500]}")
    try:
        cred = json.loads(done.stdout)
    except ValueError as err:
        raise errors.APIUnauthorized(f"{who}: output is not an ExecCredential: {err}") from err
    if not isinstance(cred, dict) or cred.get("kind") != "ExecCredential":
        raise errors.APIUnauthorized(f"{who}: output is not an ExecCredential")
    if cred.get("apiVersion") != config.api_version:
        raise errors.APIUnauthorized(
            f"{who}: exec plugin is configured to use API version {config.api_version}, "
            f"plugin returned version {cred.get('apiVersion')}")
    status = cred.get("status")
    if not isinstance(status, dict):
        raise errors.APIUnauthorized(f"{who}: exec plugin didn't return a status field")
    token = str(status.get("token") or "")
    cert = str(status.get("clientCertificateData") or "")
    key = str(status.get("clientKeyData") or "")
    if not token and not cert and not key:
        raise errors.APIUnauthorized(f"{who}: exec plugin didn't return a token or cert/key "
                                     "pair")
    if bool(cert) != bool(key):
        raise errors.APIUnauthorized(f"{who}: exec plugin returned only certificate or key, "
                                     "not both")
    expires: float | None = None
    if status.get("expirationTimestamp"):
        try:
            expires = _parse_time(str(status["expirationTimestamp"]))
        except ValueError as err:
            raise errors.APIUnauthorized(f"{who}: bad expirationTimestamp: {err}") from err
    return ExecCredential(token, cert.encode() or None, key.encode() or None, expires)


ExecRunner = Callable[[ExecConfig, RestConfig], ExecCredential]


class CertificateSource(Protocol):
    """A rotated client certificate (runtime.kubeapi.certificate_manager): the pair in
    use (None: none valid) and a count bumped with each new pair."""

    @property
    def generation(self) -> int: ...

    def client_pair(self) -> tuple[bytes, bytes] | None: ...


class Credentials:
    """Who the client is, per request: ``authorization()`` for the header,
    ``client_pair()`` for TLS, ``generation`` bumped when the pair changes."""

    def __init__(self, rest: RestConfig, clock: Clock, exec_runner: ExecRunner = run_exec_plugin,
                 certificates: CertificateSource | None = None) -> None:
        self._rest = rest
        self._clock = clock
        self._exec_runner = exec_runner
        self._certificates = certificates
        self._lock = threading.Lock()
        self._file_token = ""
        self._file_read_at: float | None = None
        self._exec_cred: ExecCredential | None = None
        self._exec_generation = 0
        self.exec_runs = 0
        # Upstream's exec authenticator stands aside when the kubeconfig has a token, basic
        # auth or a client certificate (they win).
        self._use_exec = rest.exec is not None and not (
            rest.token or rest.token_file or rest.username or rest.cert_data)

    def _exec(self, force: bool) -> ExecCredential:
        cred = self._exec_cred
        fresh = cred is not None and (cred.expires_at is None
                                      or self._clock.now() < cred.expires_at)
        if cred is not None and fresh and not force:
            return cred
        assert self._rest.exec is not None
        new = self._exec_runner(self._rest.exec, self._rest)
        self.exec_runs += 1
        logger.bind(plugin=self._rest.exec.command, expires=new.expires_at).info(
            "exec credential plugin ran")
        if cred is None or (new.cert_data, new.key_data) != (cred.cert_data, cred.key_data):
            self._exec_generation += 1
        self._exec_cred = new
        return new

    def authorization(self) -> str | None:
        rest = self._rest
        with self._lock:
            if rest.token_file:
                now = self._clock.monotonic()
                if self._file_read_at is None or now - self._file_read_at >= TOKEN_FILE_PERIOD:
                    try:
                        with open(rest.token_file, encoding="utf-8") as f:
                            self._file_token = f.read().strip()
                        self._file_read_at = now
                    except OSError as err:
                        # As client-go: keep the last token read when the file goes away.
                        logger.bind(file=rest.token_file).warning(
                            "cannot re-read tokenFile: {}", err)
                        if not self._file_token:
                            raise errors.APIUnauthorized(
                                f"tokenFile {rest.token_file}: {err}") from err
                return f"Bearer {self._file_token}"
            if rest.token:
                return f"Bearer {rest.token}"
            if rest.username or rest.password:
                pair = f"{rest.username}:{rest.password}".encode()
                return "Basic " + base64.b64encode(pair).decode()
            if self._use_exec:
                cred = self._exec(force=False)
                if cred.token:
                    return f"Bearer {cred.token}"
        return None

    @property
    def generation(self) -> int:
        """Bumped when the client pair changes (an exec plugin's, or a rotation's)."""
        rotated = self._certificates.generation if self._certificates is not None else 0
        return self._exec_generation + rotated

    def client_pair(self) -> tuple[bytes, bytes] | None:
        rest = self._rest
        if self._certificates is not None:
            # As upstream's GetClientCertificate: the manager's pair, or none (the server
            # then answers 401) when it has no valid one.
            return self._certificates.client_pair()
        if rest.cert_data and rest.key_data:
            return rest.cert_data, rest.key_data
        if self._use_exec:
            with self._lock:
                cred = self._exec(force=False)
            if cred.cert_data and cred.key_data:
                return cred.cert_data, cred.key_data
        return None

    def unauthorized(self, sent: str | None) -> bool:
        """A 401 came back for a request sent with ``sent``: True when new credentials are
        worth one retry (the exec plugin ran again, or the tokenFile changed)."""
        with self._lock:
            if self._use_exec:
                before = self._exec_cred
                self._exec(force=True)
                return before != self._exec_cred
            if self._rest.token_file:
                self._file_read_at = None
                return True
        return False


# --- errors ------------------------------------------------------------------------------

_BY_REASON: dict[str, type[errors.APIError]] = {
    "NotFound": errors.APINotFound, "AlreadyExists": errors.APIAlreadyExists,
    "Conflict": errors.APIConflict, "Gone": errors.APIGone, "Expired": errors.APIGone,
    "Invalid": errors.APIInvalid, "TooManyRequests": errors.APITooManyRequests,
    "Unauthorized": errors.APIUnauthorized, "Forbidden": errors.APIForbidden,
    "BadRequest": errors.APIBadRequest, "MethodNotAllowed": errors.APIMethodNotAllowed,
}
_BY_CODE: dict[int, type[errors.APIError]] = {
    400: errors.APIBadRequest, 401: errors.APIUnauthorized, 403: errors.APIForbidden,
    404: errors.APINotFound, 405: errors.APIMethodNotAllowed, 409: errors.APIConflict,
    410: errors.APIGone, 422: errors.APIInvalid, 429: errors.APITooManyRequests,
}


def error_from_status(code: int, status: Mapping[str, Any] | None, what: str,
                      retry_after_header: str | None = None) -> errors.APIError:
    """The project's error for an upstream ``metav1.Status`` (or a bare HTTP code), as
    client-go's apierrors.FromObject and its Is* helpers classify them."""
    status = status if isinstance(status, Mapping) else {}
    reason = str(status.get("reason") or "")
    code = int(status.get("code") or code)
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    assert isinstance(details, dict)
    message = str(status.get("message") or f"the server answered {code}")
    retry: float | None = None
    if retry_after_header:
        with contextlib.suppress(ValueError):
            retry = float(retry_after_header)
    if retry is None and details.get("retryAfterSeconds"):
        with contextlib.suppress(TypeError, ValueError):
            retry = float(details["retryAfterSeconds"])
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code)
    if cls is None:
        cls = errors.APIServerError if code >= 500 else errors.APIError
    return cls(f"{what}: {message}", code=code, reason=reason, details=details,
               retry_after=retry)


# --- the transport -----------------------------------------------------------------------


class _Connection(http.client.HTTPSConnection):
    """HTTPS with the SNI and certificate name from ``tls-server-name`` when given."""

    def __init__(self, host: str, port: int | None, *, context: ssl.SSLContext,
                 timeout: float | None, server_name: str) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._server_name = server_name
        self._tls = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        assert self.sock is not None
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


class RateLimiter:
    """client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): ``qps`` tokens a
    second, at most ``burst`` saved; ``take()`` waits for one on the injected clock."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """Take a token; returns the seconds waited for it."""
        if self._qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._qps)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self._qps if self._tokens < 0 else 0.0
        if wait > 0:
            self._clock.sleep(wait)
        return wait


KUBE_API_QPS = 50.0
KUBE_API_BURST = 100
"""KubeletConfiguration kubeAPIQPS and kubeAPIBurst defaults."""
MAX_RETRIES = 10
"""client-go's rest client: a 429 or 5xx with Retry-After is retried up to 10 times."""


class Transport:
    """Requests to one API server as one user (thread-safe).

    As client-go's rest client: requests (watches included) take a token from a
    ``qps``/``burst`` bucket, and a request answered 429 or 5xx with a ``Retry-After``
    header is sent again after that many seconds, up to :data:`MAX_RETRIES` times (a watch
    too, as client-go's Request.Watch; the reflector's back-off comes after). ``timeout``
    bounds each request (upstream gives the heartbeat client nodeStatusUpdateFrequency,
    10 s). Sleeps use the clock.
    """

    def __init__(self, rest: RestConfig, *, clock: Clock | None = None,
                 exec_runner: ExecRunner = run_exec_plugin, pool_size: int = 4,
                 qps: float = KUBE_API_QPS, burst: int = KUBE_API_BURST,
                 timeout: float = REQUEST_TIMEOUT, max_retries: int = MAX_RETRIES,
                 certificates: CertificateSource | None = None) -> None:
        self.rest = rest
        self.clock = clock or RealClock()
        self.limiter = RateLimiter(qps, burst, self.clock)
        self.timeout = timeout
        self.max_retries = max_retries
        self.retries = 0
        self.credentials = Credentials(rest, self.clock, exec_runner, certificates)
        parts = urllib.parse.urlsplit(rest.server)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._idle: list[tuple[int, http.client.HTTPConnection]] = []
        self._contexts: dict[int, ssl.SSLContext] = {}
        # Every connection made and not yet collected: close_all shuts them all.
        self._live: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self.closed_all = 0

    # --- connections ---------------------------------------------------------------------

    def _ssl_context(self) -> tuple[int, ssl.SSLContext]:
        pair = self.credentials.client_pair()
        generation = self.credentials.generation
        with self._lock:
            cached = self._contexts.get(generation)
        if cached is not None:
            return generation, cached
        rest = self.rest
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if rest.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif rest.ca_data:
            ctx.load_verify_locations(cadata=rest.ca_data.decode("ascii", errors="replace"))
        else:
            ctx.load_default_certs()
        if pair is not None:
            _load_pair(ctx, *pair)
        ctx.set_alpn_protocols(["http/1.1"])
        with self._lock:
            self._contexts = {generation: ctx}  # older generations: never used again
        return generation, ctx

    def _connect(self, timeout: float | None) -> tuple[int, http.client.HTTPConnection]:
        conn: http.client.HTTPConnection
        if not self._https:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            generation = 0
        else:
            generation, ctx = self._ssl_context()
            name = self.rest.tls_server_name or self._host
            conn = _Connection(self._host, self._port, context=ctx, timeout=timeout,
                               server_name=name)
        with self._lock:
            self._live.add(conn)
        return generation, conn

    def _take(self, timeout: float) -> tuple[int, http.client.HTTPConnection, bool]:
        generation = self.credentials.generation
        with self._lock:
            while self._idle:
                gen, conn = self._idle.pop()
                if gen == generation or not self._https:
                    conn.timeout = timeout
                    if conn.sock is not None:
                        conn.sock.settimeout(timeout)
                    return gen, conn, True
                conn.close()
        gen, conn = self._connect(timeout)
        return gen, conn, False

    def _give_back(self, generation: int, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._pool_size:
                self._idle.append((generation, conn))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _, conn in idle:
            conn.close()

    def close_all(self) -> None:
        """Shut every connection this transport made (idle, in use and streaming), as
        upstream's dialer CloseAll on a certificate rotation: requests under way fail and
        are retried by their callers, watches end and are reopened."""
        with self._lock:
            idle, self._idle = self._idle, []
            live = list(self._live)
        for _, conn in idle:
            conn.close()
        for conn in live:
            sock = conn.sock
            if sock is not None:
                # socket.socket's shutdown, not SSLSocket's: that one also drops the TLS
                # object under a thread that may be reading from it right now.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
        self.closed_all += 1

    def certificate_rotated(self, _pair: object = None) -> None:
        """A certificate manager's listener: the new pair is used from now on."""
        logger.info("certificate rotation detected, shutting down client connections to "
                    "start using new credentials")
        self.close_all()

    # --- requests ------------------------------------------------------------------------

    def url(self, path: str, query: Mapping[str, str] | None = None) -> str:
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(query)
        return target

    def _headers(self, content_type: str | None, accept: str) -> tuple[dict[str, str],
                                                                        str | None]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        auth = self.credentials.authorization()
        if auth:
            headers["Authorization"] = auth
        return headers, auth

    def request(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                body: bytes | None = None, content_type: str | None = None,
                timeout: float | None = None) -> Response:
        """One request; an error Status raises its :class:`~runtime.errors.APIError`."""
        target = self.url(path, query)
        what = f"{method} {target}"
        reauthenticated = False
        retries = 0
        while True:
            self.limiter.take()
            headers, sent = self._headers(content_type if body is not None else None,
                                          "application/json")
            response = self._roundtrip(method, target, body, headers,
                                       timeout or self.timeout, what)
            if response.status == 401 and not reauthenticated and \
                    self.credentials.unauthorized(sent):
                reauthenticated = True
                continue  # new credentials: one retry, as client-go's exec authenticator
            wait = _retry_after(response)
            if wait is not None and retries < self.max_retries:
                retries += 1
                self.retries += 1
                logger.bind(request=what, status=response.status, retry=retries).info(
                    "server asked to retry after {}s", wait)
                self.clock.sleep(wait)
                continue
            break
        if response.status >= 400:
            raise _error(response, what)
        return response

    def _roundtrip(self, method: str, target: str, body: bytes | None,
                   headers: dict[str, str], timeout: float, what: str) -> Response:
        # A kept-alive connection the server closed meanwhile fails on first use: retry once
        # on a new one, as Go's transport does for requests that were never answered.
        for reused_try in (True, False):
            generation, conn, reused = self._take(timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                raw = conn.getresponse()
                data = raw.read()
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                if reused and reused_try and isinstance(
                        err, (http.client.RemoteDisconnected, BrokenPipeError,
                              ConnectionResetError)):
                    continue
                raise errors.APIUnreachable(f"{what}: {err!r}") from err
            if raw.will_close:
                conn.close()
            else:
                self._give_back(generation, conn)
            return Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(self, path: str, *, query: Mapping[str, str] | None = None,
               timeout: float | None = None) -> Stream:
        """A GET whose answer is read as it comes (a watch), on a connection of its own;
        ``timeout`` bounds each read (None: no bound)."""
        target = self.url(path, query)
        what = f"GET {target}"
        reauthenticated = False
        retries = 0
        while True:
            self.limiter.take()
            headers, sent = self._headers(None, "application/json")
            _, conn = self._connect(timeout)
            try:
                conn.request("GET", target, headers=headers)
                raw = conn.getresponse()
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                raise errors.APIUnreachable(f"{what}: {err!r}") from err
            if raw.status < 400:
                return Stream(conn, raw, what)
            try:
                data = raw.read()
            except (OSError, http.client.HTTPException) as err:
                raise errors.APIUnreachable(f"{what}: {err!r}") from err
            finally:
                conn.close()
            if raw.status == 401 and not reauthenticated and \
                    self.credentials.unauthorized(sent):
                reauthenticated = True
                continue
            response = Response(raw.status, {k.lower(): v for k, v in raw.getheaders()},
                                data)
            # As client-go's Request.Watch: a 429 or 5xx with Retry-After is asked again
            # after that long (up to max_retries), before the caller's own back-off.
            wait = _retry_after(response)
            if wait is not None and retries < self.max_retries:
                retries += 1
                self.retries += 1
                logger.bind(request=what, status=raw.status, retry=retries).info(
                    "server asked to retry the watch after {}s", wait)
                self.clock.sleep(wait)
                continue
            raise _error(response, what)


def _retry_after(response: Response) -> float | None:
    """client-go's checkWait: seconds to wait when a 429 or 5xx carries Retry-After."""
    if response.status != 429 and not 500 <= response.status <= 599:
        return None
    header = response.headers.get("retry-after")
    if header is None:
        return None
    try:
        return max(float(int(header)), 0.0)
    except ValueError:
        return None


def _error(response: Response, what: str) -> errors.APIError:
    try:
        status = json.loads(response.body) if response.body else None
    except ValueError:
        status = {"message": response.body[:200].decode(errors="replace")}
    return error_from_status(response.status, status, what, response.headers.get("retry-after"))


def _load_pair(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl loads certificate chains from files only: a private temporary directory holds
    # them for the call and is gone right after.
    with tempfile.TemporaryDirectory(prefix="kubeapi-") as tmp:
        cert_file = os.path.join(tmp, "client.crt")
        key_file = os.path.join(tmp, "client.key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        with open(cert_file, "wb") as f:
            f.write(cert)
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as err:
            raise errors.KubeconfigError(f"client certificate or key is not usable: {err}"
                                         ) from err
