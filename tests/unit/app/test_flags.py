"""Flags as upstream names them, their checks, and --config (a KubeletConfiguration)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from actors.app.config.durations import parse_duration
from actors.app.config.flags import build_parser, parse_flags
from actors.app.main import EXIT_USAGE, main
from runtime.errors import ConfigError, KubeletError


@pytest.mark.parametrize(("text", "seconds"), [
    ("20s", 20.0), ("1m0s", 60.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0),
    ("0", 0.0), ("-1s", -1.0), ("+1.5h", 5400.0), (".5s", 0.5), ("1.s", 1.0),
    ("1h2m3s4ms5us6ns", 3723.004005006), ("3\u00b5s", 3e-6), ("3\u03bcs", 3e-6),
])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "words"), [
    # Go's time.ParseDuration, word for word
    ("", 'time: invalid duration ""'), ("s", 'time: invalid duration "s"'),
    ("-", 'time: invalid duration "-"'), (".s", 'time: invalid duration ".s"'),
    ("15", 'time: missing unit in duration "15"'),
    ("1m30", 'time: missing unit in duration "1m30"'),
    ("10x", 'time: unknown unit "x" in duration "10x"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("m5", 'time: invalid duration "m5"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("h\u00e9", 'time: invalid duration "h\\xc3\\xa9"'),
])
def test_bad_durations(text: str, words: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse_duration(text)
    assert str(refused.value) == words


def test_defaults_are_upstream_s(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path)])
    assert (flags.port, flags.read_only_port, flags.healthz_port) == (10250, 10255, 10248)
    assert (flags.address, flags.healthz_bind_address) == ("127.0.0.1", "127.0.0.1")
    assert flags.max_pods == 110
    assert (flags.sync_frequency, flags.file_check_frequency, flags.http_check_frequency) \
        == (60.0, 20.0, 20.0)
    assert flags.runtime_request_timeout == 120.0


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give --pod-manifest-path, --manifest-url or --kubeconfig"),
    (["--runonce"], "--runonce needs --pod-manifest-path"),
    (["--manifest-url", "ftp://x"], '--manifest-url: "ftp://x": must be an http'),
    (["--pod-manifest-path", "d", "--port", "70000"],
     "invalid configuration: port (--port) 70000 must be between 1 and 65535, inclusive"),
    (["--pod-manifest-path", "d", "--max-pods", "0"],
     "invalid configuration: maxPods (--max-pods) 0 must be greater than 0"),
    (["--pod-manifest-path", "d", "--pod-cidr", "10.0.0.1/8"],
     '--pod-cidr: "10.0.0.1/8": 10.0.0.1/8 has host bits set'),
    (["--pod-manifest-path", "d", "--container-runtime-endpoint", "tcp://x"],
     "only unix sockets are supported"),
    (["--pod-manifest-path", "d", "--sync-frequency", "0"],
     "--sync-frequency: invalid configuration: syncFrequency 0s must be greater than zero"),
])
def test_bad_flag_values_say_which_flag_and_why(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_flags(argv)


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kubelet.yaml"
    path.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                    + body)
    return path


def test_config_file_sets_flags_and_flags_win(tmp_path: Path) -> None:
    config = write_config(tmp_path, """staticPodPath: manifests
maxPods: 20
syncFrequency: 1m30s
readOnlyPort: 0
healthzBindAddress: 127.0.0.2
podLogsDir: /var/log/other
""")
    flags = parse_flags(["--config", str(config), "--max-pods", "30"])
    assert flags.pod_manifest_path == str(tmp_path / "manifests")  # relative to the file
    assert flags.max_pods == 30  # the flag wins over the file
    assert flags.sync_frequency == 90.0
    assert flags.read_only_port == 0
    assert flags.healthz_bind_address == "127.0.0.2"
    assert flags.pod_logs_dir == "/var/log/other"


def test_config_fields_not_implemented_are_refused_unless_at_their_default(
        tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: /etc/pods\ntopologyManagerPolicy: none\n")
    assert parse_flags(["--config", str(config)]).pod_manifest_path == "/etc/pods"
    other = write_config(tmp_path, "staticPodPath: /etc/pods\n"
                                   "topologyManagerPolicy: best-effort\n")
    with pytest.raises(ConfigError, match="kubelet-actors does not implement "
                                          "topologyManagerPolicy"):
        parse_flags(["--config", str(other)])


def test_dns_and_node_ip_flags_and_config_fields(tmp_path: Path) -> None:
    defaults = parse_flags(["--pod-manifest-path", "/etc/pods"])
    assert (defaults.node_ip, defaults.cluster_dns, defaults.cluster_domain,
            defaults.resolv_conf) == ("", (), "", "/etc/resolv.conf")
    given = parse_flags(["--pod-manifest-path", "/etc/pods", "--node-ip", "192.0.2.7",
                         "--cluster-dns", "10.96.0.10, bad,fd00::a", "--cluster-domain",
                         "cluster.local", "--resolv-conf", ""])
    # As upstream, a cluster DNS entry that is no IP is logged and left out.
    assert (given.node_ip, given.cluster_dns, given.cluster_domain, given.resolv_conf) == (
        "192.0.2.7", ("10.96.0.10", "fd00::a"), "cluster.local", "")
    config = write_config(tmp_path, "staticPodPath: /etc/pods\nclusterDNS: [10.0.0.10]\n"
                                    "clusterDomain: k8s.test\nresolvConf: resolv.conf\n")
    from_file = parse_flags(["--config", str(config)])
    assert (from_file.cluster_dns, from_file.cluster_domain, from_file.resolv_conf) == (
        ("10.0.0.10",), "k8s.test", str(tmp_path / "resolv.conf"))
    with pytest.raises(ConfigError, match="--node-ip"):
        parse_flags(["--pod-manifest-path", "/etc/pods", "--node-ip", "node-1"])


@pytest.mark.parametrize(("body", "message"), [
    ("maxPods: lots\n", "maxPods: expected an integer, got str"),
    ("staticPodPath: /p\nport: 99999\n",
     "port: invalid configuration: port (--port) 99999 must be between 1 and 65535"),
    ("syncFrequency: 60\n", "syncFrequency: expected a duration string"),
    ("syncFrequency: soon\n", 'syncFrequency: time: invalid duration "soon"'),
    ("staticPodPath: [a]\n", "staticPodPath: expected a string, got list"),
])
def test_bad_config_values_name_the_file_and_field(tmp_path: Path, body: str,
                                                   message: str) -> None:
    config = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    assert str(config) in str(caught.value) and message in str(caught.value)


@pytest.mark.parametrize(("text", "message"), [
    ("kind: Pod\napiVersion: v1\n", 'kind: expected "KubeletConfiguration"'),
    ("kind: KubeletConfiguration\napiVersion: v1\n", "apiVersion: expected"),
    ("{ not yaml", "invalid YAML"),
    ("- a list\n", "expected a KubeletConfiguration object"),
])
def test_bad_config_documents(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        parse_flags(["--config", str(path)])


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        parse_flags(["--config", str(tmp_path / "none.yaml")])


def test_a_bad_config_field_is_one_config_error_naming_file_and_field(tmp_path: Path) -> None:
    config = write_config(tmp_path, "maxPods: lots\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    err = caught.value
    assert isinstance(err, KubeletError)
    assert (err.file, err.field) == (str(config), "maxPods")
    assert str(err) == f"--config {config}: maxPods: expected an integer, got str"
    assert err.rule == "expected an integer, got str"
    assert isinstance(err.__cause__, TypeError)  # the conversion's own error, chained


@pytest.mark.parametrize(("argv", "message"), [
    (["--pod-manifest-path", "d", "--max-pods", "0"],
     "invalid configuration: maxPods (--max-pods) 0 must be greater than 0"),
    (["--config", "/nonexistent/kubelet.yaml"], "--config /nonexistent/kubelet.yaml: cannot read"),
])
def test_main_reports_flag_and_config_errors_as_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.startswith(f"kubelet-actors: {message}")


def test_node_labels_and_unsafe_sysctls(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--node-labels",
                         "disk=ssd, node.kubernetes.io/role=edge,empty=",
                         "--allowed-unsafe-sysctls", "net.core.somaxconn,kernel.msg*"])
    assert flags.node_labels == (("disk", "ssd"), ("node.kubernetes.io/role", "edge"),
                                 ("empty", ""))
    assert flags.allowed_unsafe_sysctls == ("net.core.somaxconn", "kernel.msg*")
    default = parse_flags(["--pod-manifest-path", str(tmp_path)])
    assert (default.node_labels, default.allowed_unsafe_sysctls) == ((), ())


@pytest.mark.parametrize(("argv", "message"), [
    (["--node-labels", "kubernetes.io/role=x"],
     "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: "
     "['kubernetes.io/role']"),
    (["--node-labels", "bad key=x"], "invalid node labels: --node-labels: Invalid value"),
    (["--node-labels", "k=" + "v" * 64], "must be no more than 63 characters"),
    (["--allowed-unsafe-sysctls", "Net.Core"], 'sysctl "Net.Core" must have at most 253'),
    (["--allowed-unsafe-sysctls", "vm.swappiness"],
     'the sysctls "vm.swappiness" are not known to be namespaced'),
])
def test_bad_node_labels_and_sysctls(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", "d", *argv])
    assert message in str(caught.value)


def test_allowed_unsafe_sysctls_from_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: p\nallowedUnsafeSysctls: [net.core.*]\n")
    assert parse_flags(["--config", str(config)]).allowed_unsafe_sysctls == ("net.core.*",)
    bad = write_config(tmp_path, "staticPodPath: p\nallowedUnsafeSysctls: [vm.swappiness]\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(bad)])
    assert caught.value.field == "allowedUnsafeSysctls"
    assert 'allowedUnsafeSysctls: the sysctls "vm.swappiness" are not known' in str(caught.value)


def test_cgroup_flags_default_as_upstream(tmp_path: Path) -> None:
    """--cgroups-per-qos defaults to true; an empty --cgroup-root becomes "/" (upstream:
    "--cgroups-per-qos enabled, but --cgroup-root was not specified. defaulting to /");
    --cgroup-driver defaults to cgroupfs."""
    flags = parse_flags(["--pod-manifest-path", str(tmp_path)])
    assert (flags.cgroups_per_qos, flags.cgroup_root, flags.cgroup_driver) == (
        True, "/", "cgroupfs")


@pytest.mark.parametrize(("argv", "expected"), [
    (["--cgroups-per-qos=false", "--enforce-node-allocatable="], (False, "/", "cgroupfs")),
    (["--cgroups-per-qos"], (True, "/", "cgroupfs")),
    (["--cgroup-root", "/nested", "--cgroup-driver", "systemd"], (True, "/nested", "systemd")),
    (["--cgroup-root", "machine.slice", "--cgroup-driver", "systemd"],
     (True, "machine.slice", "systemd")),
])
def test_cgroup_flags(tmp_path: Path, argv: list[str], expected: tuple[bool, str, str]) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), *argv])
    assert (flags.cgroups_per_qos, flags.cgroup_root, flags.cgroup_driver) == expected


def test_cgroup_root_must_be_a_cgroup_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='--cgroup-root: "relative": must be an absolute'):
        parse_flags(["--pod-manifest-path", str(tmp_path), "--cgroup-root", "relative"])


def test_cgroup_fields_of_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: m\ncgroupsPerQOS: false\n"
                                    "enforceNodeAllocatable: []\ncgroupRoot: /pods\n"
                                    "cgroupDriver: systemd\n")
    flags = parse_flags(["--config", str(config)])
    assert (flags.cgroups_per_qos, flags.cgroup_root, flags.cgroup_driver) == (
        False, "/pods", "systemd")
    bad = write_config(tmp_path, "staticPodPath: m\ncgroupDriver: docker\n")
    with pytest.raises(ConfigError, match="cgroupDriver"):
        parse_flags(["--config", str(bad)])


def test_seccomp_default_from_the_flag_and_the_config_file(tmp_path: Path) -> None:
    assert not parse_flags(["--pod-manifest-path", "d"]).seccomp_default
    assert parse_flags(["--pod-manifest-path", "d", "--seccomp-default"]).seccomp_default
    config = write_config(tmp_path, "staticPodPath: p\nseccompDefault: true\n")
    assert parse_flags(["--config", str(config)]).seccomp_default
    bad = write_config(tmp_path, "staticPodPath: p\nseccompDefault: yes please\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(bad)])
    assert caught.value.field == "seccompDefault"


def test_cluster_flags_with_upstream_names_and_defaults(tmp_path: Path) -> None:
    """--kubeconfig turns --register-node on unless it is given; taints parse as upstream's."""
    kubeconfig = tmp_path / "kubeconfig"
    flags = parse_flags(["--kubeconfig", str(kubeconfig),
                         "--register-with-taints", "dedicated=infra:NoSchedule"])
    assert flags.kubeconfig == str(kubeconfig)
    assert flags.register_node is True
    assert [t.json() for t in flags.register_with_taints] == [
        {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    assert (flags.node_status_update_frequency, flags.node_status_report_frequency,
            flags.node_lease_duration_seconds) == (10.0, 300.0, 40)
    assert parse_flags(["--kubeconfig", str(kubeconfig), "--register-node=false"]
                       ).register_node is False
    assert parse_flags(["--pod-manifest-path", str(tmp_path)]).register_node is False


def test_cluster_fields_of_a_kubelet_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "registerNode: false\nnodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\n"
        "nodeLeaseDurationSeconds: 20\n"
        "registerWithTaints: [{key: a, value: b, effect: NoExecute}]\n")
    flags = parse_flags(["--config", str(config), "--kubeconfig", str(tmp_path / "k")])
    assert flags.register_node is False
    assert (flags.node_status_update_frequency, flags.node_status_report_frequency,
            flags.node_lease_duration_seconds) == (4.0, 60.0, 20)
    assert [t.json() for t in flags.register_with_taints] == [
        {"key": "a", "value": "b", "effect": "NoExecute"}]


def test_main_port_security_defaults_standalone_are_upstreams_flag_defaults() -> None:
    flags = parse_flags(["--pod-manifest-path", "d"])
    assert (flags.anonymous_auth, flags.authentication_token_webhook,
            flags.authorization_mode, flags.read_only_port) == (True, False, "AlwaysAllow", 10255)
    assert flags.cert_dir.endswith("/pki")
    assert (flags.authentication_token_webhook_cache_ttl,
            flags.authorization_webhook_cache_authorized_ttl,
            flags.authorization_webhook_cache_unauthorized_ttl) == (120.0, 300.0, 30.0)


def test_main_port_security_defaults_in_cluster_mode_are_the_config_files(
        tmp_path: Path) -> None:
    flags = parse_flags(["--kubeconfig", str(tmp_path / "kc")])
    assert (flags.anonymous_auth, flags.authentication_token_webhook,
            flags.authorization_mode, flags.read_only_port) == (False, True, "Webhook", 0)
    flags = parse_flags(["--kubeconfig", str(tmp_path / "kc"), "--anonymous-auth=true",
                         "--read-only-port", "10255", "--authorization-mode", "AlwaysAllow"])
    assert (flags.anonymous_auth, flags.authorization_mode, flags.read_only_port) == (
        True, "AlwaysAllow", 10255)


def test_webhooks_without_kubeconfig_are_refused() -> None:
    with pytest.raises(ConfigError, match="need --kubeconfig"):
        parse_flags(["--pod-manifest-path", "d", "--authorization-mode", "Webhook"])


def test_config_authentication_authorization_and_tls_fields(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "tlsCertFile: pki/k.crt\ntlsPrivateKeyFile: pki/k.key\ntlsMinVersion: VersionTLS13\n"
        "tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
        "authentication:\n  anonymous: {enabled: true}\n  webhook: {enabled: true, cacheTTL: 1m}\n"
        "  x509: {clientCAFile: ca.crt}\n"
        "authorization:\n  mode: Webhook\n  webhook: {cacheAuthorizedTTL: 1m, "
        "cacheUnauthorizedTTL: 5s}\n")
    flags = parse_flags(["--kubeconfig", str(tmp_path / "kc"), "--config", str(config),
                         "--authentication-token-webhook-cache-ttl", "3m"])
    assert flags.tls_cert_file == str(tmp_path / "pki/k.crt")
    assert flags.client_ca_file == str(tmp_path / "ca.crt")
    assert (flags.tls_min_version, flags.tls_cipher_suites) == (
        "VersionTLS13", ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",))
    assert (flags.anonymous_auth, flags.authentication_token_webhook,
            flags.authentication_token_webhook_cache_ttl) == (True, True, 180.0)  # flag wins
    assert (flags.authorization_mode, flags.authorization_webhook_cache_authorized_ttl,
            flags.authorization_webhook_cache_unauthorized_ttl) == ("Webhook", 60.0, 5.0)
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "authorization: {mode: Sometimes}\n")
    with pytest.raises(ConfigError, match=r"authorization\.mode"):
        parse_flags(["--kubeconfig", str(tmp_path / "kc"), "--config", str(config)])


def test_help_lists_every_flag() -> None:
    """--help formats every flag's help (argparse %-formats it: a bare % broke --help)."""
    text = build_parser().format_help()
    assert "--eviction-hard" in text and "nodefs.available<10%" in text
