"""``/exec``, ``/attach`` and ``/portForward``: the kubelet's streaming endpoints.

As upstream's kubelet (pkg/kubelet/server/server.go getExec, getAttach, getPortForward),
on the main port only, after authentication and authorization (subresource ``proxy``; verb
``get`` for GET, ``create`` for POST, both accepted):

1. the query says which streams (400 with upstream's message when it does not);
2. the pod must be one the kubelet runs (404 ``pod does not exist``; a port-forward whose
   UID differs, 404 ``pod not found``);
3. the container must run now (upstream's findContainer over the runtime's running
   containers): 404 ``container not found ("c")`` for exec, ``container c not found in pod
   name_ns`` for attach; a port-forward needs the pod's sandbox: 404 ``pod not found
   ("name_ns")`` (upstream answers these three with 500; a 404 names what is missing);
4. CRI Exec/Attach/PortForward gives the runtime's streaming URL; attach takes its TTY from
   the container's spec, as upstream (it cannot change once the process runs);
5. the connection is handed over (actors.app.http.upgrade) and proxied to that URL.

A request that is not an upgrade gets upstream's 500 ``Upgrade request required`` (before
the CRI call here: a token the runtime would keep for nothing). On the read-only port the
three paths answer 405 ``Debug endpoints are disabled.``, as upstream's read-only server.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import falcon
from loguru import logger

from actors.app.http.stream_proxy import Backend, BackendError, backend_request, dial
from actors.app.http.stream_request import (
    BadStreamRequest,
    StreamKind,
    StreamOptions,
    exec_command,
    forwarded_ports,
    is_upgrade_request,
    is_websocket_request,
    stream_options,
)
from actors.app.http.upgrade import UPGRADE, Upgrade
from actors.app.http.view import KubeletView
from runtime.cri.instrumented import Observer, Timing
from runtime.cri.intercept import intercept
from runtime.cri.streaming import StreamingCRI
from runtime.errors import CRIError, CRINotFound
from runtime.ids import SandboxID
from runtime.kuberuntime.streaming import newest_sandbox, running_container
from runtime.pod.model import Pod

STREAM_METHODS = ("GET", "POST")
DEBUG_DISABLED = "Debug endpoints are disabled."


def stream_host(view: KubeletView, runtime: object,
                observe: Observer | None = None) -> StreamHost | None:
    """The streams of a daemon on ``runtime`` (None when it cannot stream), each CRI call
    timed by ``observe`` (kubelet_runtime_operations_*: exec, attach, port_forward)."""
    if not isinstance(runtime, StreamingCRI):
        return None
    timed = intercept(runtime, StreamingCRI, Timing(observe)) if observe else runtime
    return StreamHost(view, timed)


class StreamNotFound(LookupError):
    """What the stream would go to does not exist (404 with the message)."""


class StreamHost:
    """Upstream's HostInterface for streams: the kubelet's pods and the runtime's URLs."""

    def __init__(self, view: KubeletView, runtime: StreamingCRI) -> None:
        self._view = view
        self._runtime = runtime

    def pod(self, namespace: str, name: str) -> Pod | None:
        """The pod the kubelet runs under that name (upstream's GetPodByName)."""
        return next((p for p, _ in self._view.pods()
                     if p.metadata.namespace == namespace and p.metadata.name == name), None)

    def exec_url(self, pod: Pod, container: str, cmd: tuple[str, ...],
                 opts: StreamOptions) -> str:
        found = running_container(self._runtime, pod.metadata.namespace, pod.metadata.name,
                                  container)
        if found is None:
            raise StreamNotFound(f'container not found ("{container}")')
        return self._runtime.exec(found, cmd, opts.tty, opts.stdin, opts.stdout, opts.stderr)

    def attach_url(self, pod: Pod, uid: str, container: str, opts: StreamOptions) -> str:
        missing = f"container {container} not found in pod {pod.full_name}"
        found = running_container(self._runtime, pod.metadata.namespace, pod.metadata.name,
                                  container)
        if found is None:
            raise StreamNotFound(missing)
        if uid and uid != pod.uid:
            raise StreamNotFound(f"pod {pod.full_name} not found")
        spec = pod.container(container) or next(
            (c for c in pod.spec.ephemeral_containers if c.name == container), None)
        if spec is None:
            raise StreamNotFound(missing)
        return self._runtime.attach(found, spec.tty, opts.stdin, opts.stdout, opts.stderr)

    def port_forward_url(self, pod: Pod, ports: tuple[int, ...]) -> str:
        sandbox: SandboxID | None = newest_sandbox(self._runtime, pod.uid)
        if sandbox is None:
            raise StreamNotFound(f'pod not found ("{pod.full_name}")')
        return self._runtime.port_forward(sandbox, ports)


def _query(req: falcon.Request) -> Mapping[str, Sequence[str]]:
    return urllib.parse.parse_qs(req.query_string, keep_blank_values=True)


def _cri_failure(err: CRIError) -> falcon.HTTPError:
    """upstream's streaming.WriteError: NotFound 404, ResourceExhausted 429, else 500."""
    if isinstance(err, CRINotFound):
        return falcon.HTTPNotFound(description=str(err))
    if err.code == "RESOURCE_EXHAUSTED":
        return falcon.HTTPTooManyRequests(description=str(err))
    return falcon.HTTPInternalServerError(description=str(err))


class StreamResource:
    """One streaming endpoint; the path's third segment is the container, or the UID when
    a fourth (the container) follows."""

    allowed_methods = STREAM_METHODS

    def __init__(self, kind: StreamKind, host: StreamHost) -> None:
        self._kind = kind
        self._host = host

    def on_get(self, req: falcon.Request, resp: falcon.Response, namespace: str, pod: str,
               name: str = "", container: str = "") -> None:
        uid, container = (name, container) if container else ("", name)
        query = _query(req)
        connection, upgrade = req.get_header("Connection"), req.get_header("Upgrade")
        try:
            if self._kind is StreamKind.PORT_FORWARD:
                opts = StreamOptions()
                uid = name
                ports = forwarded_ports(query, is_websocket_request(connection, upgrade))
            else:
                opts = stream_options(query)
                ports = ()
        except BadStreamRequest as err:
            raise falcon.HTTPBadRequest(description=str(err)) from None
        target = self._host.pod(namespace, pod)
        if target is None:
            raise falcon.HTTPNotFound(description="pod does not exist")
        if self._kind is StreamKind.PORT_FORWARD and uid and uid != target.uid:
            raise falcon.HTTPNotFound(description="pod not found")
        if not is_upgrade_request(connection):
            raise falcon.HTTPInternalServerError(description="Upgrade request required")
        url = self._url(target, uid, container, query, opts, ports)
        try:
            backend = Backend.from_url(url)
            sock = dial(backend)
        except BackendError as err:
            logger.warning("{} {}/{}: {}", self._kind.value, namespace, pod, err)
            raise falcon.HTTPInternalServerError(description=str(err)) from None
        headers = [(k, v) for k, v in req.headers.items()]
        what = "/".join(x for x in (namespace, pod, container) if x)
        req.env[UPGRADE] = Upgrade(
            sock, backend_request(req.method, backend, headers, req.remote_addr or ""),
            f"{self._kind.value} {what}")
        logger.bind(pod=f"{namespace}/{pod}", container=container).info(
            "{} {}: proxying to the runtime's streaming server", self._kind.value, what)
        resp.status = falcon.HTTP_101

    on_post = on_get

    def _url(self, pod: Pod, uid: str, container: str, query: Mapping[str, Sequence[str]],
             opts: StreamOptions, ports: tuple[int, ...]) -> str:
        try:
            if self._kind is StreamKind.EXEC:
                return self._host.exec_url(pod, container, exec_command(query), opts)
            if self._kind is StreamKind.ATTACH:
                return self._host.attach_url(pod, uid, container, opts)
            return self._host.port_forward_url(pod, ports)
        except StreamNotFound as err:
            raise falcon.HTTPNotFound(description=str(err)) from None
        except CRIError as err:
            raise _cri_failure(err) from err


class DisabledStreams:
    """The read-only port's answer on the streaming paths (and their subpaths)."""

    def __call__(self, req: falcon.Request, resp: falcon.Response, **params: Any) -> None:
        raise falcon.HTTPMethodNotAllowed(list(STREAM_METHODS), description=DEBUG_DISABLED)


_PATHS = {StreamKind.EXEC: ("/exec/{namespace}/{pod}/{name}",
                            "/exec/{namespace}/{pod}/{name}/{container}"),
          StreamKind.ATTACH: ("/attach/{namespace}/{pod}/{name}",
                              "/attach/{namespace}/{pod}/{name}/{container}"),
          StreamKind.PORT_FORWARD: ("/portForward/{namespace}/{pod}",
                                    "/portForward/{namespace}/{pod}/{name}")}


def add_stream_routes(app: falcon.App[falcon.Request, falcon.Response],
                      host: StreamHost) -> None:
    """The main port's streaming endpoints."""
    for kind, paths in _PATHS.items():
        resource = StreamResource(kind, host)
        for path in paths:
            app.add_route(path, resource)


def add_disabled_stream_routes(app: falcon.App[falcon.Request, falcon.Response]) -> None:
    """The read-only port's 405 on every streaming path."""
    app.add_sink(DisabledStreams(), prefix=r"^/(exec|attach|portForward)(/|$)")
