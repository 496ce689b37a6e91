"""pods/exec, pods/attach and pods/portforward: the emulator's proxy to the kubelet.

As kube-apiserver: the client's query is read as PodExecOptions, PodAttachOptions or
PodPortForwardOptions (apimachinery's query conversion: a bool is false only when absent,
``0`` or ``false``; ``ports`` repeats or holds commas, each a 16-bit unsigned number), then
the pod strategy (pkg/registry/core/pod/strategy.go streamLocation, PortForwardLocation,
streamParams, validateContainer) makes the kubelet's URL:

- exec and attach name a container of the pod (any kind: init, regular, ephemeral); none
  named, the pod's only regular container, else a 400 listing every container; then the pod
  must be bound to a node. Port-forward names no container.
- the query is the kubelet's own words (runtime.pod.stream_params): each stream asked for
  as ``input``, ``output``, ``error``, ``tty`` ``=1``, exec's ``command`` once per word;
  port-forward's ports joined by commas in one ``port``. Nothing else is copied (the
  container goes in the path), and the keys come sorted, as Go's url.Values.Encode writes
  them.

The upgrade request is then sent to the node's kubelet over TLS with the apiserver's
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
from runtime.pod import stream_params
from tests.apiserver import errors

STREAM_SUBRESOURCES = ("exec", "attach", "portforward")
_KUBELET_PATHS = {"exec": "exec", "attach": "attach", "portforward": "portForward"}
_STREAMS = (("stdin", stream_params.STDIN), ("stdout", stream_params.STDOUT),
            ("stderr", stream_params.STDERR), ("tty", stream_params.TTY))
"""PodExecOptions' (and PodAttachOptions') words and the kubelet's, in streamParams' order."""
_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")
"""podutil.VisitContainers' order."""


def query_bool(values: Sequence[str]) -> bool:
    """A bool query parameter as apimachinery converts it (Convert_Slice_string_To_bool):
    false when absent, ``0`` or ``false`` (any case), true for anything else, even empty."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def query_ports(values: Sequence[str]) -> list[int]:
    """PodPortForwardOptions.ports from the query (Convert_Slice_string_To_Slice_int32):
    each value split at commas, each part a number of at most 16 bits; a 400 otherwise."""
    ports: list[int] = []
    for value in values:
        for part in value.split(","):
            why = ""
            if not part.isascii() or not part.isdigit():
                why = "invalid syntax"
            elif int(part) > 65535:
                why = "value out of range"
            if why:
                raise errors.bad_request(f'cannot convert to []int32: strconv.ParseUint: '
                                         f'parsing "{part}": {why}')
            ports.append(int(part))
    return ports


def validate_container(container: str, pod: Mapping[str, Any]) -> str:
    """The container an exec or attach goes to (upstream's validateContainer)."""
    name, spec = pod["metadata"]["name"], pod.get("spec", {})
    if container:
        every = [c["name"] for kind in _CONTAINER_KINDS for c in spec.get(kind) or ()]
        if container not in every:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        return container
    regular = [c["name"] for c in spec.get("containers") or ()]
    if len(regular) == 1:
        return str(regular[0])
    if not regular:
        raise errors.bad_request(f"a container name must be specified for pod {name}")
    every = [c["name"] for kind in _CONTAINER_KINDS for c in spec.get(kind) or ()]
    raise errors.bad_request(f"a container name must be specified for pod {name}, choose one "
                             f"of: [{' '.join(every)}]")


def _node_name(pod: Mapping[str, Any]) -> str:
    node = str(pod.get("spec", {}).get("nodeName") or "")
    if not node:
        raise errors.bad_request(
            f"pod {pod['metadata']['name']} does not have a host assigned")
    return node


def kubelet_location(subresource: str, pod: Mapping[str, Any],
                     query: Mapping[str, Sequence[str]]) -> str:
    """The kubelet's path and query for a connect request on ``pod`` whose query (parsed,
    blank values kept) is ``query``."""
    meta = pod["metadata"]
    segments = [_KUBELET_PATHS[subresource], meta.get("namespace", "default"), meta["name"]]
    params: list[tuple[str, str]] = []
    if subresource == "portforward":
        ports = query_ports(query.get("ports") or ())
        _node_name(pod)
        if ports:
            params.append((stream_params.PORT, ",".join(str(p) for p in ports)))
    else:
        segments.append(validate_container((query.get("container") or [""])[0], pod))
        _node_name(pod)
        params += [(word, stream_params.ON) for option, word in _STREAMS
                   if query_bool(query.get(option) or ())]
        if subresource == "exec":
            params += [(stream_params.COMMAND, c) for c in query.get("command") or ()]
    params.sort(key=lambda kv: kv[0])  # url.Values.Encode: keys sorted, values in order
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
