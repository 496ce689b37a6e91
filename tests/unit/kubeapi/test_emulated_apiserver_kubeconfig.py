"""``--kubeconfig`` as the format allows, each way in proven against the emulated API server
over TLS: client certificates (data and files), bearer tokens, tokenFile re-read, exec
credential plugins (token and certificate, expiry, re-exec after a 401), basic auth,
tls-server-name, insecure-skip-tls-verify; and broken kubeconfigs refused with the file and
field named, each also refused by kubectl (upstream's clientcmd validation)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime import errors
from runtime.clock import FakeClock
from runtime.kubeapi.client import NAMESPACES, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import kubectl_binary


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(path: Path, user: dict[str, Any], cluster: dict[str, Any],
           **extra: Any) -> Path:
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": "c", "cluster": cluster}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
           "current-context": "ctx", **extra}
    path.write_text(yaml.safe_dump(doc))
    return path


def _cluster(server: EmulatedAPIServer) -> dict[str, Any]:
    return {"server": server.url, "certificate-authority-data": _b64(server.ca.cert_pem)}


def _whoami(path: Path, clock: FakeClock | None = None) -> tuple[KubeClient, Transport]:
    transport = Transport(load_kubeconfig(path), clock=clock)
    return KubeClient(transport), transport


def test_emulated_apiserver_client_certificate_files_relative_to_the_kubeconfig(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    pair = server.client_cert("system:node:n1", ("system:nodes",))
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(server.ca.cert_pem)
    (tmp_path / "pki" / "node.crt").write_bytes(pair.cert_pem)
    (tmp_path / "pki" / "node.key").write_bytes(pair.key_pem)
    path = _write(tmp_path / "kc", {"client-certificate": "pki/node.crt",
                                    "client-key": "pki/node.key"},
                  {"server": server.url, "certificate-authority": "pki/ca.crt"})
    client, _ = _whoami(path)
    assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"


def test_emulated_apiserver_bearer_token_and_wrong_token(server: EmulatedAPIServer,
                                                        tmp_path: Path) -> None:
    server.add_token("good-token", "system:node:n1")
    client, _ = _whoami(_write(tmp_path / "kc", {"token": "good-token"}, _cluster(server)))
    client.get(NAMESPACES, "default")
    bad, _ = _whoami(_write(tmp_path / "bad", {"token": "nope"}, _cluster(server)))
    with pytest.raises(errors.APIUnauthorized) as refused:
        bad.get(NAMESPACES, "default")
    assert refused.value.code == 401


def test_emulated_apiserver_token_file_is_read_again_after_a_minute(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    server.add_token("t1", "system:node:n1")
    server.add_token("t2", "system:node:n1")
    (tmp_path / "token").write_text("t1\n")
    clock = FakeClock()
    client, _ = _whoami(_write(tmp_path / "kc", {"tokenFile": "token"}, _cluster(server)),
                        clock)
    client.get(NAMESPACES, "default")
    (tmp_path / "token").write_text("t2\n")
    server.authenticator.remove_token("t1")
    clock.step(61)  # client-go's cached file token source keeps a token for a minute
    client.get(NAMESPACES, "default")


def test_emulated_apiserver_basic_auth_is_sent_and_refused(server: EmulatedAPIServer,
                                                           tmp_path: Path) -> None:
    # kube-apiserver dropped basic auth in 1.19: the client sends it, the server says 401.
    client, transport = _whoami(_write(tmp_path / "kc", {"username": "bob", "password": "pw"},
                                       _cluster(server)))
    assert transport.credentials.authorization() == "Basic " + _b64(b"bob:pw")
    with pytest.raises(errors.APIUnauthorized):
        client.get(NAMESPACES, "default")


def test_emulated_apiserver_tls_server_name_and_insecure(server: EmulatedAPIServer,
                                                        tmp_path: Path) -> None:
    server.add_token("tok", "system:node:n1")
    named = {**_cluster(server), "tls-server-name": "kubernetes.default.svc"}
    client, _ = _whoami(_write(tmp_path / "named", {"token": "tok"}, named))
    client.get(NAMESPACES, "default")
    wrong = {**_cluster(server), "tls-server-name": "not-the-server.example"}
    client, _ = _whoami(_write(tmp_path / "wrong", {"token": "tok"}, wrong))
    with pytest.raises(errors.APIUnreachable) as mismatch:
        client.get(NAMESPACES, "default")
    assert "certificate" in str(mismatch.value).lower()
    client, _ = _whoami(_write(tmp_path / "insecure", {"token": "tok"},
                               {"server": server.url, "insecure-skip-tls-verify": True}))
    client.get(NAMESPACES, "default")
    client, _ = _whoami(_write(tmp_path / "untrusted", {"token": "tok"},
                               {"server": server.url}))
    with pytest.raises(errors.APIUnreachable):
        client.get(NAMESPACES, "default")


_PLUGIN = '''\
import json, os, sys, pathlib
state = pathlib.Path(sys.argv[1])
runs = int(state.read_text()) + 1 if state.exists() else 1
state.write_text(str(runs))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["spec"]["interactive"] is False
assert os.environ["PLUGIN_ENV"] == "set-by-kubeconfig"
status = json.loads(pathlib.Path(sys.argv[2]).read_text())
if "token" in status:
    status["token"] = status["token"] + str(runs)
if os.environ.get("CLUSTER_INFO"):
    status["token"] = "server=" + info["spec"]["cluster"]["server"]
json.dump({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status},
          sys.stdout)
'''


def _exec_user(tmp_path: Path, status: dict[str, Any], **more: Any) -> dict[str, Any]:
    (tmp_path / "plugin.py").write_text(_PLUGIN)
    (tmp_path / "status.json").write_text(json.dumps(status))
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(tmp_path / "plugin.py"), str(tmp_path / "runs"),
                              str(tmp_path / "status.json")],
                     "env": [{"name": "PLUGIN_ENV", "value": "set-by-kubeconfig"}],
                     "interactiveMode": "Never", **more}}


def test_emulated_apiserver_exec_plugin_token_cached_until_expiry(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    clock = FakeClock()
    expiry = "2023-11-14T22:23:20Z"  # FakeClock starts at 1_700_000_000 = 22:13:20Z
    for n in (1, 2):
        server.add_token(f"exec-{n}", "system:node:n1")
    path = _write(tmp_path / "kc", _exec_user(
        tmp_path, {"token": "exec-", "expirationTimestamp": expiry}), _cluster(server))
    client, transport = _whoami(path, clock)
    client.get(NAMESPACES, "default")
    clock.step(599)
    client.get(NAMESPACES, "default")
    assert transport.credentials.exec_runs == 1  # cached until it expires
    clock.step(2)
    client.get(NAMESPACES, "default")
    assert transport.credentials.exec_runs == 2


def test_emulated_apiserver_exec_plugin_runs_again_after_a_401(server: EmulatedAPIServer,
                                                               tmp_path: Path) -> None:
    for n in (1, 2):
        server.add_token(f"exec-{n}", "system:node:n1")
    path = _write(tmp_path / "kc", _exec_user(tmp_path, {"token": "exec-"}), _cluster(server))
    client, transport = _whoami(path)
    client.get(NAMESPACES, "default")
    server.authenticator.remove_token("exec-1")  # revoked: 401, run the plugin, retry once
    client.get(NAMESPACES, "default")
    assert transport.credentials.exec_runs == 2
    server.authenticator.remove_token("exec-2")  # and no third token: the 401 stands
    with pytest.raises(errors.APIUnauthorized):
        client.get(NAMESPACES, "default")


def test_emulated_apiserver_exec_plugin_client_certificate(server: EmulatedAPIServer,
                                                           tmp_path: Path) -> None:
    pair = server.client_cert("system:node:n1", ("system:nodes",))
    user = _exec_user(tmp_path, {"clientCertificateData": pair.cert_pem.decode(),
                                 "clientKeyData": pair.key_pem.decode()})
    client, transport = _whoami(_write(tmp_path / "kc", user, _cluster(server)))
    client.get(NAMESPACES, "default")
    assert transport.credentials.authorization() is None


def test_emulated_apiserver_exec_plugin_gets_cluster_info(server: EmulatedAPIServer,
                                                          tmp_path: Path) -> None:
    server.add_token(f"server={server.url}", "system:node:n1")
    user = _exec_user(tmp_path, {"token": "x"}, provideClusterInfo=True)
    user["exec"]["env"].append({"name": "CLUSTER_INFO", "value": "1"})
    client, _ = _whoami(_write(tmp_path / "kc", user, _cluster(server)))
    client.get(NAMESPACES, "default")


@pytest.mark.parametrize("status, why", [
    ({}, "didn't return a token or cert/key pair"),
    ({"clientCertificateData": "x"}, "only certificate or key"),
])
def test_emulated_apiserver_exec_plugin_bad_answers(server: EmulatedAPIServer, tmp_path: Path,
                                                    status: dict[str, Any], why: str) -> None:
    client, _ = _whoami(_write(tmp_path / "kc", _exec_user(tmp_path, status),
                               _cluster(server)))
    with pytest.raises(errors.APIUnauthorized, match=why):
        client.get(NAMESPACES, "default")


# --- broken kubeconfigs: ours and kubectl's verdicts --------------------------------------

_BROKEN: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], str]] = [
    ("ca data and file", {"token": "t"},
     {"certificate-authority-data": "aGVsbG8=", "certificate-authority": "/etc/hostname"}, {},
     "clusters[0].cluster.certificate-authority-data"),
    ("cert without key", {"client-certificate-data": "aGVsbG8="}, {}, {},
     "users[0].user.client-key"),
    ("token and basic auth", {"token": "t", "username": "a", "password": "b"}, {}, {},
     "users[0].user"),
    ("exec without apiVersion", {"exec": {"command": "x", "interactiveMode": "Never"}}, {}, {},
     "users[0].user.exec.apiVersion"),
    ("exec v1 without interactiveMode",
     {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1"}}, {}, {},
     "users[0].user.exec.interactiveMode"),
    ("insecure with a CA", {"token": "t"},
     {"insecure-skip-tls-verify": True, "certificate-authority-data": "aGVsbG8="}, {},
     "clusters[0].cluster.insecure-skip-tls-verify"),
    ("missing CA file", {"token": "t"}, {"certificate-authority": "no/such/ca.crt"}, {},
     "clusters[0].cluster.certificate-authority"),
    ("no current context", {"token": "t"}, {}, {"current-context": ""}, "current-context"),
    ("context names a missing cluster", {"token": "t"}, {},
     {"contexts": [{"name": "ctx", "context": {"cluster": "nope", "user": "u"}}]},
     "contexts[0].context.cluster"),
]


@pytest.mark.parametrize("case", _BROKEN, ids=[c[0] for c in _BROKEN])
def test_emulated_apiserver_broken_kubeconfig_names_file_and_field(
        server: EmulatedAPIServer, tmp_path: Path,
        case: tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], str]) -> None:
    _, user, cluster_extra, extra, field = case
    path = _write(tmp_path / "broken.kubeconfig", user,
                  {"server": server.url, **cluster_extra}, **extra)
    with pytest.raises(errors.KubeconfigError) as refused:
        load_kubeconfig(path)
    assert refused.value.file == str(path) and refused.value.field == field
    assert str(path) in str(refused.value) and field in str(refused.value)
    # Upstream refuses each of them too.
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(path),
                             "--request-timeout=5s", "get", "--raw", "/version"],
                            capture_output=True, text=True, timeout=30, check=False,
                            stdin=subprocess.DEVNULL)
    assert result.returncode != 0, result.stdout


def test_kubeconfig_context_override_and_unreadable_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "kc", {"token": "t"}, {"server": "https://a.example:6443"},
                  contexts=[{"name": "ctx", "context": {"cluster": "c", "user": "u"}},
                            {"name": "other", "context": {"cluster": "c"}}])
    other = load_kubeconfig(path, context="other")
    assert (other.context, other.token, other.host) == ("other", "", "a.example")
    with pytest.raises(errors.KubeconfigError, match="cannot read"):
        load_kubeconfig(tmp_path / "absent")
    (tmp_path / "bad").write_text("clusters: [")
    with pytest.raises(errors.KubeconfigError, match="not YAML"):
        load_kubeconfig(tmp_path / "bad")
