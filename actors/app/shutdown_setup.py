"""Wires graceful node shutdown into the daemon: the shutdown manager's settings and the
logind watch that feeds it (its settings are actors.app.config.shutdown's).

Off (both grace periods 0, no list, or the GracefulNodeShutdown gate off): nothing is made
and the D-Bus modules are not imported, as upstream's "No graceful configuration
specified, node shutdown will be immediate".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

if TYPE_CHECKING:
    from actors.app.config.flags import KubeletFlags
    from actors.core.dispatch import Dispatch
    from actors.kubelet.shutdown import ShutdownSettings
    from actors.kubelet.sources.logind import LogindWatch


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
    return ShutdownSettings(groups, node_status=cluster)


def logind_watch(flags: KubeletFlags, settings: ShutdownSettings | None, dispatch: Dispatch
                 ) -> LogindWatch | None:
    """The logind watch for ``settings`` (not started); None when shutdown is off."""
    if settings is None:
        return None
    from actors.kubelet.sources.logind import LogindWatch
    from runtime.nodeshutdown import period_requested

    return LogindWatch(dispatch, period_requested(settings.periods), flags.logind_conf_dir)
