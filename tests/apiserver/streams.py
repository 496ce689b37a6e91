"""pods/exec, pods/attach and pods/portforward: the emulator's proxy to the kubelet.

As kube-apiserver (pkg/registry/core/pod/strategy.go ExecLocation, AttachLocation,
PortForwardLocation; rest/subresources.go): the pod must be bound to a node; exec and
attach name a container of the pod (defaulted when it has one); the options become the
kubelet's query (``stdin=1``..., ``command`` repeated; ``ports`` become ``port``); the
upgrade request is then sent to the node's kubelet over TLS with the apiserver's
kubelet-client certificate, the client's credentials removed, and the connection proxied
byte for byte both ways (SPDY or websockets: the proxy does not care).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from actors.app.http.stream_proxy import Backend, backend_request, pipe
from tests.apiserver import errors

STREAM_SUBRESOURCES = ("exec", "attach", "portforward")
_KUBELET_PATHS = {"exec": "exec", "attach": "attach", "portforward": "portForward"}
_STREAMS = ("stdin", "stdout", "stderr", "tty")


def _true(values: Sequence[str]) -> bool:
    return bool(values) and values[0].lower() in ("1", "true")


def kubelet_location(subresource: str, pod: Mapping[str, Any],
                     query: Mapping[str, Sequence[str]]) -> str:
    """The kubelet's path and query for a connect request on ``pod``."""
    meta, spec = pod["metadata"], pod.get("spec", {})
    name = meta["name"]
    if not spec.get("nodeName"):
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    segments = [_KUBELET_PATHS[subresource], meta.get("namespace", "default"), name]
    params: list[tuple[str, str]] = []
    if subresource == "portforward":
        for value in query.get("ports") or ():
            params += [("port", p) for p in value.split(",") if p]
    else:
        containers = [c["name"] for key in ("containers", "initContainers",
                                            "ephemeralContainers")
                      for c in spec.get(key) or ()]
        container = (query.get("container") or [""])[0]
        if not container:
            regular = [c["name"] for c in spec.get("containers") or ()]
            if len(regular) != 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(regular)}]")
            container = regular[0]
        if container not in containers:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        segments.append(container)
        params += [(s, "1") for s in _STREAMS if _true(query.get(s) or ())]
        if subresource == "exec":
            params += [("command", c) for c in query.get("command") or ()]
    path = "/" + "/".join(urllib.parse.quote(s, safe="") for s in segments)
    return path + (f"?{urllib.parse.urlencode(params)}" if params else "")


def _early_bytes(rfile: Any, sock: socket.socket) -> bytes:
    """What the handler's reader buffered past the request head, without blocking."""
    sock.setblocking(False)
    try:
        data = rfile.read1(65536)
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        data = b""
    return data or b""


def proxy_stream(handler: Any, kubelet_url: str, context: ssl.SSLContext, location: str,
                 name: str) -> None:
    """Send the handler's upgrade request to the kubelet at ``location`` and move bytes
    until either side ends; the handler's connection is closed after."""
    if "upgrade" not in (handler.headers.get("Connection") or "").lower():
        raise errors.bad_request("Upgrade request required")
    target = urllib.parse.urlsplit(kubelet_url)
    host, port = target.hostname or "", target.port or 10250
    try:
        raw = socket.create_connection((host, port), timeout=10)
        backend = context.wrap_socket(raw, server_hostname=host)
    except OSError as err:
        raise errors.internal(f"error dialing backend: {err}") from None
    head = backend_request(handler.command, Backend(host, port, location),
                           handler.headers.items(), handler.client_address[0])
    handler.close_connection = True
    early = _early_bytes(handler.rfile, handler.connection)
    with contextlib.suppress(OSError):
        pipe(handler.connection, backend, head + early, name)
