"""``kubelet-actors logs POD [-n NAMESPACE] [-c C] [-f] [--previous] [--tail N]
[--timestamps] [--since D] [--since-time T] [--limit-bytes N]``: a container's log from a
running daemon's ``/containerLogs``, as ``kubectl logs`` shows it.

Without ``-c``: the pod's ``kubectl.kubernetes.io/default-container`` annotation, else its
only container; with several, kubectl's error naming them. The output goes to stdout as
it arrives (``-f`` until the container stops). Exit status 0, or 1 with the server's
message (404, 401, 403, 400, 422) or a connection error; 2 for bad flags.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from actors.app.config.durations import parse_duration
from actors.app.tools.remote.server import ServerOptions, add_server_flags
from runtime.errors import ConfigError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
_READ = 64 << 10


class RemoteError(Exception):
    """The daemon refused or could not be reached: the message to print."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubelet-actors logs", description="Print a container's log from the daemon.")
    add = parser.add_argument
    add("pod", help="the pod's name")
    add("-n", "--namespace", default="default", help="the pod's namespace (default default)")
    add("-c", "--container", default="", help="the container (default: the only one)")
    add("-f", "--follow", action="store_true", help="stream the log as it is written")
    add("-p", "--previous", action="store_true",
        help="the log of the previous, terminated instance")
    add("--tail", type=int, default=-1, help="lines from the end to show (-1: all)")
    add("--timestamps", action="store_true", help="put each line's time in front of it")
    add("--since", default="", help="only lines newer than this duration (5s, 2m, 3h)")
    add("--since-time", default="", help="only lines at or after this RFC3339 time")
    add("--limit-bytes", type=int, default=0, help="stop after this many bytes")
    add_server_flags(parser)
    return parser


def log_query(ns: argparse.Namespace) -> dict[str, str]:
    """The ``/containerLogs`` query kubectl would send for these flags."""
    if ns.since and ns.since_time:
        raise ConfigError("at most one of `sinceTime` or `sinceSeconds` may be specified")
    query: dict[str, str] = {}
    if ns.follow:
        query["follow"] = "true"
    if ns.previous:
        query["previous"] = "true"
    if ns.timestamps:
        query["timestamps"] = "true"
    if ns.tail >= 0:
        query["tailLines"] = str(ns.tail)
    if ns.limit_bytes:
        query["limitBytes"] = str(ns.limit_bytes)
    if ns.since:
        seconds = parse_duration(ns.since)
        query["sinceSeconds"] = str(max(1, math.ceil(seconds)))  # kubectl rounds up
    if ns.since_time:
        query["sinceTime"] = ns.since_time
    return query


def pick_container(pod: Mapping[str, Any], wanted: str) -> str:
    """kubectl's choice of container (polymorphichelpers logsForObject)."""
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    name = meta.get("name", "")
    names = [c["name"] for c in spec.get("containers", ())]
    inits = [c["name"] for c in spec.get("initContainers", ())]
    ephemerals = [c["name"] for c in spec.get("ephemeralContainers", ())]
    if not wanted:
        default = (meta.get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION, "")
        if default and default in (*names, *inits, *ephemerals):
            wanted = default
    if not wanted:
        if len(names) != 1:
            message = (f"a container name must be specified for pod {name}, choose one of: "
                       f"[{' '.join(names)}]")
            if inits:
                message += f" or one of the init containers: [{' '.join(inits)}]"
            if ephemerals:
                message += f" or one of the ephemeral containers: [{' '.join(ephemerals)}]"
            raise RemoteError(message)
        wanted = names[0]
    if wanted not in (*names, *inits, *ephemerals):
        raise RemoteError(f"container {wanted} is not valid for pod {name}")
    return wanted


def _connect(server: ServerOptions, timeout: float | None) -> http.client.HTTPConnection:
    host, port = server.host_port()
    context = server.ssl_context()
    if context is not None:
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _refusal(status: int, body: bytes) -> RemoteError:
    """The daemon's answer as kubectl prints a server error."""
    text = body.decode("utf-8", "replace").strip()
    reason = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
              422: "Invalid"}.get(status, str(status))
    try:
        value = json.loads(text)
        if isinstance(value, dict) and value.get("message"):
            text = str(value["message"])
            reason = str(value.get("reason") or reason)
    except ValueError:
        pass
    return RemoteError(f"Error from server ({reason}): {text}")


def get(server: ServerOptions, path: str, out: BinaryIO | None = None,
        timeout: float | None = 30.0) -> bytes:
    """GET ``path``; the body (or, with ``out``, the body written there as it arrives).
    RemoteError for any status but 200 and for connection failures."""
    conn = _connect(server, timeout)
    try:
        conn.request("GET", path, headers=server.headers())
        resp = conn.getresponse()
        if resp.status != 200:
            raise _refusal(resp.status, resp.read())
        if out is None:
            return resp.read()
        while chunk := resp.read1(_READ):
            out.write(chunk)
            out.flush()
        return b""
    except OSError as err:  # refused, reset, TLS failure, timeout
        raise RemoteError(f"cannot reach the kubelet at {server.url}: "
                          f"{getattr(err, 'strerror', None) or err}") from err
    except http.client.HTTPException as err:
        raise RemoteError(f"bad answer from the kubelet at {server.url}: {err!r}") from err
    finally:
        conn.close()


def find_pod(server: ServerOptions, namespace: str, name: str) -> Mapping[str, Any]:
    """The pod from the daemon's ``/pods``, or kubectl's NotFound."""
    pods = json.loads(get(server, "/pods"))
    for pod in pods.get("items", ()):
        meta = pod.get("metadata", {})
        if meta.get("namespace") == namespace and meta.get("name") == name:
            found: Mapping[str, Any] = pod
            return found
    raise RemoteError(f'Error from server (NotFound): pods "{name}" not found')


def main(argv: Sequence[str], out: BinaryIO | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(argv))
    try:
        server = ServerOptions.from_args(ns)
        query = log_query(ns)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    sink = out if out is not None else sys.stdout.buffer
    try:
        # As kubectl: the pod first, so a wrong -c is named before any log is asked.
        container = pick_container(find_pod(server, ns.namespace, ns.pod), ns.container)
        path = "/containerLogs/" + "/".join(
            urllib.parse.quote(p, safe="") for p in (ns.namespace, ns.pod, container))
        if query:
            path += "?" + urllib.parse.urlencode(query)
        get(server, path, sink, timeout=None if ns.follow else 60.0)
    except RemoteError as err:
        err = RemoteError(hint) if (hint := server.https_hint()) else err  # http:// for HTTPS
        print(err if str(err).startswith("Error from server") else f"error: {err}",
              file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
