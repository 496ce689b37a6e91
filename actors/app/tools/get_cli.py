"""``kubelet-actors get pods [NAME] [-n NAMESPACE | -A] [-o table|wide|json|yaml]``: the
pods a running daemon holds (its ``/pods``), as ``kubectl get pods`` prints them.

The daemon is reached as ``logs`` and ``exec`` reach it: its main port (HTTPS) with
kubectl's connection flags, so a cluster-mode daemon (read-only port off, anonymous
requests refused) answers to ``--token`` or ``--client-certificate``/``--client-key``.
The table's cells follow kubectl's rules (actors.app.tools.pod_table); ``-o json`` and
``-o yaml`` print a v1 List of the pods, or the one pod that NAME names.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from actors.app.command_line import EXIT_FAILED, EXIT_OK, EXIT_USAGE, HelpFormatter, epilog
from actors.app.output_format import (
    JSON,
    MACHINE_FORMATS,
    TABLE,
    WIDE,
    YAML,
    add_output_flag,
    render,
)
from actors.app.tools.pod_table import format_table, pod_row
from actors.app.tools.remote.request import RemoteError, get, print_error
from actors.app.tools.remote.server import ServerOptions, add_server_flags
from runtime.errors import ConfigError

PROG = "kubelet-actors get"
RESOURCES = ("pods", "pod", "po")  # kubectl's names for the one resource offered
FORMATS = (TABLE, WIDE, JSON, YAML)
EXIT_CODES = epilog(
    (EXIT_OK, "printed (also when no pod matched)"),
    (EXIT_FAILED, "the named pod does not exist, or the daemon refused (the server's "
                  "message) or could not be reached"),
    (EXIT_USAGE, "a flag is wrong"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="List the pods of a running daemon (its /pods on the main port), as "
                    "kubectl get pods prints them: NAME, READY, STATUS, RESTARTS, AGE; "
                    "-o wide adds IP, NODE, NOMINATED NODE and READINESS GATES.",
        epilog=EXIT_CODES, formatter_class=HelpFormatter)
    add = parser.add_argument
    add("resource", metavar="pods", choices=RESOURCES, help="what to list: pods")
    add("name", metavar="NAME", nargs="?", default="", help="only this pod")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-n", "--namespace", default="default", help="the pods' namespace")
    where.add_argument("-A", "--all-namespaces", action="store_true",
                       help="the pods of every namespace (a NAMESPACE column first)")
    add_output_flag(parser, FORMATS)
    add_server_flags(parser)
    return parser


def as_pod(item: Mapping[str, Any]) -> dict[str, Any]:
    """A pod of ``/pods`` as a v1 Pod object: its kind and apiVersion first."""
    return {"apiVersion": "v1", "kind": "Pod", **item}


def as_list(pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The pods as kubectl -o json prints several: a v1 List."""
    return {"apiVersion": "v1", "items": [as_pod(p) for p in pods], "kind": "List",
            "metadata": {"resourceVersion": ""}}


def select(items: Sequence[Mapping[str, Any]], namespace: str | None,
           name: str) -> list[Mapping[str, Any]]:
    """The pods of ``namespace`` (None: any) named ``name`` (empty: any), in kubectl's
    order (by namespace, then name)."""
    chosen = [p for p in items
              if (namespace is None or (p.get("metadata") or {}).get("namespace") == namespace)
              and (not name or (p.get("metadata") or {}).get("name") == name)]
    return sorted(chosen, key=lambda p: ((p.get("metadata") or {}).get("namespace", ""),
                                         (p.get("metadata") or {}).get("name", "")))


def output(pods: Sequence[Mapping[str, Any]], fmt: str, name: str, all_namespaces: bool,
           now: datetime) -> str:
    """What ``get pods`` prints for ``pods`` (already selected) in format ``fmt``."""
    if fmt in MACHINE_FORMATS:
        return render(as_pod(pods[0]) if name else as_list(pods), fmt)
    rows = [pod_row(p, now) for p in pods]
    return format_table(rows, wide=fmt == WIDE, with_namespace=all_namespaces)


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(argv))
    if ns.all_namespaces and ns.name:
        print("error: a resource cannot be retrieved by name across all namespaces",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        server = ServerOptions.from_args(ns)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        listing = json.loads(get(server, "/pods"))
    except RemoteError as err:
        print(print_error(err, server), file=sys.stderr)
        return EXIT_FAILED
    except ValueError as err:
        print(f"error: the kubelet at {server.url} answered /pods with no JSON: {err}",
              file=sys.stderr)
        return EXIT_FAILED
    namespace = None if ns.all_namespaces else ns.namespace
    pods = select(listing.get("items") or (), namespace, ns.name)
    if ns.name and not pods:
        print(f'Error from server (NotFound): pods "{ns.name}" not found', file=sys.stderr)
        return EXIT_FAILED
    if not pods and ns.output not in MACHINE_FORMATS:
        # kubectl says so on stderr: stdout stays empty for a pipe.
        where = "" if namespace is None else f" in {namespace} namespace"
        print(f"No resources found{where}.", file=sys.stderr)
        return EXIT_OK
    sys.stdout.write(output(pods, ns.output, ns.name, ns.all_namespaces,
                            datetime.now(UTC)))
    return EXIT_OK
