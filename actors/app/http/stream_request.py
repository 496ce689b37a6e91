"""What an exec, attach or port-forward request asks for: upstream's query rules, as data.

Pure functions over the query string and two headers, so they are tested with tables
ported from upstream (cri-streaming's remotecommand.NewOptions and portforward.NewV4Options,
apimachinery's httpstream.IsUpgradeRequest and wsstream.IsWebSocketRequest):

- ``input``, ``output``, ``error``, ``tty`` (upstream's ExecStdinParam and its siblings,
  runtime.pod.stream_params) are on only when exactly ``1`` (the first value counts, as Go's
  FormValue); ``tty`` turns ``error`` off; at least one stream must be asked for: "you must
  specify at least 1 of stdin, stdout, stderr". As upstream's kubelet, these are the only
  words read: ``stdin=1`` (PodExecOptions' word, which the API server rewrites) asks for
  nothing here.
- ``command`` repeats, one argument each.
- ``port`` (websocket port-forward only: SPDY clients name ports per stream) repeats and may
  hold comma-separated ports, each 1..65535.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from msgspec import Struct

from runtime.pod.stream_params import COMMAND, ON, PORT, STDERR, STDIN, STDOUT, TTY


class StreamKind(enum.Enum):
    """The three streaming endpoints (the value is the path's first segment)."""

    EXEC = "exec"
    ATTACH = "attach"
    PORT_FORWARD = "portForward"


class BadStreamRequest(ValueError):
    """The query does not say a valid stream (400, with upstream's message)."""


class StreamOptions(Struct, frozen=True):
    """Which of the process's streams the client wants (upstream's remotecommand.Options)."""

    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False


def _form_value(query: Mapping[str, Sequence[str]], name: str) -> str:
    values = query.get(name) or ()
    return values[0] if values else ""


def stream_options(query: Mapping[str, Sequence[str]]) -> StreamOptions:
    """The streams an exec or attach asks for, or BadStreamRequest."""
    tty = _form_value(query, TTY) == ON
    stdin = _form_value(query, STDIN) == ON
    stdout = _form_value(query, STDOUT) == ON
    stderr = _form_value(query, STDERR) == ON and not tty  # a TTY has no separate stderr
    if not (stdin or stdout or stderr):
        raise BadStreamRequest("you must specify at least 1 of stdin, stdout, stderr")
    return StreamOptions(stdin, stdout, stderr, tty)


def exec_command(query: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The command of an exec: every ``command`` value, in order."""
    return tuple(query.get(COMMAND) or ())


def forwarded_ports(query: Mapping[str, Sequence[str]], websocket: bool) -> tuple[int, ...]:
    """The ports a websocket port-forward names (none for SPDY), or BadStreamRequest."""
    if not websocket:
        return ()
    values = query.get(PORT) or ()
    if not values:
        raise BadStreamRequest(f'query parameter "{PORT}" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise BadStreamRequest(f'query parameter "{PORT}" cannot be empty')
        for part in value.split(","):
            if not part.isascii() or not part.isdigit() or int(part) > 65535:
                why = "value out of range" if part.isascii() and part.isdigit() else \
                    "invalid syntax"
                raise BadStreamRequest(f'unable to parse "{value}" as a port: '
                                       f'strconv.ParseUint: parsing "{part}": {why}')
            if int(part) < 1:
                raise BadStreamRequest(f'port "{value}" must be > 0')
            ports.append(int(part))
    return tuple(ports)


def is_upgrade_request(connection: str | None) -> bool:
    """Whether the Connection header asks for an upgrade (httpstream.IsUpgradeRequest)."""
    return connection is not None and "upgrade" in connection.lower()


def is_websocket_request(connection: str | None, upgrade: str | None) -> bool:
    """Whether the request upgrades to websockets (wsstream.IsWebSocketRequest)."""
    return (upgrade or "").lower() == "websocket" and is_upgrade_request(connection)
