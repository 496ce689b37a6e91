"""Wires graceful node shutdown into the daemon: the shutdown manager's settings (with the
last shutdown's state, read from ``<root-dir>/graceful_node_shutdown_state`` before the
actors start: an input the trace header records), the file it stores that state in, and
the logind watch that feeds it (its settings are actors.app.config.shutdown's).

Off (both grace periods 0, no list, or the GracefulNodeShutdown gate off): nothing is made
and the D-Bus modules are not imported, as upstream's "No graceful configuration
specified, node shutdown will be immediate".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

from runtime.nodeshutdown_state import ShutdownState

if TYPE_CHECKING:
    from actors.app.config.flags import KubeletFlags
    from actors.core.dispatch import Dispatch
    from actors.kubelet.shutdown import ShutdownSettings
    from actors.kubelet.sources.logind import LogindWatch
    from runtime.nodeshutdown_state import ShutdownStateFile


def shutdown_settings(flags: KubeletFlags, cluster: bool) -> ShutdownSettings | None:
    """The shutdown manager's settings; None: graceful node shutdown is off."""
    from actors.app.config.shutdown import periods

    groups = periods(flags.shutdown_grace_period, flags.shutdown_grace_period_critical_pods,
                     flags.shutdown_grace_period_by_pod_priority, flags.feature_gates)
    if not groups:
        logger.info("No graceful configuration specified, node shutdown will be immediate")
        return None
    from actors.kubelet.shutdown import ShutdownSettings

    logger.info("Creating node shutdown manager: shutdownGracePeriodRequested={}s "
                "shutdownGracePeriodCriticalPods={}s shutdownGracePeriodByPodPriority={}",
                f"{flags.shutdown_grace_period:g}",
                f"{flags.shutdown_grace_period_critical_pods:g}",
                [{"priority": g.priority,
                  "shutdownGracePeriodSeconds": g.shutdown_grace_period_seconds}
                 for g in groups])
    from actors.app.config.feature_gates import (
        GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY,
        enabled,
    )

    # upstream's enableMetrics: the state file and its metrics go with this gate.
    record = enabled(flags.feature_gates, GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY)
    return ShutdownSettings(groups, node_status=cluster, record_state=record,
                            state=restore_shutdown_state(flags.root_dir) if record
                            else ShutdownState())


def restore_shutdown_state(root_dir: str) -> ShutdownState:
    """The last shutdown's start and end as stored under ``root_dir`` (upstream's Load at
    Start); a file that cannot be read is logged, naming it, and counts as none."""
    from runtime.errors import ShutdownStateError
    from runtime.nodeshutdown_state import load_shutdown_state, state_path

    try:
        return load_shutdown_state(state_path(root_dir))
    except ShutdownStateError as err:
        logger.error("Failed to load graceful shutdown state: {}", err)
        return ShutdownState()


def shutdown_state_file(root_dir: str, settings: ShutdownSettings | None
                        ) -> ShutdownStateFile | None:
    """Where the shutdown manager stores its state; None when it stores none."""
    if settings is None or not settings.record_state:
        return None
    from runtime.nodeshutdown_state import ShutdownStateFile, state_path

    return ShutdownStateFile(state_path(root_dir))


def logind_watch(flags: KubeletFlags, settings: ShutdownSettings | None, dispatch: Dispatch
                 ) -> LogindWatch | None:
    """The logind watch for ``settings`` (not started); None when shutdown is off."""
    if settings is None:
        return None
    from actors.kubelet.sources.logind import LogindWatch
    from runtime.nodeshutdown import period_requested

    return LogindWatch(dispatch, period_requested(settings.periods), flags.logind_conf_dir)
