"""``kubelet-actors logs POD [-n NAMESPACE] [-c C] [-f] [--previous] [--tail N]
[--timestamps] [--since D] [--since-time T] [--limit-bytes N]``: a container's log from a
running daemon's ``/containerLogs``, as ``kubectl logs`` shows it.

Without ``-c``: the pod's ``kubectl.kubernetes.io/default-container`` annotation, else its
only container; with several, kubectl's error naming them. The output goes to stdout as
it arrives (``-f`` until the container stops). Exit status 0, or 1 with the server's
message (404, 401, 403, 400, 422) or a connection error; 2 for bad flags
(actors.app.command_line).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from actors.app.command_line import EXIT_FAILED, EXIT_OK, EXIT_USAGE, HelpFormatter, epilog
from actors.app.config.durations import parse_duration
from actors.app.tools.remote.request import RemoteError, get, print_error
from actors.app.tools.remote.server import ServerOptions, add_server_flags
from runtime.errors import ConfigError

__all__ = ["RemoteError", "build_parser", "get", "log_query", "main", "pick_container"]

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
EXIT_CODES = epilog(
    (EXIT_OK, "the log was printed"),
    (EXIT_FAILED, "the daemon refused (the server's message) or could not be reached"),
    (EXIT_USAGE, "a flag is wrong"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubelet-actors logs",
        description="Print a container's log from a running daemon (its /containerLogs), "
                    "as kubectl logs does. Without -c: the pod's "
                    f"{DEFAULT_CONTAINER_ANNOTATION} annotation, else its only container.",
        epilog=EXIT_CODES,
        formatter_class=HelpFormatter)
    add = parser.add_argument
    add("pod", metavar="POD", help="the pod's name")
    add("-n", "--namespace", default="default", help="the pod's namespace")
    add("-c", "--container", default="",
        help="the container (empty: the default container, else the only one)")
    add("-f", "--follow", action="store_true", help="stream the log as it is written")
    add("-p", "--previous", action="store_true",
        help="the log of the previous, terminated instance")
    add("--tail", type=int, default=-1, metavar="N",
        help="lines from the end to show (-1: all)")
    add("--timestamps", action="store_true", help="put each line's time in front of it")
    add("--since", default="", metavar="DURATION",
        help="only lines newer than this duration (5s, 2m, 3h; empty: all)")
    add("--since-time", default="", metavar="TIME",
        help="only lines at or after this RFC3339 time (empty: all)")
    add("--limit-bytes", type=int, default=0, metavar="N",
        help="stop after this many bytes (0: no limit)")
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
        print(print_error(err, server), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
