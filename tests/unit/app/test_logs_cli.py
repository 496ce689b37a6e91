"""``kubelet-actors logs``: the query kubectl would send, its choice of container, and the
connection options the remote commands share."""

from __future__ import annotations

import argparse
import ssl
from typing import Any

import pytest

from actors.app.tools.remote.logs_cli import RemoteError, build_parser, log_query, pick_container
from actors.app.tools.remote.server import DEFAULT_SERVER, ServerOptions, add_server_flags
from runtime.errors import ConfigError


def _ns(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["web", *argv])


@pytest.mark.parametrize(("argv", "query"), [
    ((), {}),
    (("-f", "--previous", "--timestamps"),
     {"follow": "true", "previous": "true", "timestamps": "true"}),
    (("--tail", "5", "--limit-bytes", "10"), {"tailLines": "5", "limitBytes": "10"}),
    (("--tail", "-1"), {}),
    (("--since", "1500ms"), {"sinceSeconds": "2"}),
    (("--since", "2m"), {"sinceSeconds": "120"}),
    (("--since-time", "2024-05-01T10:00:00Z"), {"sinceTime": "2024-05-01T10:00:00Z"}),
])
def test_log_query(argv: tuple[str, ...], query: dict[str, str]) -> None:
    assert log_query(_ns(*argv)) == query


def test_since_and_since_time_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="at most one of `sinceTime` or `sinceSeconds`"):
        log_query(_ns("--since", "1m", "--since-time", "2024-05-01T10:00:00Z"))


def _pod(*names: str, inits: tuple[str, ...] = (), default: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "default"}
    if default:
        meta["annotations"] = {"kubectl.kubernetes.io/default-container": default}
    return {"metadata": meta, "spec": {
        "containers": [{"name": n} for n in names],
        "initContainers": [{"name": n} for n in inits]}}


def test_pick_container_as_kubectl() -> None:
    assert pick_container(_pod("app"), "") == "app"
    assert pick_container(_pod("a", "b", default="b"), "") == "b"
    assert pick_container(_pod("a", inits=("setup",)), "setup") == "setup"
    with pytest.raises(RemoteError) as caught:
        pick_container(_pod("a", "b", inits=("setup",)), "")
    assert str(caught.value) == ("a container name must be specified for pod web, choose "
                                 "one of: [a b] or one of the init containers: [setup]")
    with pytest.raises(RemoteError, match="container nosuch is not valid for pod web"):
        pick_container(_pod("a"), "nosuch")


def _server(*argv: str) -> ServerOptions:
    parser = argparse.ArgumentParser()
    add_server_flags(parser)
    return ServerOptions.from_args(parser.parse_args(list(argv)))


def test_server_options() -> None:
    default = _server()
    assert default.url == DEFAULT_SERVER
    assert default.host_port() == ("127.0.0.1", 10250)
    assert default.headers() == {}
    plain = _server("--server", "http://node:10255", "--token", "abc")
    assert plain.host_port() == ("node", 10255)
    assert plain.ssl_context() is None
    assert plain.headers() == {"Authorization": "Bearer abc"}
    insecure = _server("--server", "https://node", "--insecure-skip-tls-verify")
    assert insecure.host_port() == ("node", 443)
    context = insecure.ssl_context()
    assert context is not None and context.verify_mode == ssl.CERT_NONE
    with pytest.raises(ConfigError, match="go together"):
        _server("--client-certificate", "c.crt")
    with pytest.raises(ConfigError, match="insecure flag is not allowed"):
        _server("--insecure-skip-tls-verify", "--certificate-authority", "ca.crt")
    with pytest.raises(ConfigError, match="not an http"):
        _server("--server", "ftp://node")
