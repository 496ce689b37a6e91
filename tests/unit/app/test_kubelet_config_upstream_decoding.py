"""The KubeletConfiguration read as upstream's kubelet reads it, beyond unknown fields: a
key set twice refused in the strict decoder's words, the --config file's zero values
defaulted as SetDefaults_KubeletConfiguration defaults them (a drop-in's not), relative
paths resolved against the --config file's directory (a drop-in's kept as written), and
the fields upstream added last."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from actors.app.config.serving import DEFAULT_PORT
from runtime.errors import ConfigError

HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
BASE = ["--pod-manifest-path", "/etc/kubernetes/manifests"]


def write(path: Path, body: str, head: str = HEAD) -> Path:
    path.write_text(head + body, encoding="utf-8")
    return path


def _file_error(config: Path, rule: str) -> str:
    return f"failed to load Kubelet config file {config}, error failed to decode: {rule}"


# --- a key set twice --------------------------------------------------------------------


@pytest.mark.parametrize(("body", "field", "words"), [
    ("maxPods: 50\nmaxPods: 60\n", "maxPods", 'line 4: key "maxPods" already set in map'),
    ("authentication:\n  anonymous:\n    enabled: true\n    enabled: false\n",
     "authentication.anonymous.enabled", 'line 6: key "enabled" already set in map'),
    ("authentication:\n  anonymous: {enabled: true}\n  anonymous:\n    enabled: false\n",
     "authentication.anonymous", 'line 6: key "anonymous" already set in map'),
    ("featureGates:\n  EventedPLEG: true\n  EventedPLEG: false\n",
     "featureGates.EventedPLEG", 'line 5: key "EventedPLEG" already set in map'),
    ("registerWithTaints:\n- key: a\n  key: b\n  effect: NoSchedule\n",
     "registerWithTaints[0].key", 'line 5: key "key" already set in map'),
])
def test_a_key_set_twice_is_a_strict_decoding_error(tmp_path: Path, body: str, field: str,
                                                    words: str) -> None:
    config = write(tmp_path / "kubelet.yaml", body)
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    rule = f"strict decoding error: yaml: unmarshal errors:\n  {words}"
    assert str(caught.value) == _file_error(config, rule)
    assert (caught.value.file, caught.value.field, caught.value.rule) == (str(config), field,
                                                                          rule)


def test_every_repeat_and_unknown_field_is_named_at_once(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml",
                   "maxPods: 50\nfoo: 1\nlogging:\n  format: text\n  format: json\n"
                   "maxPods: 60\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert str(caught.value) == _file_error(
        config, "strict decoding error: yaml: unmarshal errors:\n"
                '  line 7: key "format" already set in map\n'
                '  line 8: key "maxPods" already set in map, unknown field "foo"')
    assert caught.value.field == "logging.format"


def test_the_same_key_in_different_objects_is_no_repeat(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml",
                   "authentication:\n  anonymous:\n    enabled: true\n  webhook:\n"
                   "    enabled: false\nevictionHard:\n  memory.available: 100Mi\n"
                   "evictionSoft:\n  memory.available: 200Mi\n"
                   "evictionSoftGracePeriod:\n  memory.available: 30s\n")
    flags = parse_flags([*BASE, "--config", str(config)])
    assert (flags.anonymous_auth, flags.authentication_token_webhook) == (True, False)


@pytest.mark.parametrize(("body", "field"), [
    ('"maxPods": 50, "maxPods": 60', "maxPods"),
    ('"authentication": {"anonymous": {"enabled": true, "enabled": false}}',
     "authentication.anonymous.enabled"),
])
def test_a_json_file_repeating_a_key_gets_the_json_decoders_words(tmp_path: Path, body: str,
                                                                  field: str) -> None:
    config = tmp_path / "kubelet.json"
    config.write_text('{"apiVersion": "kubelet.config.k8s.io/v1beta1", '
                      f'"kind": "KubeletConfiguration", {body}}}', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert str(caught.value) == _file_error(
        config, f'strict decoding error: duplicate field "{field}"')
    assert caught.value.field == field


def test_a_drop_in_repeating_a_key_is_named(tmp_path: Path) -> None:
    write(tmp_path / "10-good.conf", "maxPods: 50\n")
    bad = write(tmp_path / "20-bad.conf", "clusterDomain: a.local\nclusterDomain: b.local\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config-dir", str(tmp_path)])
    assert str(caught.value) == (
        f"failed to load kubelet dropin file, path: {bad}, error: failed to decode: strict "
        'decoding error: yaml: unmarshal errors:\n  line 4: key "clusterDomain" already set '
        "in map")
    assert (caught.value.file, caught.value.field) == (str(bad), "clusterDomain")


# --- zero values: the --config file's are upstream's defaults, a drop-in's are values ----


def test_port_0_in_the_file_is_upstreams_default_port(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "port: 0\n")
    assert parse_flags([*BASE, "--config", str(config)]).port == DEFAULT_PORT == 10250


def test_port_0_on_the_command_line_is_refused_as_upstream(tmp_path: Path) -> None:
    """The flag is not defaulted: upstream's validation refuses 0; enableServer turns the
    main port off."""
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--port", "0"])
    assert str(caught.value) == ("invalid configuration: port (--port) 0 must be "
                                 "between 1 and 65535, inclusive")
    assert parse_flags([*BASE, "--enable-server=false"]).port == 0  # off
    config = write(tmp_path / "kubelet.yaml", "enableServer: false\nport: 10350\n")
    assert parse_flags([*BASE, "--config", str(config)]).port == 0
    assert parse_flags([*BASE, "--config", str(config), "--enable-server"]).port == 10350


def test_a_zero_in_a_drop_in_is_not_defaulted(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", "port: 10350\nsyncFrequency: 0s\n")
    (tmp_path / "d").mkdir()
    dropin = write(tmp_path / "d" / "10-port.conf", "port: 0\n")
    argv = [*BASE, "--config", str(config), "--config-dir", str(tmp_path / "d")]
    with pytest.raises(ConfigError) as caught:
        parse_flags(argv)
    assert str(caught.value) == (f"--config-dir {dropin}: port: invalid configuration: port "
                                 "(--port) 0 must be between 1 and 65535, inclusive")
    write(dropin, "port: 10360\n")
    assert (parse_flags(argv).port, parse_flags(argv).sync_frequency) == (10360, 60.0)
    dropin = write(tmp_path / "d" / "20-sync.conf", "syncFrequency: 0s\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(argv)
    assert str(caught.value).startswith(f"--config-dir {dropin}: syncFrequency: "), caught.value


def test_an_empty_authorization_mode_in_the_file_is_the_default(tmp_path: Path) -> None:
    config = write(tmp_path / "kubelet.yaml", 'authorization:\n  mode: ""\n')
    assert parse_flags([*BASE, "--config", str(config)]).authorization_mode == (
        parse_flags(BASE).authorization_mode)
    assert parse_flags([*BASE, "--kubeconfig", "/tmp/kubeconfig", "--config",
                        str(config)]).authorization_mode == "Webhook"


def test_the_report_frequency_follows_the_files_update_frequency(tmp_path: Path) -> None:
    """defaults.go: an unset nodeStatusReportFrequency is nodeStatusUpdateFrequency when
    the file sets that, else 5m."""
    update_only = write(tmp_path / "a.yaml", "nodeStatusUpdateFrequency: 20s\n")
    both = write(tmp_path / "b.yaml", "nodeStatusUpdateFrequency: 20s\n"
                                      "nodeStatusReportFrequency: 1m\n")
    neither = write(tmp_path / "c.yaml", "nodeStatusUpdateFrequency: 0s\n")
    frequencies = [(f.node_status_update_frequency, f.node_status_report_frequency)
                   for f in (parse_flags([*BASE, "--config", str(c)])
                             for c in (update_only, both, neither))]
    assert frequencies == [(20.0, 20.0), (20.0, 60.0), (10.0, 300.0)]
    # a flag is not defaulting: the report frequency stays the file's
    assert parse_flags([*BASE, "--config", str(neither), "--node-status-update-frequency",
                        "20s"]).node_status_report_frequency == 300.0


def test_a_drop_ins_update_frequency_does_not_move_the_report_frequency(
        tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    write(tmp_path / "d" / "10.conf", "nodeStatusUpdateFrequency: 20s\n")
    flags = parse_flags([*BASE, "--config-dir", str(tmp_path / "d")])
    assert (flags.node_status_update_frequency, flags.node_status_report_frequency) == (
        20.0, 300.0)


# --- relative paths ---------------------------------------------------------------------


def test_relative_paths_resolve_against_the_config_file_not_a_drop_in(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    config = write(tmp_path / "etc" / "kubelet.yaml",
                   "staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\n"
                   "tlsPrivateKeyFile: pki/kubelet.key\n")
    (tmp_path / "d").mkdir()
    write(tmp_path / "d" / "10-pods.conf", "staticPodPath: pods\n")
    flags = parse_flags(["--config", str(config), "--config-dir", str(tmp_path / "d")])
    assert flags.tls_cert_file == str(tmp_path / "etc" / "pki" / "kubelet.crt")
    # upstream merges a drop-in as written: relative to the working directory, as a flag
    assert flags.pod_manifest_path == "pods"
    assert parse_flags(["--config", str(config)]).pod_manifest_path == str(
        tmp_path / "etc" / "manifests")


# --- fields upstream added last -----------------------------------------------------------


def test_default_pod_sysctls_is_known_and_refused_when_set(tmp_path: Path) -> None:
    assert parse_flags([*BASE, "--config", str(write(tmp_path / "k.yaml",
                                                     "defaultPodSysctls: {}\n"))])
    config = write(tmp_path / "k.yaml", "defaultPodSysctls:\n  net.ipv4.ip_forward: '1'\n")
    with pytest.raises(ConfigError, match="kubelet-actors does not implement "
                                          "defaultPodSysctls: only upstream's default"):
        parse_flags([*BASE, "--config", str(config)])


def test_any_negative_pod_pids_limit_is_upstreams_default(tmp_path: Path) -> None:
    assert parse_flags([*BASE, "--config", str(write(tmp_path / "k.yaml",
                                                     "podPidsLimit: -5\n"))])
    with pytest.raises(ConfigError, match="podPidsLimit: only upstream's default, -1"):
        parse_flags([*BASE, "--config", str(write(tmp_path / "k.yaml",
                                                  "podPidsLimit: 0\n"))])
