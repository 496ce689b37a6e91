"""The KubeletConfiguration decoded strictly, as upstream: every field of upstream's
v1beta1 known, an unknown one refused in upstream's words, a field this node does not
implement accepted only at upstream's default; --config-dir drop-ins merged over the file
in lexical order, flags winning over both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.app.config.config_dir import drop_in_files, merge_patch
from actors.app.config.flags import parse_flags
from actors.app.config.not_implemented import ANY, NOT_IMPLEMENTED
from runtime.errors import ConfigError, ConfigErrors

DATA = Path(__file__).resolve().parents[2] / "data"
KUBEADM = DATA / "kubeadm-kubelet-config.yaml"
HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
BASE = ["--pod-manifest-path", "/etc/kubernetes/manifests"]


def write(path: Path, body: str) -> Path:
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def _nested(field: str, value: str) -> str:
    parts = field.split(".")
    lines = [f"{'  ' * i}{part}:" for i, part in enumerate(parts[:-1])]
    return "\n".join([*lines, f"{'  ' * (len(parts) - 1)}{parts[-1]}: {value}"]) + "\n"


@pytest.mark.parametrize(("body", "field"), [
    ("foo: 1\n", "foo"),
    ("authentication:\n  anonymous:\n    enabeld: true\n", "authentication.anonymous.enabeld"),
    ("authorization:\n  modes: Webhook\n", "authorization.modes"),
    ("crashLoopBackOff:\n  maxRestart: 10s\n", "crashLoopBackOff.maxRestart"),
    ("logging:\n  options:\n    yaml: {}\n", "logging.options.yaml"),
    ("memorySwap:\n  behavior: NoSwap\n", "memorySwap.behavior"),
    ("tracing:\n  endpoints: x\n", "tracing.endpoints"),
])
def test_an_unknown_field_is_a_strict_decoding_error(tmp_path: Path, body: str,
                                                      field: str) -> None:
    config = write(tmp_path / "kubelet.yaml", body)
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert str(caught.value) == (f"failed to load Kubelet config file {config}, error failed "
                                 f'to decode: strict decoding error: unknown field "{field}"')
    assert (caught.value.file, caught.value.field) == (str(config), field)
    assert caught.value.rule == f'strict decoding error: unknown field "{field}"'


def test_every_unknown_field_is_named_at_once(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "foo: 1\nlogging:\n  colour: true\n")
    with pytest.raises(ConfigError, match=re.escape(
            'strict decoding error: unknown field "foo", unknown field "logging.colour"')):
        parse_flags([*BASE, "--config", str(config)])


def test_an_unknown_field_of_a_taint_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml",
                   "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  colour: red\n")
    with pytest.raises(ConfigError, match='registerWithTaints: \\[0\\]: strict decoding error: '
                                          'unknown field "colour"'):
        parse_flags([*BASE, "--config", str(config)])


# A value other than the default, per not-implemented field, as YAML.
NON_DEFAULT = {
    "staticPodURLHeader": "{a: [b]}", "tlsCurvePreferences": "[23]",
    "registryPullQPS": "0", "registryBurst": "20",
    "imagePullCredentialsVerificationPolicy": "AlwaysVerify",
    "preloadedImagesVerificationAllowlist": "[a/b]", "eventRecordQPS": "0",
    "eventBurst": "5", "enableDebuggingHandlers": "false",
    "enableContentionProfiling": "true", "oomScoreAdj": "0", "kubeletCgroups": "/k",
    "systemCgroups": "/s", "cpuManagerPolicy": "static", "singleProcessOOMKill": "true",
    "cpuManagerPolicyOptions": "{full-pcpus-only: 'true'}", "cpuManagerReconcilePeriod": "5s",
    "draManagerReconcilePeriod": "5s", "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "restricted", "topologyManagerScope": "pod",
    "topologyManagerPolicyOptions": "{prefer-closest-numa-nodes: 'true'}",
    "qosReserved": "{memory: 50%}", "hairpinMode": "hairpin-veth", "podPidsLimit": "100",
    "cpuCFSQuota": "false", "cpuCFSQuotaPeriod": "50ms", "maxOpenFiles": "10",
    "contentType": "application/json", "kubeAPIQPS": "5", "kubeAPIBurst": "10",
    "serializeImagePulls": "false", "maxParallelImagePulls": "2",
    "mergeDefaultEvictionSettings": "true", "podsPerCore": "4",
    "enableControllerAttachDetach": "false", "protectKernelDefaults": "true",
    "makeIPTablesUtilChains": "false", "failSwapOn": "false",
    "memorySwap.swapBehavior": "LimitedSwap",
    "configMapAndSecretChangeDetectionStrategy": "Get",
    "showHiddenMetricsForVersion": '"1.34"', "volumePluginDir": "/plugins",
    "providerID": "aws://x", "kernelMemcgNotification": "true",
    "logging.flushFrequency": "1s", "logging.options.json.infoBufferSize": "64Ki",
    "logging.options.json.splitStream": "true", "logging.options.text.infoBufferSize": "1Mi",
    "logging.options.text.splitStream": "true", "enableSystemLogHandler": "false",
    "enableSystemLogQuery": "true", "reservedMemory": "[{numaNode: 0, limits: {memory: 1Gi}}]",
    "enableProfilingHandler": "false", "enableDebugFlagsHandler": "false",
    "memoryThrottlingFactor": "0.5", "memoryReservationPolicy": "TieredReservation",
    "tracing.endpoint": "localhost:4317", "tracing.samplingRatePerMillion": "10",
    "imageServiceEndpoint": "unix:///run/other.sock", "failCgroupV1": "false",
    "userNamespaces.idsPerPod": "131072", "defaultPodSysctls": "{net.ipv4.ip_forward: '1'}",
}
IGNORED_UPSTREAM = sorted(f for f, (_, ok) in NOT_IMPLEMENTED.items() if ok is ANY)


def test_the_table_has_every_not_implemented_field() -> None:
    assert set(NON_DEFAULT) | set(IGNORED_UPSTREAM) == set(NOT_IMPLEMENTED)


@pytest.mark.parametrize("field", sorted(NON_DEFAULT))
def test_a_not_implemented_field_is_refused_at_another_value(tmp_path: Path,
                                                             field: str) -> None:
    config = write(tmp_path / "kubelet.yaml", _nested(field, NON_DEFAULT[field]))
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert str(caught.value).startswith(
        f"--config {config}: {field}: kubelet-actors does not implement {field}: "), caught.value
    assert caught.value.field == field


@pytest.mark.parametrize("field", sorted(f for f, (_, ok) in NOT_IMPLEMENTED.items() if ok))
def test_a_not_implemented_field_is_accepted_at_each_default(tmp_path: Path,
                                                             field: str) -> None:
    import yaml

    _, accepted = NOT_IMPLEMENTED[field]
    assert accepted
    for value in accepted:
        text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...")
        if NOT_IMPLEMENTED[field][0].__name__ in ("duration", "time_or_duration"):
            text = f"{value}s"
        config = write(tmp_path / "kubelet.yaml", _nested(field, text.strip()))
        assert parse_flags([*BASE, "--config", str(config)]).pod_manifest_path


@pytest.mark.parametrize("field", IGNORED_UPSTREAM)
def test_a_field_upstream_ignores_takes_any_value_of_its_type(tmp_path: Path,
                                                              field: str) -> None:
    value = "7h" if field == "streamingConnectionIdleTimeout" else "3"
    assert parse_flags([*BASE, "--config",
                        str(write(tmp_path / "k.yaml", f"{field}: {value}\n"))])
    with pytest.raises(ConfigError, match=field):
        parse_flags([*BASE, "--config", str(write(tmp_path / "k.yaml", f"{field}: [x]\n"))])


def test_a_not_implemented_field_keeps_its_type_check(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "registryPullQPS: many\n")
    with pytest.raises(ConfigError, match="registryPullQPS: expected an integer, got str"):
        parse_flags([*BASE, "--config", str(config)])


def test_several_refusals_are_reported_together(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "podsPerCore: 4\nfailSwapOn: false\n")
    with pytest.raises(ConfigErrors) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert [e.field for e in caught.value.errors] == ["podsPerCore", "failSwapOn"]


def test_the_operators_fields_are_read(tmp_path: Path) -> None:
    """Issue 34's fields are implemented: read, not refused and not ignored."""
    body = ("systemReserved: {memory: 100Mi}\nkubeReserved: {cpu: 100m}\n"
            "enforceNodeAllocatable: [pods]\nrotateCertificates: true\n"
            "serverTLSBootstrap: true\nshutdownGracePeriod: 30s\n"
            "shutdownGracePeriodCriticalPods: 10s\n")
    flags = parse_flags([*BASE, "--kubeconfig", "/tmp/kubeconfig",
                         "--config", str(write(tmp_path / "k.yaml", body))])
    assert (flags.system_reserved, flags.kube_reserved) == (
        (("memory", "100Mi"),), (("cpu", "100m"),))
    assert (flags.rotate_certificates, flags.server_tls_bootstrap) == (True, True)
    assert (flags.shutdown_grace_period, flags.shutdown_grace_period_critical_pods) == (30, 10)


def test_the_kubeadm_configuration_loads_with_upstreams_defaults() -> None:
    flags = parse_flags(["--config", str(KUBEADM), "--kubeconfig", "/tmp/kubeconfig"])
    assert flags.pod_manifest_path == "/etc/kubernetes/manifests"
    assert (flags.cgroup_driver, flags.cluster_dns, flags.cluster_domain) == (
        "systemd", ("10.96.0.10",), "cluster.local")
    assert (flags.anonymous_auth, flags.authentication_token_webhook,
            flags.authorization_mode) == (False, True, "Webhook")
    assert flags.client_ca_file == "/etc/kubernetes/pki/ca.crt"
    # kubeadm's 0s durations are upstream's defaults
    assert (flags.sync_frequency, flags.runtime_request_timeout,
            flags.authentication_token_webhook_cache_ttl,
            flags.authorization_webhook_cache_authorized_ttl,
            flags.node_status_report_frequency) == (60.0, 120.0, 120.0, 300.0, 300.0)
    assert (flags.log_format, flags.verbosity) == ("text", 0)
    assert flags.container_runtime_endpoint == ""  # the embedded containerd


def test_the_logging_block_sets_the_log_settings(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "logging:\n  format: json\n  verbosity: 4\n"
                   "  vmodule:\n  - filePattern: pleg\n    verbosity: 5\n")
    flags = parse_flags([*BASE, "--config", str(config)])
    assert (flags.log_format, flags.verbosity, flags.vmodule, flags.log_level) == (
        "json", 4, (("pleg", 5),), "DEBUG")
    assert parse_flags([*BASE, "--config", str(config), "--v", "1"]).verbosity == 1


# --- --config-dir --------------------------------------------------------------------------


def test_drop_ins_are_the_conf_files_in_lexical_order(tmp_path: Path) -> None:
    for name in ("20-b.conf", "10-a.conf", "notes.txt", "30-c.conf.bak"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "15-sub").mkdir()
    (tmp_path / "15-sub" / "x.conf").write_text("", encoding="utf-8")
    assert [Path(p).relative_to(tmp_path).as_posix() for p in drop_in_files(str(tmp_path))] == [
        "10-a.conf", "15-sub/x.conf", "20-b.conf"]


def test_merge_patch_replaces_lists_merges_maps_and_removes_nulls() -> None:
    assert merge_patch({"a": [1, 2], "m": {"x": 1, "y": 2}, "k": 1},
                       {"a": [3], "m": {"y": None, "z": 3}, "k": None}) == {
        "a": [3], "m": {"x": 1, "z": 3}}


def test_drop_ins_override_the_file_in_order_and_flags_win(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml",
                   "staticPodPath: /etc/pods\nmaxPods: 50\nclusterDNS: [10.0.0.1, 10.0.0.2]\n"
                   "featureGates:\n  EventedPLEG: false\nsyncFrequency: 30s\n"
                   "evictionHard:\n  memory.available: 100Mi\n")
    dropins = tmp_path / "kubelet.conf.d"
    dropins.mkdir()
    write(dropins / "20-late.conf", "maxPods: 70\nsyncFrequency: 40s\n")
    write(dropins / "10-early.conf", "maxPods: 60\nclusterDNS: [10.0.0.3]\n"
          "featureGates:\n  KubeletCrashLoopBackOffMax: true\n"
          "evictionHard:\n  nodefs.available: 5%\n")
    argv = ["--config", str(config), "--config-dir", str(dropins)]
    flags = parse_flags(argv)
    assert flags.max_pods == 70  # the last drop-in wins
    assert flags.cluster_dns == ("10.0.0.3",)  # a list is replaced, not appended
    assert dict(flags.feature_gates) == {"EventedPLEG": False,  # a map is merged
                                         "KubeletCrashLoopBackOffMax": True}
    assert {t.signal for t in flags.eviction.thresholds if t.hard} >= {
        "memory.available", "nodefs.available"}
    assert flags.pod_manifest_path == "/etc/pods"  # untouched by the drop-ins
    assert flags.config_dir == str(dropins)
    assert parse_flags([*argv, "--max-pods", "80", "--sync-frequency", "5s"]).max_pods == 80


def test_drop_ins_work_without_a_config_file(tmp_path: Path) -> None:
    write(tmp_path / "10-pods.conf", "staticPodPath: /etc/pods\n")
    assert parse_flags(["--config-dir", str(tmp_path)]).pod_manifest_path == "/etc/pods"


def test_a_null_in_a_drop_in_puts_the_default_back(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "staticPodPath: /etc/pods\nmaxPods: 50\n")
    (tmp_path / "d").mkdir()
    write(tmp_path / "d" / "10.conf", "maxPods: null\n")
    assert parse_flags(["--config", str(config), "--config-dir",
                        str(tmp_path / "d")]).max_pods == 110


def test_a_broken_drop_in_is_named(tmp_path: Path) -> None:
    write(tmp_path / "10-good.conf", "staticPodPath: /etc/pods\n")
    bad = write(tmp_path / "20-bad.conf", "maxPods: 5\nfoo: bar\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config-dir", str(tmp_path)])
    assert str(caught.value) == (f"failed to load kubelet dropin file, path: {bad}, error: "
                                 'failed to decode: strict decoding error: unknown field "foo"')
    assert caught.value.file == str(bad)
    write(tmp_path / "20-bad.conf", "maxPods: lots\n")
    with pytest.raises(ConfigError, match=f"^--config-dir {bad}: maxPods: expected an integer"):
        parse_flags(["--config-dir", str(tmp_path)])
    (tmp_path / "20-bad.conf").write_text("kind: KubeletConfiguration\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^--config-dir {bad}: apiVersion: expected"):
        parse_flags(["--config-dir", str(tmp_path)])


def test_a_check_names_the_drop_in_that_set_the_value(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "staticPodPath: /etc/pods\nmaxPods: 50\n")
    (tmp_path / "d").mkdir()
    dropin = write(tmp_path / "d" / "10.conf", "maxPods: -3\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config), "--config-dir", str(tmp_path / "d")])
    assert str(caught.value).startswith(f"--config-dir {dropin}: maxPods: invalid "
                                        "configuration: maxPods"), caught.value


def test_a_missing_drop_in_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"--config-dir {tmp_path / 'none'}: cannot read"):
        parse_flags([*BASE, "--config-dir", str(tmp_path / "none")])
