"""The query rules of exec, attach and port-forward (tables ported from upstream's
cri-streaming remotecommand/portforward tests and apimachinery's httpstream tests), and
the framing of the websocket channel protocols (client-go's errorDecoderV4 cases)."""

from __future__ import annotations

import urllib.parse

import pytest

from actors.app.http.stream_proxy import Backend, BackendError, backend_request
from actors.app.http.stream_request import (
    BadStreamRequest,
    StreamOptions,
    exec_command,
    forwarded_ports,
    is_upgrade_request,
    is_websocket_request,
    stream_options,
)
from actors.app.tools.remote import channels
from actors.app.tools.remote.portforward import PortPair, parse_port_pairs
from actors.app.tools.remote.stream_cli import default_container, split_command, stream_query


def q(query: str) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(query, keep_blank_values=True)


@pytest.mark.parametrize(("query", "expected"), [
    ("input=1", StreamOptions(stdin=True)),
    ("output=1&error=1", StreamOptions(stdout=True, stderr=True)),
    ("input=1&output=1&tty=1", StreamOptions(True, True, False, True)),
    ("output=1&error=1&tty=1", StreamOptions(stdout=True, tty=True)),  # TTY: no stderr
    ("output=1&output=0", StreamOptions(stdout=True)),  # the first value counts
    ("output=true&input=1", StreamOptions(stdin=True)),  # only "1" is on
    # What the API server writes for kubectl's `exec -it -- sh` (pinned in
    # tests/unit/apiserver/test_emulated_apiserver_streams.py).
    ("command=sh&input=1&output=1&tty=1", StreamOptions(True, True, False, True)),
])
def test_stream_options(query: str, expected: StreamOptions) -> None:
    assert stream_options(q(query)) == expected


# PodExecOptions' own words (stdin, stdout, stderr) are the API server's business: upstream's
# kubelet reads only its ExecStdinParam family, so a client's query passed through
# unrewritten asks for no stream at all.
@pytest.mark.parametrize("query", ["", "tty=1", "error=1&tty=1", "output=true", "input=0",
                                   "stdin=1&stdout=1&stderr=1",
                                   "stdin=true&stdout=true&tty=true&command=sh"])
def test_stream_options_need_a_stream(query: str) -> None:
    with pytest.raises(BadStreamRequest) as err:
        stream_options(q(query))
    assert str(err.value) == "you must specify at least 1 of stdin, stdout, stderr"


@pytest.mark.parametrize(("stdin", "tty", "query", "expected"), [
    (False, False, "output=1&error=1&command=sh", StreamOptions(stdout=True, stderr=True)),
    (True, False, "output=1&input=1&error=1&command=sh", StreamOptions(True, True, True)),
    (True, True, "output=1&input=1&tty=1&command=sh", StreamOptions(True, True, False, True)),
])
def test_the_clients_query_speaks_the_kubelets_words(stdin: bool, tty: bool, query: str,
                                                     expected: StreamOptions) -> None:
    sent = stream_query(stdin, tty, ["sh"])
    assert urllib.parse.urlencode(sent) == query
    assert stream_options(q(urllib.parse.urlencode(sent))) == expected


def test_exec_command_keeps_every_argument_in_order() -> None:
    assert exec_command(q("command=sh&command=-c&command=echo+a%26b&output=1")) == (
        "sh", "-c", "echo a&b")
    assert exec_command(q("output=1")) == ()


@pytest.mark.parametrize(("query", "websocket", "expected"), [
    # portforward.NewV4Options: SPDY names ports per stream, not in the query.
    ("", False, ()),
    ("port=80", False, ()),
    ("port=80", True, (80,)),
    ("port=80&port=8080", True, (80, 8080)),
    ("port=80,8080&port=443", True, (80, 8080, 443)),
    ("port=65535", True, (65535,)),
])
def test_forwarded_ports(query: str, websocket: bool, expected: tuple[int, ...]) -> None:
    assert forwarded_ports(q(query), websocket) == expected


@pytest.mark.parametrize(("query", "message"), [
    ("", 'query parameter "port" is required'),
    ("port=", 'query parameter "port" cannot be empty'),
    ("port=http", 'unable to parse "http" as a port: strconv.ParseUint: parsing "http": '
                  "invalid syntax"),
    ("port=80,", 'unable to parse "80," as a port: strconv.ParseUint: parsing "": '
                 "invalid syntax"),
    ("port=-1", 'unable to parse "-1" as a port: strconv.ParseUint: parsing "-1": '
                "invalid syntax"),
    ("port=65536", 'unable to parse "65536" as a port: strconv.ParseUint: parsing "65536": '
                   "value out of range"),
    ("port=0", 'port "0" must be > 0'),
])
def test_forwarded_ports_refused(query: str, message: str) -> None:
    with pytest.raises(BadStreamRequest) as err:
        forwarded_ports(q(query), websocket=True)
    assert str(err.value) == message


@pytest.mark.parametrize(("connection", "upgrade", "is_upgrade", "is_websocket"), [
    # httpstream.IsUpgradeRequest / wsstream.IsWebSocketRequest
    (None, None, False, False),
    ("keep-alive", "websocket", False, False),
    ("Upgrade", "SPDY/3.1", True, False),
    ("keep-alive, Upgrade", "websocket", True, True),
    ("upgrade", "WebSocket", True, True),
    ("Upgrade", None, True, False),
])
def test_upgrade_detection(connection: str | None, upgrade: str | None, is_upgrade: bool,
                           is_websocket: bool) -> None:
    assert is_upgrade_request(connection) is is_upgrade
    assert is_websocket_request(connection, upgrade) is is_websocket


def test_the_backend_request_is_the_clients_with_the_runtimes_target() -> None:
    backend = Backend.from_url("http://127.0.0.1:4321/exec/Tok3n")
    head = backend_request("POST", backend, [
        ("Host", "node:10250"), ("Authorization", "Bearer secret"),
        ("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
        ("X-Stream-Protocol-Version", "v4.channel.k8s.io, v3.channel.k8s.io"),
        ("X-Forwarded-For", "10.0.0.1")], "192.0.2.7")
    assert head.decode().split("\r\n") == [
        "POST /exec/Tok3n HTTP/1.1", "Host: 127.0.0.1:4321", "Connection: Upgrade",
        "Upgrade: SPDY/3.1", "X-Stream-Protocol-Version: v4.channel.k8s.io",
        "X-Stream-Protocol-Version: v3.channel.k8s.io",
        "X-Forwarded-For: 10.0.0.1, 192.0.2.7", "", ""]


def test_only_plain_http_streaming_urls_are_proxied() -> None:
    with pytest.raises(BackendError, match="only http://"):
        Backend.from_url("https://127.0.0.1:4321/exec/x")


# --- the websocket channel protocols -------------------------------------------------


def test_binary_and_base64_framing() -> None:
    assert channels.encode(channels.STDIN, b"hi") == b"\x00hi"
    assert channels.decode(b"\x01out") == (1, b"out")
    assert channels.encode(channels.STDIN, b"hi", channels.V4_BASE64) == "0aGk="
    assert channels.decode("2ZXJy") == (2, b"err")
    assert channels.resize(80, 24) == b'\x04{"Width":80,"Height":24}'
    assert channels.close_stdin(channels.V5) == b"\xff\x00"
    assert channels.close_stdin(channels.V4) is None
    assert channels.port_prefix(8080) == b"\x90\x1f"
    with pytest.raises(channels.ProtocolError):
        channels.decode(b"")


@pytest.mark.parametrize(("body", "code", "message"), [
    (b'{"metadata":{},"status":"Success"}', 0, ""),
    (b'{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit '
     b'code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode",'
     b'"details":{"causes":[{"reason":"ExitCode","message":"3"}]}}', 3,
     "command terminated with exit code 3"),
    (b'{"status":"Failure","reason":"NonZeroExitCode"}', 1,
     "error stream protocol error: details must be set"),
    (b'{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[]}}', 1,
     "error stream protocol error: no ExitCode cause given"),
    (b'{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":['
     b'{"reason":"ExitCode","message":"x"}]}}', 1,
     'error stream protocol error: invalid exit code value "x"'),
    (b'{"status":"Failure","reason":"InternalError","message":"boom"}', 1, "boom"),
    (b'{"status":"Unknown"}', 1, "error stream protocol error: unknown error"),
])
def test_exit_status_as_client_go_decodes_it(body: bytes, code: int, message: str) -> None:
    assert channels.exit_status(body) == channels.ExitStatus(code, message)


@pytest.mark.parametrize(("specs", "pairs"), [
    (["8080"], (PortPair(8080, 8080),)),
    (["5000:80"], (PortPair(5000, 80),)),
    ([":80", "9000:9001"], (PortPair(0, 80), PortPair(9000, 9001))),
])
def test_port_pairs(specs: list[str], pairs: tuple[PortPair, ...]) -> None:
    assert parse_port_pairs(specs) == pairs


@pytest.mark.parametrize("spec", ["http", "80:", "70000:80", "80:0", "a:b"])
def test_bad_port_pairs(spec: str) -> None:
    with pytest.raises(ValueError, match="Error parsing"):
        parse_port_pairs([spec])


def test_command_split_and_default_container() -> None:
    assert split_command(["web", "-i", "--", "sh", "-c", "x -- y"]) == (
        ["web", "-i"], ["sh", "-c", "x -- y"])
    assert split_command(["web"]) == (["web"], [])
    spec = {"containers": [{"name": "main"}, {"name": "side"}]}
    annotated = {"metadata": {"name": "p", "annotations": {
        "kubectl.kubernetes.io/default-container": "side"}}, "spec": spec}
    assert default_container(annotated) == ("side", ["main", "side"])
    assert default_container({"metadata": {"name": "p"}, "spec": spec}) == (
        "main", ["main", "side"])
