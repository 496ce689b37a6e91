"""The calls to logind (and systemd) graceful node shutdown makes, as upstream's
pkg/kubelet/nodeshutdown/systemd DBusCon makes them, in its words."""

from __future__ import annotations

import os
import queue
from pathlib import Path
from typing import Any

from runtime.errors import LogindError
from runtime.logind.bus import SystemBus

LOGIND_SERVICE = "org.freedesktop.login1"
LOGIND_OBJECT = "/org/freedesktop/login1"
LOGIND_INTERFACE = "org.freedesktop.login1.Manager"
SYSTEMD_SERVICE = "org.freedesktop.systemd1"
SYSTEMD_OBJECT = "/org/freedesktop/systemd1"
SYSTEMD_INTERFACE = "org.freedesktop.systemd1.Manager"

LOGIND_CONFIG_DIRECTORY = "/etc/systemd/logind.conf.d/"
KUBELET_LOGIND_CONF = "99-kubelet.conf"
SIGHUP = 1

INHIBIT_WHAT = "shutdown"
INHIBIT_WHO = "kubelet"
INHIBIT_WHY = "Kubelet needs time to handle node shutdown"
INHIBIT_MODE = "delay"


class Logind:
    """logind on ``bus``; ``config_directory`` is where its drop-ins are written."""

    def __init__(self, bus: SystemBus, config_directory: str = LOGIND_CONFIG_DIRECTORY
                 ) -> None:
        from jeepney import DBusAddress

        self.bus = bus
        self.config_directory = config_directory
        self._logind = DBusAddress(LOGIND_OBJECT, bus_name=LOGIND_SERVICE,
                                   interface=LOGIND_INTERFACE)
        self._systemd = DBusAddress(SYSTEMD_OBJECT, bus_name=SYSTEMD_SERVICE,
                                    interface=SYSTEMD_INTERFACE)

    def current_inhibit_delay(self) -> float:
        """logind's InhibitDelayMaxUSec, in seconds (logind.conf's InhibitDelayMaxSec)."""
        from jeepney import Properties

        try:
            (variant,) = self.bus.call(Properties(self._logind).get("InhibitDelayMaxUSec"))
        except LogindError as err:
            raise LogindError(f"failed reading InhibitDelayMaxUSec property from logind: "
                              f"{err}") from err
        signature, value = variant
        if signature != "t":
            raise LogindError("InhibitDelayMaxUSec from logind is not a uint64 as expected")
        return int(value) / 1e6

    def inhibit_shutdown(self) -> int:
        """A delay inhibitor lock on shutdown: the file descriptor that holds it."""
        from jeepney import new_method_call

        try:
            (fd,) = self.bus.call(new_method_call(
                self._logind, "Inhibit", "ssss",
                (INHIBIT_WHAT, INHIBIT_WHO, INHIBIT_WHY, INHIBIT_MODE)))
        except LogindError as err:
            raise LogindError(f"failed creating systemd inhibitor: {err}") from err
        except ValueError as err:
            raise LogindError(f"failed storing inhibit lock file descriptor: {err}") from err
        raw: int = fd.to_raw_fd()
        return raw

    @staticmethod
    def release_inhibit_lock(lock: int) -> None:
        """Close the lock's file descriptor: logind goes on with the shutdown."""
        try:
            os.close(lock)
        except OSError as err:
            raise LogindError(f"unable to close systemd inhibitor lock: {err}") from err

    def reload_logind_conf(self) -> None:
        """SIGHUP to systemd-logind.service through systemd (KillUnit), so logind reads
        its configuration (and the kubelet's drop-in) again."""
        from jeepney import new_method_call

        try:
            self.bus.call(new_method_call(self._systemd, "KillUnit", "ssi",
                                          ("systemd-logind.service", "all", SIGHUP)))
        except LogindError as err:
            raise LogindError(f"unable to reload logind conf: {err}") from err

    def override_inhibit_delay(self, seconds: float) -> str:
        """Write logind's drop-in that sets InhibitDelayMaxSec; its path."""
        directory = Path(self.config_directory)
        try:
            directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as err:
            raise LogindError(f"failed creating {directory} directory: {err}") from err
        path = directory / KUBELET_LOGIND_CONF
        text = f"# Kubelet logind override\n[Login]\nInhibitDelayMaxSec={seconds:.0f}\n"
        try:
            path.write_text(text, encoding="utf-8")
            path.chmod(0o644)
        except OSError as err:
            raise LogindError(f"failed writing logind shutdown inhibit override file "
                              f"{path}: {err}") from err
        return str(path)

    def monitor_shutdown(self) -> queue.Queue[Any]:
        """Subscribe to PrepareForShutdown; the queue the bus's signals arrive on (None
        once the connection ended)."""
        from jeepney.bus_messages import MatchRule, message_bus

        rule = MatchRule(type="signal", interface=LOGIND_INTERFACE,
                         member="PrepareForShutdown", path=LOGIND_OBJECT)
        self.bus.call(message_bus.AddMatch(rule))
        return self.bus.signals


def shutdown_active(signal: Any) -> bool | None:
    """A PrepareForShutdown signal's argument; None for any other message, or one whose
    body is empty or not a boolean (upstream logs those and waits for the next)."""
    from jeepney import HeaderFields

    fields = signal.header.fields
    if fields.get(HeaderFields.member) != "PrepareForShutdown" \
            or fields.get(HeaderFields.interface) != LOGIND_INTERFACE:
        return None
    body = signal.body
    if not body or not isinstance(body[0], bool):
        return None
    return bool(body[0])
