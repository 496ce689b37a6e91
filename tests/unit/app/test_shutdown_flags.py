"""Graceful node shutdown's KubeletConfiguration fields (file only, as upstream), their
checks in upstream's words, and the groups the daemon's wiring makes of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.configz import kubelet_configuration
from actors.app.config.flags import parse_flags
from actors.app.shutdown_setup import shutdown_settings, shutdown_state_file
from runtime.errors import ConfigError
from runtime.nodeshutdown import SYSTEM_CRITICAL_PRIORITY
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority as Period
from runtime.nodeshutdown_state import ShutdownState
from tests.unit.app.test_flags import write_config

BASE = ["--pod-manifest-path", "/etc/pods"]


def flags_of(tmp_path: Path, text: str) -> list[str]:
    return [*BASE, "--config", str(write_config(tmp_path, text))]


def test_off_by_default() -> None:
    flags = parse_flags(BASE)
    assert (flags.shutdown_grace_period, flags.shutdown_grace_period_critical_pods,
            flags.shutdown_grace_period_by_pod_priority) == (0.0, 0.0, ())
    assert shutdown_settings(flags, cluster=False) is None


def test_grace_periods_make_two_groups(tmp_path: Path) -> None:
    flags = parse_flags(flags_of(tmp_path, "shutdownGracePeriod: 30s\n"
                                 "shutdownGracePeriodCriticalPods: 10s\n"))
    settings = shutdown_settings(flags, cluster=True)
    assert settings is not None and settings.node_status
    assert settings.periods == (Period(0, 20), Period(SYSTEM_CRITICAL_PRIORITY, 10))


def test_by_pod_priority_list(tmp_path: Path) -> None:
    flags = parse_flags(flags_of(tmp_path, "shutdownGracePeriodByPodPriority:\n"
                                 "- {priority: 100000, shutdownGracePeriodSeconds: 20}\n"
                                 "- {priority: 0, shutdownGracePeriodSeconds: 10}\n"))
    settings = shutdown_settings(flags, cluster=False)
    assert settings is not None
    assert settings.periods == (Period(0, 10), Period(100000, 20))
    # /configz shows the list as given, and the two periods as 0s.
    configz = kubelet_configuration(flags)
    assert configz["shutdownGracePeriodByPodPriority"] == [
        {"priority": 100000, "shutdownGracePeriodSeconds": 20},
        {"priority": 0, "shutdownGracePeriodSeconds": 10}]
    assert (configz["shutdownGracePeriod"], configz["shutdownGracePeriodCriticalPods"]) == (
        "0s", "0s")


@pytest.mark.parametrize(("text", "error"), [
    ("shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
     "shutdownGracePeriodCriticalPods: invalid configuration: shutdownGracePeriodCriticalPods "
     "20s must be <= shutdownGracePeriod 10s"),
    ("shutdownGracePeriod: 500ms\n",
     "shutdownGracePeriod: invalid configuration: shutdownGracePeriod 500ms must be either "
     "zero or otherwise >= 1 sec"),
    ("shutdownGracePeriod: 30s\nshutdownGracePeriodByPodPriority:\n"
     "- {priority: 0, shutdownGracePeriodSeconds: 10}\n",
     "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and "
     "shutdownGracePeriod at the same time"),
    ("shutdownGracePeriod: 30s\nfeatureGates: {GracefulNodeShutdown: false}\n",
     "invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods "
     "requires feature gate GracefulNodeShutdown"),
    ("shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 10}\n"
     "featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}\n",
     "invalid configuration: Specifying shutdownGracePeriodByPodPriority requires feature "
     "gate GracefulNodeShutdownBasedOnPodPriority"),
    ("shutdownGracePeriodByPodPriority:\n- {priority: 0, seconds: 10}\n",
     'shutdownGracePeriodByPodPriority: [0]: unknown field "seconds"'),
])
def test_upstreams_checks(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(flags_of(tmp_path, text))
    assert error in str(caught.value)
    assert "--config" in str(caught.value)


def test_every_broken_rule_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(flags_of(tmp_path, "shutdownGracePeriod: 10s\n"
                             "shutdownGracePeriodCriticalPods: 20s\n"
                             "shutdownGracePeriodByPodPriority:\n"
                             "- {priority: 0, shutdownGracePeriodSeconds: 10}\n"))
    message = str(caught.value)
    assert "shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s" in message
    assert "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod" in message


def test_the_last_shutdowns_state_is_read_from_the_root_dir(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    args = [*flags_of(tmp_path, "shutdownGracePeriod: 30s\n"), "--root-dir", str(root)]
    state = root / "graceful_node_shutdown_state"
    state.write_text('{"startTime":"2026-12-08T02:49:15.25Z",'
                     '"endTime":"2026-12-08T02:49:35Z"}')
    settings = shutdown_settings(parse_flags(args), cluster=False)
    assert settings is not None and settings.record_state
    assert settings.state == ShutdownState(1796698155.25, 1796698175.0)
    sink = shutdown_state_file(str(root), settings)
    assert sink is not None and sink.path == state
    # A broken file counts as none (logged, naming it), as upstream's failed Load.
    state.write_text("{")
    broken = shutdown_settings(parse_flags(args), cluster=False)
    assert broken is not None and broken.state == ShutdownState()


def test_without_the_priority_gate_no_state_is_read_nor_stored(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "graceful_node_shutdown_state").write_text(
        '{"startTime":"2026-12-08T02:49:15Z","endTime":"0001-01-01T00:00:00Z"}')
    flags = parse_flags([*flags_of(tmp_path, "shutdownGracePeriod: 30s\n"), "--root-dir",
                         str(root), "--feature-gates",
                         "GracefulNodeShutdownBasedOnPodPriority=false"])
    settings = shutdown_settings(flags, cluster=False)
    assert settings is not None and not settings.record_state
    assert settings.state == ShutdownState()
    assert shutdown_state_file(str(root), settings) is None
