"""``kubelet-actors exec`` and ``attach``: kubectl's commands, straight to a daemon.

``exec POD [-n NAMESPACE] [-c CONTAINER] [-i] [-t] -- COMMAND...`` runs a command in a
running container; ``attach POD [-n NAMESPACE] [-c CONTAINER] [-i] [-t]`` joins its main
process. Both speak the websocket channel protocol (v5 when the runtime offers it, else
v4) to the daemon's ``/exec`` and ``/attach`` endpoints, which proxy to the runtime. The exit
code is the remote command's (kubectl's "command terminated with exit code N"); a refused
or failed session exits 1 with the reason. Without ``-c`` the pod's
``kubectl.kubernetes.io/default-container`` annotation, else its first container, is used,
as kubectl does.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import urllib.parse
from collections.abc import Sequence
from typing import Any

from actors.app.tools.remote import channels
from actors.app.tools.remote.server import ServerOptions, add_server_flags
from actors.app.tools.remote.session import (
    RemoteCommand,
    StreamRefused,
    open_stream,
    raw_terminal,
    stream_url,
)
from runtime.pod import stream_params

EXIT_FAILED = 1
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"


class CommandError(Exception):
    """A usage or lookup error, shown as ``error: ...`` (exit 1, as kubectl)."""


_DESCRIPTIONS = {
    "exec": "Run a command in a running container of a pod on the daemon, as kubectl exec "
            "does: its stdout and stderr come back (one stream with -t), stdin goes to it "
            "with -i, and the command's exit code is this command's. COMMAND [ARG...], "
            "after --, is run as given, not in a shell.",
    "attach": "Attach to the main process of a running container of a pod on the daemon, "
              "as kubectl attach does: its output comes back, stdin goes to it with -i "
              "(the container must have stdin open), until it ends or you interrupt.",
}
_USAGE = {
    "exec": "%(prog)s POD [-n NAMESPACE] [-c CONTAINER] [-i] [-t] [-q] [--server URL] "
            "[TLS and token flags] -- COMMAND [ARG...]",
    "attach": "%(prog)s POD [-n NAMESPACE] [-c CONTAINER] [-i] [-t] [-q] [--server URL] "
              "[TLS and token flags]",
}
_EXIT_CODES = {
    "exec": "exit codes: the remote command's own (kubectl's \"command terminated with exit "
            "code N\"); 1 the session was refused or failed (the reason is printed); 2 a "
            "flag is wrong",
    "attach": "exit codes: the process's own once it ends; 1 the session was refused or "
              "failed (the reason is printed); 2 a flag is wrong",
}


def build_parser(command: str) -> argparse.ArgumentParser:
    """The parser of ``exec`` or ``attach`` (exec's COMMAND, after ``--``, is split off
    before parsing: ``split_command``)."""
    parser = argparse.ArgumentParser(prog=f"kubelet-actors {command}", usage=_USAGE[command],
                                     description=_DESCRIPTIONS[command],
                                     epilog=_EXIT_CODES[command])
    add = parser.add_argument
    add("pod", metavar="POD", help="the pod's name")
    add("-n", "--namespace", default="default",
        help="the pod's namespace (default: default)")
    add("-c", "--container", default="",
        help=f"the container (default: the pod's {DEFAULT_CONTAINER} annotation, else its "
             "first container)")
    add("-i", "--stdin", action="store_true", help="pass stdin to the container")
    add("-t", "--tty", action="store_true",
        help="stdin is a TTY: the local terminal in raw mode, its size followed")
    add("-q", "--quiet", action="store_true",
        help="only print the remote session's output")
    add_server_flags(parser)
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The options before ``--`` and the command after it."""
    if "--" not in argv:
        return list(argv), []
    at = list(argv).index("--")
    return list(argv[:at]), list(argv[at + 1:])


def stream_query(stdin: bool, tty: bool, command: Sequence[str]) -> list[tuple[str, str]]:
    """The kubelet's query for a session (the words upstream's API server writes for it):
    stdout always, stdin when asked, a TTY or else stderr, the command's words in order."""
    query = [(stream_params.STDOUT, stream_params.ON)]
    if stdin:
        query.append((stream_params.STDIN, stream_params.ON))
    query.append((stream_params.TTY if tty else stream_params.STDERR, stream_params.ON))
    return query + [(stream_params.COMMAND, part) for part in command]


def _get_json(server: ServerOptions, path: str) -> Any:
    host, port = server.host_port()
    context = server.ssl_context()
    conn: http.client.HTTPConnection = (
        http.client.HTTPSConnection(host, port, context=context, timeout=30)
        if context is not None else http.client.HTTPConnection(host, port, timeout=30))
    try:
        conn.request("GET", path, headers=server.headers())
        response = conn.getresponse()
        body = response.read()
    except OSError as err:
        raise CommandError(f"cannot reach {server.url}: {err}") from err
    finally:
        conn.close()
    if response.status != 200:
        raise CommandError(f"{path}: {response.status} {body.decode(errors='replace')}")
    return json.loads(body)


def default_container(pod: dict[str, Any]) -> tuple[str, list[str]]:
    """kubectl's choice of container and the names it chose from."""
    names = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
    annotated = (pod.get("metadata", {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
    if annotated and annotated in names:
        return annotated, names
    if not names:
        raise CommandError(f"pod {pod['metadata']['name']} has no containers")
    return names[0], names


def _container(server: ServerOptions, namespace: str, pod: str, quiet: bool) -> str:
    for item in _get_json(server, "/pods").get("items", []):
        meta = item.get("metadata", {})
        if meta.get("name") == pod and meta.get("namespace") == namespace:
            name, names = default_container(item)
            if len(names) > 1 and not quiet:
                print(f'Defaulted container "{name}" out of: {", ".join(names)}',
                      file=sys.stderr)
            return name
    raise CommandError(f'pods "{pod}" not found')


def _quote(*segments: str) -> str:
    return "".join("/" + urllib.parse.quote(s, safe="") for s in segments)


def main(argv: Sequence[str]) -> int:
    """``argv``: the command name (exec or attach), then its arguments."""
    command, rest = argv[0], argv[1:]
    options, remote = split_command(rest)
    args = build_parser(command).parse_args(options)
    server = ServerOptions.from_args(args)
    try:
        if command == "exec" and not remote:
            raise CommandError("you must specify at least one command for the container")
        tty = args.tty
        if tty and not sys.stdin.isatty():
            print("Unable to use a TTY - input is not a terminal or the right kind of file",
                  file=sys.stderr)
            tty = False
        container = args.container or _container(server, args.namespace, args.pod,
                                                  args.quiet)
        query = stream_query(args.stdin, tty, remote)
        url = stream_url(server, f"/{command}" + _quote(args.namespace, args.pod, container),
                         query)
        ws = open_stream(server, url, channels.REMOTE_COMMAND_PROTOCOLS)
    except (CommandError, StreamRefused) as err:
        print(f"error: {server.https_hint() or err}", file=sys.stderr)
        return EXIT_FAILED
    session = RemoteCommand(sys.stdin.buffer if args.stdin else None, sys.stdout.buffer,
                            sys.stderr.buffer, sys.stdout.fileno() if tty else None)
    with ws:
        if tty:
            with raw_terminal(sys.stdin.fileno()):
                status = session.run(ws)
        else:
            status = session.run(ws)
    if status.message:
        print(status.message, file=sys.stderr)
    return status.code
