"""Container log rotation's flags, ``--container-log-max-size`` and
``--container-log-max-files``, with the config file's containerLogMaxWorkers and
containerLogMonitorInterval, checked as upstream checks them
(runtime.kuberuntime.log_rotation rotates the logs)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from actors.app.config.origins import invalid
from actors.app.config.pflag_values import INT32
from runtime.kuberuntime.log_rotation import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_SIZE,
    DEFAULT_MAX_WORKERS,
    DEFAULT_MONITOR_INTERVAL,
    MIN_MONITOR_INTERVAL,
    parse_max_size,
)


def add_container_log_flags(add: Callable[..., None]) -> None:
    """The flags, on build_parser's ``add``."""
    add("--container-log-max-size", default=DEFAULT_MAX_SIZE,
        help="the size (a quantity, e.g. 10Mi) a container's log file reaches before it "
             "is rotated (negative: no rotation)")
    add("--container-log-max-files", type=INT32, default=DEFAULT_MAX_FILES,
        help="the most log files kept per container, the current one included (at least 2)")


def container_log_settings(ns: argparse.Namespace) -> dict[str, Any]:
    """The container log rotation flags (and config-file-only fields), checked in
    upstream's words (NewContainerLogManager, ValidateKubeletConfiguration)."""
    try:
        max_size = parse_max_size(ns.container_log_max_size)
    except ValueError as err:
        raise invalid("containerLogMaxSize", str(err)) from err
    if ns.container_log_max_files <= 1:
        raise invalid("containerLogMaxFiles", "invalid configuration: containerLogMaxFiles "
                                              "must be greater than 1")
    workers = getattr(ns, "container_log_max_workers", DEFAULT_MAX_WORKERS)
    if workers < 1:
        raise invalid("containerLogMaxWorkers", "invalid configuration: containerLogMaxWorkers "
                                                "must be greater than or equal to 1")
    interval = getattr(ns, "container_log_monitor_interval", DEFAULT_MONITOR_INTERVAL)
    if interval < MIN_MONITOR_INTERVAL:
        raise invalid("containerLogMonitorInterval", "invalid configuration: "
                      "containerLogMonitorInterval must be a positive time duration greater "
                      "than or equal to 3s")
    return {"container_log_max_size": max_size,
            "container_log_max_files": ns.container_log_max_files,
            "container_log_max_workers": workers,
            "container_log_monitor_interval": interval}
