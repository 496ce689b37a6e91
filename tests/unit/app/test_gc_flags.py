"""The garbage collection flags and config fields, and crashLoopBackOff.maxContainerRestartPeriod,
as upstream names, defaults and checks them."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from runtime.clock import FakeClock
from runtime.errors import ConfigError
from runtime.kuberuntime.container_gc import ContainerGCPolicy
from runtime.kuberuntime.image_gc import ImageGCPolicy
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.testing.fake_runtime import FakeRuntime
from tests.unit.app.test_flags import write_config

BASE = ["--pod-manifest-path", "/etc/pods"]


def test_defaults_are_upstreams() -> None:
    flags = parse_flags(BASE)
    gc = flags.garbage_collection
    assert gc.containers == ContainerGCPolicy(min_age=0.0, max_per_pod_container=1,
                                              max_containers=-1)
    assert gc.images == ImageGCPolicy(high_threshold=85, low_threshold=80, min_age=120.0,
                                      max_age=0.0)
    assert (gc.container_gc_period, gc.image_gc_period) == (60.0, 300.0)
    assert gc.sandbox_image == flags.pod_infra_container_image
    assert flags.max_container_restart_period == 300.0


def test_flags_set_the_policies() -> None:
    flags = parse_flags([*BASE, "--minimum-container-ttl-duration", "1m",
                         "--maximum-dead-containers-per-container", "2",
                         "--maximum-dead-containers", "10", "--image-gc-high-threshold", "60",
                         "--image-gc-low-threshold", "50", "--minimum-image-ttl-duration", "30s",
                         "--image-maximum-gc-age", "1h", "--kubelet-actors-container-gc-period",
                         "5s", "--kubelet-actors-image-gc-period", "10s"])
    gc = flags.garbage_collection
    assert gc.containers == ContainerGCPolicy(60.0, 2, 10)
    assert gc.images == ImageGCPolicy(60, 50, 30.0, 3600.0)
    assert (gc.container_gc_period, gc.image_gc_period) == (5.0, 10.0)


def test_config_fields_set_the_image_policy(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: /etc/pods\nimageGCHighThresholdPercent: 70\n"
                          "imageGCLowThresholdPercent: 40\nimageMinimumGCAge: 1m\n"
                          "imageMaximumGCAge: 2h\n")
    assert parse_flags(["--config", str(config)]).garbage_collection.images == ImageGCPolicy(
        70, 40, 60.0, 7200.0)
    flag_wins = parse_flags(["--config", str(config), "--image-gc-low-threshold", "30"])
    assert flag_wins.garbage_collection.images.low_threshold == 30


@pytest.mark.parametrize(("argv", "message"), [
    (["--image-gc-high-threshold", "120"], "imageGCHighThresholdPercent "
     "(--image-gc-high-threshold) 120 must be between 0 and 100, inclusive"),
    (["--image-gc-low-threshold", "90"], "imageGCLowThresholdPercent (--image-gc-low-threshold) "
     "90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85"),
    (["--image-maximum-gc-age", "1m"], "imageMaximumGCAge 1m0s must be greater than "
     "imageMinimumGCAge 2m0s"),
    (["--kubelet-actors-image-gc-period", "0s"], "--kubelet-actors-image-gc-period 0s: must be "
     "more than 0"),
])
def test_bad_values_are_refused_in_upstreams_words(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, *argv])
    assert message in str(caught.value)


def _crash_config(tmp_path: Path, period: str, gate: bool) -> Path:
    gates = "featureGates:\n  KubeletCrashLoopBackOffMax: true\n" if gate else ""
    return write_config(tmp_path, f"staticPodPath: /etc/pods\n{gates}crashLoopBackOff:\n"
                        f"  maxContainerRestartPeriod: {period}\n")


def test_max_container_restart_period_behind_its_gate(tmp_path: Path) -> None:
    flags = parse_flags(["--config", str(_crash_config(tmp_path, "1s", gate=True))])
    assert flags.max_container_restart_period == 1.0
    with pytest.raises(ConfigError, match=r"FeatureGate KubeletCrashLoopBackOffMax not enabled, "
                       r"CrashLoopBackOff\.MaxContainerRestartPeriod must not be set"):
        parse_flags(["--config", str(_crash_config(tmp_path, "1s", gate=False))])
    with pytest.raises(ConfigError, match=r"CrashLoopBackOff.MaxContainerRestartPeriod \(got: "
                       r"600 seconds\) must be set between 1s and 300s"):
        parse_flags(["--config", str(_crash_config(tmp_path, "10m", gate=True))])


def test_the_crash_loop_back_off_starts_at_the_cap_when_it_is_under_10s() -> None:
    clock = FakeClock()
    for cap, first, then in ((1.0, 1.0, 1.0), (30.0, 10.0, 20.0), (300.0, 10.0, 20.0)):
        manager = KubeRuntimeManager(FakeRuntime(clock), NodeSettings(
            "node", max_container_restart_period=cap), clock)
        backoff = manager.containers.crash_backoff
        assert backoff.next("k", clock.now()) == first  # type: ignore[arg-type]
        assert backoff.next("k", clock.now()) == then  # type: ignore[arg-type]
