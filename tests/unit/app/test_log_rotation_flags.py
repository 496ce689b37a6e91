"""The container log rotation flags and KubeletConfiguration fields: upstream's names and
defaults, the file's config-only fields, and bad values refused in upstream's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from runtime.errors import ConfigError
from tests.unit.app.test_flags import write_config

BASE = ["--pod-manifest-path", "/tmp/manifests"]


def test_defaults_are_upstreams() -> None:
    flags = parse_flags(BASE)
    assert (flags.container_log_max_size, flags.container_log_max_files,
            flags.container_log_max_workers, flags.container_log_monitor_interval) == (
        10 * 2**20, 5, 1, 10.0)


def test_flags_and_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "containerLogMaxSize: 500Ki\ncontainerLogMaxFiles: 3\n"
                                    "containerLogMaxWorkers: 2\n"
                                    "containerLogMonitorInterval: 3s\n")
    flags = parse_flags([*BASE, "--config", str(config)])
    assert (flags.container_log_max_size, flags.container_log_max_files,
            flags.container_log_max_workers, flags.container_log_monitor_interval) == (
        500 * 1024, 3, 2, 3.0)
    flags = parse_flags([*BASE, "--config", str(config), "--container-log-max-size", "1Mi",
                         "--container-log-max-files", "2"])
    assert (flags.container_log_max_size, flags.container_log_max_files) == (2**20, 2)
    assert parse_flags([*BASE, "--container-log-max-size", "-1"]).container_log_max_size == -1


@pytest.mark.parametrize(("argv", "body", "message", "field"), [
    (["--container-log-max-files", "1"], "",
     "--container-log-max-files: invalid configuration: containerLogMaxFiles must be "
     "greater than 1", "containerLogMaxFiles"),
    (["--container-log-max-size", "10MB"], "",
     '--container-log-max-size: failed to parse container log max size "10MB"',
     "containerLogMaxSize"),
    ([], "containerLogMaxWorkers: 0\n",
     "invalid configuration: containerLogMaxWorkers must be greater than or equal to 1",
     "containerLogMaxWorkers"),
    ([], "containerLogMonitorInterval: 1s\n",
     "invalid configuration: containerLogMonitorInterval must be a positive time duration "
     "greater than or equal to 3s", "containerLogMonitorInterval"),
])
def test_bad_values_in_upstreams_words(tmp_path: Path, argv: list[str], body: str,
                                       message: str, field: str) -> None:
    config = ["--config", str(write_config(tmp_path, body))] if body else []
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as info:
        parse_flags([*BASE, *config, *argv])
    assert info.value.field == field


def test_a_bad_config_field_type_names_the_file_and_field(tmp_path: Path) -> None:
    config = write_config(tmp_path, "containerLogMaxFiles: five\n")
    with pytest.raises(ConfigError, match="containerLogMaxFiles: expected an integer"):
        parse_flags([*BASE, "--config", str(config)])
