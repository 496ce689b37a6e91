"""``/configz``: the effective KubeletConfiguration in upstream's v1beta1 shape, served on
the main port only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.app.config.configz import configz_body, kubelet_configuration
from actors.app.config.flags import parse_flags
from actors.app.http.server import ANY_PORT, HEALTHZ, MAIN, READ_ONLY, KubeletHTTPServer
from tests.unit.app.test_http_server import FakeView, request


def test_the_defaults_in_upstreams_names_order_and_encodings(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path)])
    config = kubelet_configuration(flags, runtime_endpoint="unix:///run/c.sock",
                                   tls_files=("/pki/kubelet.crt", "/pki/kubelet.key"))
    assert list(config)[:3] == ["kind", "apiVersion", "enableServer"]
    assert config == {
        "kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "enableServer": True, "staticPodPath": str(tmp_path), "podLogsDir": "/var/log/pods",
        "syncFrequency": "1m0s", "fileCheckFrequency": "20s", "httpCheckFrequency": "20s",
        "address": "127.0.0.1", "port": 10250, "readOnlyPort": 10255,
        "tlsCertFile": "/pki/kubelet.crt", "tlsPrivateKeyFile": "/pki/kubelet.key",
        "authentication": {"x509": {}, "webhook": {"enabled": False, "cacheTTL": "2m0s"},
                           "anonymous": {"enabled": True}},
        "authorization": {"mode": "AlwaysAllow", "webhook": {
            "cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"}},
        "healthzPort": 10248, "healthzBindAddress": "127.0.0.1",
        "nodeStatusUpdateFrequency": "10s", "nodeStatusReportFrequency": "5m0s",
        "nodeLeaseDurationSeconds": 40, "imageMinimumGCAge": "2m0s",
        "imageMaximumGCAge": "0s", "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80, "volumeStatsAggPeriod": "1m0s",
        "cgroupRoot": "/", "cgroupsPerQOS": True, "cgroupDriver": "cgroupfs",
        "runtimeRequestTimeout": "2m0s", "maxPods": 110,  # podCIDR "": omitted
        "resolvConf": "/etc/resolv.conf", "nodeStatusMaxImages": 50,
        "evictionHard": {"imagefs.available": "15%", "memory.available": "100Mi",
                         "nodefs.available": "10%", "nodefs.inodesFree": "5%"},
        "evictionPressureTransitionPeriod": "5m0s", "containerLogMaxSize": "10Mi",
        "containerLogMaxFiles": 5, "containerLogMaxWorkers": 1,
        "containerLogMonitorInterval": "10s",
        "logging": {"format": "text", "flushFrequency": "5s", "verbosity": 0, "options": {
            "text": {"infoBufferSize": "0"}, "json": {"infoBufferSize": "0"}}},
        "crashLoopBackOff": {},
        "shutdownGracePeriod": "0s", "shutdownGracePeriodCriticalPods": "0s",
        "seccompDefault": False, "registerNode": False,
        "containerRuntimeEndpoint": "unix:///run/c.sock",
    }


def test_a_config_file_and_flags_merged_as_the_kubelet_runs_them(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("")
    config_file = tmp_path / "kubelet.yaml"
    config_file.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "syncFrequency: 90s\nmaxPods: 20\nclusterDNS: [10.96.0.10]\n"
        "clusterDomain: cluster.local\nfeatureGates: {KubeletCrashLoopBackOffMax: true}\n"
        "crashLoopBackOff: {maxContainerRestartPeriod: 20s}\n"
        "evictionHard: {memory.available: 200Mi}\nevictionSoft: {nodefs.available: 20%}\n"
        "evictionSoftGracePeriod: {nodefs.available: 1m30s}\n"
        "evictionMinimumReclaim: {memory.available: 50Mi}\n"
        "registerWithTaints: [{key: dedicated, value: a, effect: NoSchedule}]\n"
        "authentication: {x509: {clientCAFile: ca.crt}}\n")
    flags = parse_flags(["--config", str(config_file), "--pod-manifest-path", str(tmp_path),
                         "--max-pods", "30", "--read-only-port", "0",
                         "--container-log-max-size", "5Mi",
                         "--manifest-url", "http://x/pods?a=<1>&b=2"])
    config = kubelet_configuration(flags)
    assert config["syncFrequency"] == "1m30s"
    assert config["maxPods"] == 30  # the flag wins over the file
    assert "readOnlyPort" not in config  # omitempty: 0 is left out, as upstream
    assert "tlsCertFile" not in config  # no pair given nor made: empty, left out
    assert config["clusterDNS"] == ["10.96.0.10"]
    assert config["clusterDomain"] == "cluster.local"
    assert config["featureGates"] == {"KubeletCrashLoopBackOffMax": True}
    assert config["crashLoopBackOff"] == {"maxContainerRestartPeriod": "20s"}
    assert config["authentication"]["x509"] == {"clientCAFile": str(tmp_path / "ca.crt")}
    assert config["containerLogMaxSize"] == "5Mi"
    assert (config["evictionHard"], config["evictionSoft"],
            config["evictionSoftGracePeriod"], config["evictionMinimumReclaim"]) == (
        {"memory.available": "200Mi"}, {"nodefs.available": "20%"},
        {"nodefs.available": "1m30s"}, {"memory.available": "50Mi"})
    assert config["registerWithTaints"] == [
        {"key": "dedicated", "value": "a", "effect": "NoSchedule"}]
    body = configz_body(config)
    assert body.startswith(b'{"kubeletconfig":{"kind":"KubeletConfiguration",')
    # Go's encoder escapes <, > and &.
    assert b'"staticPodURL":"http://x/pods?a=\\u003c1\\u003e\\u0026b=2"' in body
    assert json.loads(body) == {"kubeletconfig": config}


@pytest.fixture
def server(tmp_path: Path) -> KubeletHTTPServer:
    return KubeletHTTPServer(FakeView(tmp_path), port=ANY_PORT, read_only_port=ANY_PORT,
                             healthz_port=ANY_PORT, configz=b'{"kubeletconfig":{"a":1}}')


def test_configz_is_served_on_the_main_port_only_to_any_method(
        server: KubeletHTTPServer) -> None:
    server.start()
    try:
        port = server.bound_ports[MAIN]
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            resp = request(port, "/configz", method=method)
            assert (resp.status, resp.body) == (200, b'{"kubeletconfig":{"a":1}}'), method
            assert resp.headers["Content-Type"] == "application/json"
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert request(port, "/configz/", method="GET").status == 404
        for listener in (READ_ONLY, HEALTHZ):
            assert request(server.bound_ports[listener], "/configz").status == 404
    finally:
        server.stop()
