"""The probe handlers: exec, httpGet, tcpSocket and grpc (upstream pkg/probe and prober.go).

Each handler runs one probe attempt against one container and returns ``(ProbeResult,
output)``; none of them raises (``attempt_probe`` adds the attempt's code: the command's
exit code or the HTTP status, which the probe manager records with the attempt for
``kubelet-actors explain``). SUCCESS and FAILURE are answers from the container; UNKNOWN
means the probe itself could not be run (a CRI error, a port that does not resolve) and
the caller should try again (see runtime.prober.worker). The handlers block for up to
the probe's timeout, so they belong on a thread pool, never on an actor thread.
"""

from __future__ import annotations

import http.client
import socket
import time
import urllib.parse
from typing import NamedTuple

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from runtime.cri.service import RuntimeService
from runtime.errors import CRIDeadlineExceeded, CRIError
from runtime.httpget import MAX_BODY, action_url, get, hostport
from runtime.ids import ContainerID
from runtime.pod.model import (
    Container,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    IntOrString,
    Probe,
    TCPSocketAction,
)
from runtime.pod.ports import resolve_port
from runtime.prober.results import ProbeResult

USER_AGENT = "kube-probe/1.32"
"""What upstream's prober sends as User-Agent (kube-probe/<major>.<minor>)."""

MAX_REDIRECTS = 10
"""Go's http.Client gives up after this many redirects."""

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

Outcome = tuple[ProbeResult, str]
"""A probe attempt's result and its output (a body, a command's output or an error)."""


class Attempt(NamedTuple):
    """A probe attempt's result, its output, and its code when it has one: the exit code
    of an exec probe's command, the status of an httpGet probe's answer."""

    result: ProbeResult
    output: str
    code: int | None = None


def run_probe(
    probe: Probe,
    container: Container,
    container_id: ContainerID,
    pod_ip: str,
    runtime: RuntimeService,
) -> Outcome:
    """Run the one action ``probe`` names against the container; never raises."""
    result, output, _ = attempt_probe(probe, container, container_id, pod_ip, runtime)
    return result, output


def attempt_probe(
    probe: Probe,
    container: Container,
    container_id: ContainerID,
    pod_ip: str,
    runtime: RuntimeService,
) -> Attempt:
    """``run_probe`` with the attempt's code (exit code or HTTP status); never raises."""
    timeout = float(max(probe.timeout_seconds, 1))
    try:
        if probe.exec is not None:
            return exec_attempt(runtime, container_id, probe.exec, timeout)
        if probe.http_get is not None:
            return http_attempt(probe.http_get, container, pod_ip, timeout)
        if probe.tcp_socket is not None:
            return Attempt(*tcp_probe(probe.tcp_socket, container, pod_ip, timeout))
        if probe.grpc is not None:
            return Attempt(*grpc_probe(probe.grpc, pod_ip, timeout))
    except Exception as err:  # a handler bug must not kill the pool thread or the actor
        return Attempt(ProbeResult.UNKNOWN, f"probe errored: {type(err).__name__}: {err}")
    return Attempt(ProbeResult.UNKNOWN, "missing probe handler")


def _text(data: bytes) -> str:
    return data[:MAX_BODY].decode(errors="replace")


# --- exec ------------------------------------------------------------------------------


def exec_probe(
    runtime: RuntimeService, container_id: ContainerID, action: ExecAction, timeout: float
) -> Outcome:
    """ExecSync the command in the container; exit code 0 succeeds."""
    result, output, _ = exec_attempt(runtime, container_id, action, timeout)
    return result, output


def exec_attempt(
    runtime: RuntimeService, container_id: ContainerID, action: ExecAction, timeout: float
) -> Attempt:
    """``exec_probe`` with the command's exit code."""
    try:
        result = runtime.exec_sync(container_id, action.command, timeout)
    except CRIDeadlineExceeded:
        return Attempt(ProbeResult.FAILURE, f"command {list(action.command)!r} timed out")
    except CRIError as err:
        return Attempt(ProbeResult.UNKNOWN, err.detail)
    output = _text(result.stdout + result.stderr)
    if result.exit_code == 0:
        return Attempt(ProbeResult.SUCCESS, output, 0)
    return Attempt(ProbeResult.FAILURE, output or f"command exited with {result.exit_code}",
                   result.exit_code)


# --- ports and addresses ----------------------------------------------------------------


def _port(port: IntOrString, container: Container) -> int:
    """The numeric port; ValueError when a name does not resolve or it is out of range."""
    number = resolve_port(port, container)
    if not 0 < number < 65536:
        raise ValueError(f"invalid port number: {number}")
    return number


# --- httpGet -----------------------------------------------------------------------------


def http_probe(action: HTTPGetAction, container: Container, pod_ip: str, timeout: float) -> Outcome:
    """GET the URL the action describes; 200 <= code < 400 succeeds (``http_attempt``)."""
    result, output, _ = http_attempt(action, container, pod_ip, timeout)
    return result, output


def http_attempt(
    action: HTTPGetAction, container: Container, pod_ip: str, timeout: float
) -> Attempt:
    """GET the URL the action describes; 200 <= code < 400 succeeds.

    Redirects are followed to the same host only (up to 10); a redirect elsewhere ends
    the probe with the redirect's own code, which counts as success with a warning, as
    upstream's prober does.
    """
    try:
        port = _port(action.port, container)
    except ValueError as err:
        return Attempt(ProbeResult.UNKNOWN, str(err))
    host = action.host or pod_ip
    if not host:
        return Attempt(ProbeResult.UNKNOWN, "the pod has no IP and the probe names no host")
    headers: list[tuple[str, str]] = [(h.name, h.value) for h in action.http_headers]
    names = {name.lower() for name, _ in headers}
    if "user-agent" not in names:
        headers.append(("User-Agent", USER_AGENT))
    if "accept" not in names:
        headers.append(("Accept", "*/*"))
    headers.append(("Connection", "close"))
    url = action_url(action, host, port)
    original_host = urllib.parse.urlsplit(url).hostname
    deadline = time.monotonic() + timeout
    try:
        for _ in range(MAX_REDIRECTS + 1):
            code, location, body = get(url, headers, deadline, verify_tls=False)
            if code in _REDIRECT_CODES and location:
                target = urllib.parse.urljoin(url, location)
                if urllib.parse.urlsplit(target).hostname != original_host:
                    return Attempt(
                        ProbeResult.SUCCESS,
                        f"Probe terminated redirects (to {target}), Response body: {_text(body)}",
                        code,
                    )
                if urllib.parse.urlsplit(location).netloc:
                    # An absolute redirect goes to its own host: drop a Host override.
                    headers = [(n, v) for n, v in headers if n.lower() != "host"]
                url = target
                continue
            if 200 <= code < 400:
                if code >= 300:  # a redirect without a Location: a warning, as upstream
                    return Attempt(ProbeResult.SUCCESS,
                                   f"Probe terminated redirects: {_text(body)}", code)
                return Attempt(ProbeResult.SUCCESS, _text(body), code)
            return Attempt(ProbeResult.FAILURE, f"HTTP probe failed with statuscode: {code}",
                           code)
        return Attempt(ProbeResult.FAILURE,
                       f"Get {url}: stopped after {MAX_REDIRECTS} redirects", code)
    except (OSError, http.client.HTTPException, ValueError) as err:
        return Attempt(ProbeResult.FAILURE, f"Get {url}: {err or type(err).__name__}")


# --- tcpSocket ---------------------------------------------------------------------------


def tcp_probe(
    action: TCPSocketAction, container: Container, pod_ip: str, timeout: float
) -> Outcome:
    """Open a TCP connection within the timeout, then close it."""
    try:
        port = _port(action.port, container)
    except ValueError as err:
        return ProbeResult.UNKNOWN, str(err)
    host = action.host or pod_ip
    if not host:
        return ProbeResult.UNKNOWN, "the pod has no IP and the probe names no host"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return ProbeResult.SUCCESS, ""
    except OSError as err:
        return ProbeResult.FAILURE, f"dial tcp {hostport(host, port)}: {err or 'timed out'}"


# --- grpc --------------------------------------------------------------------------------


def grpc_probe(action: GRPCAction, pod_ip: str, timeout: float) -> Outcome:
    """grpc.health.v1.Health/Check on the pod IP; SERVING succeeds, anything else fails."""
    if not pod_ip:
        return ProbeResult.UNKNOWN, "the pod has no IP"
    if not 0 < action.port < 65536:
        return ProbeResult.UNKNOWN, f"invalid port number: {action.port}"
    address = hostport(pod_ip, action.port)
    service = action.service or ""
    deadline = time.monotonic() + timeout
    channel = grpc.insecure_channel(address, options=[("grpc.primary_user_agent", USER_AGENT)])
    try:
        ready = grpc.channel_ready_future(channel)
        try:
            ready.result(timeout=timeout)
        except grpc.FutureTimeoutError:
            ready.cancel()
            return (
                ProbeResult.FAILURE,
                f"timeout: failed to connect service {address!r} within {timeout:g}s",
            )
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            response = stub.Check(
                health_pb2.HealthCheckRequest(service=service),
                timeout=max(deadline - time.monotonic(), 0.001),
            )
        except grpc.RpcError as err:
            code = err.code() if hasattr(err, "code") else None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return (
                    ProbeResult.FAILURE,
                    "this server does not implement the grpc health protocol "
                    "(grpc.health.v1.Health)",
                )
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return (
                    ProbeResult.FAILURE,
                    f"timeout: health rpc did not complete within {timeout:g}s",
                )
            details = err.details() if hasattr(err, "details") else str(err)
            return ProbeResult.FAILURE, f"rpc error: code = {code}, desc = {details}"
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
        if response.status == health_pb2.HealthCheckResponse.SERVING:
            return ProbeResult.SUCCESS, ""
        return ProbeResult.FAILURE, f"service unhealthy (responded with {status!r})"
    finally:
        channel.close()
