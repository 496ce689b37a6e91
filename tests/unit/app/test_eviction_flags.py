"""The eviction flags and KubeletConfiguration fields, as upstream's."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from runtime.errors import ConfigError
from runtime.eviction.api import (
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
)
from tests.unit.app.test_flags import write_config


def test_the_defaults_are_upstreams_hard_thresholds(tmp_path: Path) -> None:
    eviction = parse_flags(["--pod-manifest-path", str(tmp_path)]).eviction
    assert {t.signal: str(t.value) for t in eviction.thresholds} == {
        MEMORY_AVAILABLE: "100Mi", NODEFS_AVAILABLE: "10%", NODEFS_INODES_FREE: "5%",
        IMAGEFS_AVAILABLE: "15%"}
    assert all(t.hard for t in eviction.thresholds)
    assert (eviction.pressure_transition_period, eviction.max_pod_grace_period) == (300.0, 0)


def test_flags_replace_the_defaults(tmp_path: Path) -> None:
    eviction = parse_flags([
        "--pod-manifest-path", str(tmp_path), "--eviction-hard", "memory.available<1Gi",
        "--eviction-soft", "memory.available<2Gi,nodefs.available<20%",
        "--eviction-soft-grace-period", "memory.available=1m30s,nodefs.available=10s",
        "--eviction-minimum-reclaim", "memory.available=500Mi",
        "--eviction-max-pod-grace-period", "30",
        "--eviction-pressure-transition-period", "30s"]).eviction
    assert [(t.signal, str(t.value), t.grace_period) for t in eviction.thresholds] == [
        (MEMORY_AVAILABLE, "1Gi", 0.0), (MEMORY_AVAILABLE, "2Gi", 90.0),
        (NODEFS_AVAILABLE, "20%", 10.0)]
    assert [str(t.min_reclaim) for t in eviction.thresholds][:2] == ["500Mi", "500Mi"]
    assert (eviction.pressure_transition_period, eviction.max_pod_grace_period) == (30.0, 30)
    assert parse_flags(["--pod-manifest-path", str(tmp_path), "--eviction-hard", ""]
                       ).eviction.thresholds == ()


def test_the_config_file_fields(tmp_path: Path) -> None:
    config = write_config(tmp_path, """staticPodPath: manifests
evictionHard:
  memory.available: 200Mi
evictionSoft:
  nodefs.available: 15%
evictionSoftGracePeriod:
  nodefs.available: 2m
evictionMaxPodGracePeriod: 10
evictionPressureTransitionPeriod: 1m
localStorageCapacityIsolation: false
""")
    eviction = parse_flags(["--config", str(config)]).eviction
    assert [(t.signal, str(t.value), t.grace_period) for t in eviction.thresholds] == [
        (MEMORY_AVAILABLE, "200Mi", 0.0), (NODEFS_AVAILABLE, "15%", 120.0)]
    assert (eviction.pressure_transition_period, eviction.max_pod_grace_period) == (60.0, 10)
    assert not eviction.local_storage_capacity_isolation


@pytest.mark.parametrize(("argv", "isolation"), [
    ([], True), (["--local-storage-capacity-isolation=false"], False),
    (["--local-storage-capacity-isolation"], True),
])
def test_local_storage_capacity_isolation_is_on_by_default(
        tmp_path: Path, argv: list[str], isolation: bool) -> None:
    eviction = parse_flags(["--pod-manifest-path", str(tmp_path), *argv]).eviction
    assert eviction.local_storage_capacity_isolation is isolation


@pytest.mark.parametrize(("argv", "message"), [
    (["--eviction-hard", "memory.avail<1Gi"],
     "--eviction-hard: unsupported eviction signal memory.avail"),
    (["--eviction-soft", "memory.available<1Gi"],
     "grace period must be specified for the soft eviction threshold memory.available"),
    (["--eviction-soft-grace-period", "memory.available=soon"],
     '--eviction-soft-grace-period: time: invalid duration "soon"'),
])
def test_bad_eviction_flags_name_the_flag(tmp_path: Path, argv: list[str],
                                          message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_flags(["--pod-manifest-path", str(tmp_path), *argv])
