"""Every KubeletConfiguration field, given a bad value: the error names the file and the
field (and, set by its flag instead, the flag), with the rule in upstream's words."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from actors.app.config.kubelet_config import FIELD_OF_DEST
from actors.app.main import EXIT_USAGE
from runtime.errors import ConfigError, ConfigErrors

REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Bad:
    """A field's bad value in the file (YAML under the top level), the rule its error
    states, and the same value as flags (empty: the field has no flag)."""

    yaml: str
    rule: str
    flags: tuple[str, ...] = ()


def _nested(path: str, value: str) -> str:
    """``a.b.c`` = value as nested YAML."""
    parts = path.split(".")
    lines = [f"{'  ' * i}{part}:" for i, part in enumerate(parts[:-1])]
    lines.append(f"{'  ' * (len(parts) - 1)}{parts[-1]}: {value}")
    return "\n".join(lines) + "\n"


GT_ZERO = "must be greater than zero"
NOT_STRING = "expected a string, got"
NOT_DURATION = "expected a duration string such as 20s or 1m0s, got a number"
NOT_BOOL = "expected true or false, got str"
NOT_INTEGER = "expected an integer, got str"

BAD: dict[str, Bad] = {
    "enableServer": Bad("maybe", NOT_BOOL),
    "staticPodPath": Bad("[a]", NOT_STRING),
    "staticPodURL": Bad("ftp://x", '"ftp://x": must be an http:// or https:// URL',
                        ("--manifest-url", "ftp://x")),
    "containerRuntimeEndpoint": Bad("tcp://x", '"tcp://x": only unix sockets are supported',
                                    ("--container-runtime-endpoint", "tcp://x")),
    "podLogsDir": Bad("5", NOT_STRING),
    # the flag's own IP type refuses it first (test_flag_habits)
    "address": Bad("nowhere", "'nowhere' does not appear to be an IPv4 or IPv6 address"),
    "port": Bad("70000", "invalid configuration: port (--port) 70000 must be between 1 and "
                "65535, inclusive", ("--port", "70000")),
    "readOnlyPort": Bad("70000", "invalid configuration: readOnlyPort (--read-only-port) 70000 "
                        "must be between 0 and 65535, inclusive", ("--read-only-port", "70000")),
    "healthzPort": Bad("-1", "invalid configuration: healthzPort (--healthz-port) -1 must be "
                       "between 1 and 65535, inclusive", ("--healthz-port", "-1")),
    "healthzBindAddress": Bad("here", "'here' does not appear to be an IPv4 or IPv6 address"),
    # A zero in the file is upstream's default (its defaulting), as kubeadm writes it.
    "maxPods": Bad("-1", "invalid configuration: maxPods (--max-pods) -1 must be greater than "
                   "0", ("--max-pods=-1",)),
    "syncFrequency": Bad(
        "-1s", f"invalid configuration: syncFrequency -1s {GT_ZERO}",
        ("--sync-frequency=-1s",)),
    "fileCheckFrequency": Bad(
        "-1s", f"invalid configuration: fileCheckFrequency -1s {GT_ZERO}",
        ("--file-check-frequency=-1s",)),
    "httpCheckFrequency": Bad(
        "-1s", f"invalid configuration: httpCheckFrequency -1s {GT_ZERO}",
        ("--http-check-frequency=-1s",)),
    "runtimeRequestTimeout": Bad(
        "-1s", f"invalid configuration: runtimeRequestTimeout -1s {GT_ZERO}",
        ("--runtime-request-timeout=-1s",)),
    "podCIDR": Bad("10.0.0.1/8", '"10.0.0.1/8": 10.0.0.1/8 has host bits set',
                   ("--pod-cidr", "10.0.0.1/8")),
    "allowedUnsafeSysctls": Bad("[vm.swappiness]",
                                'the sysctls "vm.swappiness" are not known to be namespaced',
                                ("--allowed-unsafe-sysctls", "vm.swappiness")),
    "cgroupsPerQOS": Bad('"yes"', NOT_BOOL),
    "cgroupRoot": Bad("relative", '"relative": must be an absolute cgroup path',
                      ("--cgroup-root", "relative")),
    "cgroupDriver": Bad("bogus", '"bogus": must be cgroupfs or systemd'),
    "clusterDNS": Bad("10.0.0.10", "expected a list of strings"),
    "featureGates": Bad("{Bogus: true}", "unrecognized feature gate: Bogus",
                        ("--feature-gates", "Bogus=true")),
    "clusterDomain": Bad("5", NOT_STRING),
    "resolvConf": Bad("[a]", NOT_STRING),
    "seccompDefault": Bad('"yes"', NOT_BOOL),
    "runtimeClasses": Bad("{alt: Runc_Alt}", 'runtime class "alt": handler: Invalid value: '
                          '"Runc_Alt": a lowercase RFC 1123 label must consist of',
                          ("--runtime-classes", "alt=Runc_Alt")),
    "registerNode": Bad('"yes"', NOT_BOOL),
    "rotateCertificates": Bad('"yes"', NOT_BOOL),  # certs
    "serverTLSBootstrap": Bad('"yes"', NOT_BOOL),  # certs
    "registerWithTaints": Bad("[{key: a, effect: Sometimes}]",
                              "invalid taint effect: Sometimes, unsupported taint effect"),
    "nodeStatusUpdateFrequency": Bad(
        "-1s", f"invalid configuration: nodeStatusUpdateFrequency -1s {GT_ZERO}",
        ("--node-status-update-frequency=-1s",)),
    "nodeStatusReportFrequency": Bad(
        "-1s", f"invalid configuration: nodeStatusReportFrequency -1s {GT_ZERO}",
        ("--node-status-report-frequency=-1s",)),
    "volumeStatsAggPeriod": Bad("60", NOT_DURATION),
    "nodeLeaseDurationSeconds": Bad(
        "-1", "invalid configuration: nodeLeaseDurationSeconds must be greater than 0"),
    "nodeStatusMaxImages": Bad("-2", "invalid configuration: nodeStatusMaxImages "
                               "(--node-status-max-images) -2 must be -1 or greater",
                               ("--node-status-max-images", "-2")),
    "containerLogMaxSize": Bad("10MB", 'failed to parse container log max size "10MB"',
                               ("--container-log-max-size", "10MB")),
    "containerLogMaxFiles": Bad("1", "invalid configuration: containerLogMaxFiles must be "
                                "greater than 1", ("--container-log-max-files", "1")),
    "containerLogMaxWorkers": Bad("0", "invalid configuration: containerLogMaxWorkers must be "
                                  "greater than or equal to 1"),
    "containerLogMonitorInterval": Bad("1s", "invalid configuration: containerLogMonitorInterval "
                                       "must be a positive time duration greater than or "
                                       "equal to 3s"),
    "tlsCertFile": Bad("/etc/kubelet.crt", "go together: give both or neither",
                       ("--tls-cert-file", "/etc/kubelet.crt")),
    "tlsPrivateKeyFile": Bad("/etc/kubelet.key", "go together: give both or neither",
                             ("--tls-private-key-file", "/etc/kubelet.key")),
    "tlsMinVersion": Bad("VersionSSL3", 'unknown tls version "VersionSSL3"',
                         ("--tls-min-version", "VersionSSL3")),
    "tlsCipherSuites": Bad("[TLS_NULL]", "Cipher suite TLS_NULL not supported or doesn't exist",
                           ("--tls-cipher-suites", "TLS_NULL")),
    "imageGCHighThresholdPercent": Bad(
        "120", "invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) "
        "120 must be between 0 and 100, inclusive", ("--image-gc-high-threshold", "120")),
    "imageGCLowThresholdPercent": Bad(
        "90", "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 "
        "must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85",
        ("--image-gc-low-threshold", "90")),
    "imageMinimumGCAge": Bad("-1s", "invalid configuration: imageMinimumGCAge -1s must not be "
                             "negative", ("--minimum-image-ttl-duration=-1s",)),
    "imageMaximumGCAge": Bad("1m", "invalid configuration: imageMaximumGCAge 1m0s must be "
                             "greater than imageMinimumGCAge 2m0s",
                             ("--image-maximum-gc-age", "1m")),
    "crashLoopBackOff.maxContainerRestartPeriod": Bad(
        "10m", "invalid configuration: FeatureGate KubeletCrashLoopBackOffMax not enabled, "
        "CrashLoopBackOff.MaxContainerRestartPeriod must not be set"),
    "shutdownGracePeriod": Bad("500ms", "invalid configuration: shutdownGracePeriod 500ms must "
                               "be either zero or otherwise >= 1 sec"),
    "shutdownGracePeriodCriticalPods": Bad(
        "20s", "invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= "
        "shutdownGracePeriod 0s"),
    "shutdownGracePeriodByPodPriority": Bad("[{priority: 0, seconds: 1}]",
                                            '[0]: unknown field "seconds"'),
    "evictionMaxPodGracePeriod": Bad("soon", NOT_INTEGER),
    "evictionPressureTransitionPeriod": Bad("-1s", "-1s: must not be negative",
                                            ("--eviction-pressure-transition-period=-1s",)),
    "localStorageCapacityIsolation": Bad('"yes"', NOT_BOOL),
    "evictionHard": Bad("{memory.available: bogus}", "quantities must match the regular "
                        "expression", ("--eviction-hard", "memory.available<bogus")),
    "evictionSoft": Bad("{disk.full: 1Gi}", "unsupported eviction signal disk.full",
                        ("--eviction-soft", "disk.full<1Gi")),
    "evictionSoftGracePeriod": Bad("{memory.available: soon}", 'time: invalid duration "soon"',
                                   ("--eviction-soft-grace-period", "memory.available=soon")),
    "evictionMinimumReclaim": Bad(
        '{memory.available: "-1Gi"}',
        "negative eviction minimum reclaim specified for memory.available",
        ("--eviction-minimum-reclaim", "memory.available=-1Gi")),
    "systemReserved": Bad('{gpu: "1"}', 'cannot reserve "gpu" resource',
                          ("--system-reserved", "gpu=1")),
    "kubeReserved": Bad('{memory: "-1Gi"}',
                        'resource quantity for "memory" cannot be negative: -1Gi',
                        ("--kube-reserved", "memory=-1Gi")),
    "reservedSystemCPUs": Bad('"0-x"', "invalid configuration: unable to parse "
                              "reservedSystemCPUs (--reserved-cpus) 0-x, error: strconv.Atoi: "
                              'parsing "x": invalid syntax', ("--reserved-cpus", "0-x")),
    "enforceNodeAllocatable": Bad(
        "[pods, bogus]", 'invalid configuration: option "bogus" specified for '
        'enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", '
        '"system-reserved", "system-reserved-compressible", "kube-reserved", '
        '"kube-reserved-compressible" or "none"',
        ("--enforce-node-allocatable", "pods,bogus")),
    "systemReservedCgroup": Bad("[a]", NOT_STRING),
    "kubeReservedCgroup": Bad("[a]", NOT_STRING),
    "authentication.anonymous.enabled": Bad('"yes"', NOT_BOOL),
    "authentication.webhook.enabled": Bad(
        "true", "need --kubeconfig: the reviews go to the API server",
        ("--authentication-token-webhook",)),
    "authentication.webhook.cacheTTL": Bad("60", NOT_DURATION),
    "authentication.x509.clientCAFile": Bad("[a]", NOT_STRING),
    "authorization.mode": Bad("Webhook", "need --kubeconfig: the reviews go to the API server",
                              ("--authorization-mode", "Webhook")),
    "authorization.webhook.cacheAuthorizedTTL": Bad("60", NOT_DURATION),
    "authorization.webhook.cacheUnauthorizedTTL": Bad("60", NOT_DURATION),
    "runOnce": Bad('"yes"', NOT_BOOL),
    "logging.format": Bad("xml", 'Unsupported value: "xml": supported values: "json", "text"'),
    "logging.verbosity": Bad("-1", "-1: must be a verbosity from 0 to 4294967295"),
    "logging.vmodule": Bad("[{filePattern: x, verbosity: -1}]",
                           'parsing verbosity in "x=-1"'),
}

BASE = ["--pod-manifest-path", "/etc/kubernetes/manifests"]


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kubelet.yaml"
    path.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                    + body)
    return path


def test_the_table_has_every_field_the_file_accepts() -> None:
    assert set(BAD) == set(FIELD_OF_DEST.values())


@pytest.mark.parametrize("field", sorted(BAD))
def test_a_bad_value_in_the_file_names_the_file_and_the_field(tmp_path: Path,
                                                             field: str) -> None:
    config = write_config(tmp_path, _nested(field, BAD[field].yaml))
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    message = str(caught.value)
    assert message.startswith(f"--config {config}: "), message
    assert f"{field}: " in message and BAD[field].rule in message, message
    assert caught.value.file == str(config)


FLAGGED = sorted(field for field, bad in BAD.items() if bad.flags)


@pytest.mark.parametrize("field", FLAGGED)
def test_the_same_value_from_the_flag_names_the_flag(field: str) -> None:
    bad = BAD[field]
    flag = bad.flags[0].partition("=")[0]
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, *bad.flags])
    message = str(caught.value)
    assert message.startswith(f"{flag}: ") or f"({flag})" in message, message
    assert bad.rule in message and "--config" not in message, message


def test_a_flag_overriding_the_file_s_bad_value_is_not_reported(tmp_path: Path) -> None:
    config = write_config(tmp_path, "evictionHard: {memory.available: bogus}\n")
    flags = parse_flags([*BASE, "--config", str(config), "--eviction-hard",
                         "memory.available<1Gi"])
    assert [t.signal for t in flags.eviction.thresholds] == ["memory.available"]


@pytest.mark.parametrize(("body", "argv", "where"), [
    # a rule between two fields is reported where the value that was set came from
    ("imageGCHighThresholdPercent: 50\n", [], "--config {config}: imageGCHighThresholdPercent: "),
    ("imageGCHighThresholdPercent: 50\n", ["--image-gc-low-threshold", "60"],
     "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 60"),
    ("imageMinimumGCAge: 2h\n", ["--image-maximum-gc-age", "1h"],
     "--image-maximum-gc-age: invalid configuration: imageMaximumGCAge 1h0m0s"),
    ("imageMinimumGCAge: 2h\nimageMaximumGCAge: 1h\n", [],
     "--config {config}: imageMaximumGCAge: "),
    ("cgroupDriver: systemd\ncgroupRoot: kube\n", [], "--config {config}: cgroupRoot: "),
    ("cgroupDriver: systemd\n", ["--cgroup-root", "kube"], '--cgroup-root: "kube": '),
])
def test_a_rule_between_fields_is_reported_where_a_value_was_set(
        tmp_path: Path, body: str, argv: list[str], where: str) -> None:
    config = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config), *argv])
    assert str(caught.value).startswith(where.format(config=config)), str(caught.value)


def test_the_daemon_refuses_a_bad_file_before_it_starts_anything(tmp_path: Path) -> None:
    """Through the program itself: exit 2 with the error, and no root dir made (the
    embedded containerd and the actors live there), because config is checked first."""
    config = write_config(tmp_path, "staticPodPath: /etc/kubernetes/manifests\n"
                                    "evictionHard:\n  memory.available: bogus\n")
    root = tmp_path / "root"
    done = subprocess.run(
        [sys.executable, "-m", "bin.main", "--config", str(config), "--root-dir", str(root)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.startswith(f"kubelet-actors: --config {config}: evictionHard: "
                                  f"{BAD['evictionHard'].rule}"), done.stderr
    assert not root.exists()


def test_every_broken_rule_is_reported_together(tmp_path: Path) -> None:
    """As upstream's aggregate error: the file's and the flags' broken rules all at once,
    each located, in the order the checks run, so a user fixes them in one pass."""
    config = write_config(tmp_path, "maxPods: -1\nsyncFrequency: -1s\n")
    with pytest.raises(ConfigErrors) as caught:
        parse_flags([*BASE, "--config", str(config), "--port", "70000"])
    messages = [BAD["port"].rule,
                f"--config {config}: maxPods: {BAD['maxPods'].rule}",
                f"--config {config}: syncFrequency: {BAD['syncFrequency'].rule}"]
    assert [str(err) for err in caught.value.errors] == messages
    assert [err.field for err in caught.value.errors] == ["port", "maxPods", "syncFrequency"]
    assert str(caught.value) == "3 settings break their rules:" + "".join(
        f"\n  {m}" for m in messages)


def test_every_bad_field_of_the_file_is_reported_together(tmp_path: Path) -> None:
    """Values the file's loader refuses (a wrong type) are reported together too, each
    with its file and field; values it could not read are not checked further."""
    config = write_config(tmp_path, "maxPods: many\nstaticPodPath: 3\n"
                                    "evictionHard:\n  memory.available: bogus\n")
    with pytest.raises(ConfigErrors) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert [str(err) for err in caught.value.errors] == [
        f"--config {config}: maxPods: expected an integer, got str",
        f"--config {config}: staticPodPath: expected a string, got int"]
    assert all(err.file == str(config) for err in caught.value.errors)


def test_one_broken_rule_is_reported_as_itself(tmp_path: Path) -> None:
    config = write_config(tmp_path, "maxPods: -1\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--config", str(config)])
    assert not isinstance(caught.value, ConfigErrors)
    assert str(caught.value) == f"--config {config}: maxPods: {BAD['maxPods'].rule}"


def test_the_daemon_prints_every_broken_rule(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: /etc/kubernetes/manifests\nmaxPods: -1\n")
    done = subprocess.run(
        [sys.executable, "-m", "bin.main", "--config", str(config), "--port", "70000",
         "--root-dir", str(tmp_path / "root")],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr == ("kubelet-actors: 2 settings break their rules:\n"
                           f"  {BAD['port'].rule}\n"
                           f"  --config {config}: maxPods: {BAD['maxPods'].rule}\n")
