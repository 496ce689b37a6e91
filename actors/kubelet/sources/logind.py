"""The logind watch: a source thread that holds the shutdown inhibitor lock and tells the
shutdown manager each PrepareForShutdown signal.

Its thread does what upstream's managerImpl.start does: connect to the system bus, read
logind's InhibitDelayMaxUSec and, when it is less than the whole shutdown's grace period,
write logind's drop-in (``99-kubelet.conf``: InhibitDelayMaxSec), reload logind and read
it again (still less: an error in upstream's words, and no watch: the node shuts down
without waiting, as upstream's kubelet runs on when its shutdown manager fails to start);
take a delay inhibitor lock; subscribe to PrepareForShutdown. Each signal becomes a
``NodeShutdownEvent`` to the shutdown manager through the dispatch (recorded in a trace,
replayable). When the connection ends it starts over after a second (upstream's
dbusReconnectPeriod).

The shutdown manager releases and takes the lock again through ``release``/``acquire``
(the Inhibitor it is given).
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any

from loguru import logger

from actors.core.dispatch import Dispatch
from actors.kubelet import names
from actors.kubelet.shutdown import NodeShutdownEvent
from runtime.errors import LogindError

if TYPE_CHECKING:
    from runtime.logind.inhibit import Logind

RECONNECT_PERIOD = 1.0
"""dbusReconnectPeriod: the wait before watching again after the connection ended."""

_log = logger.bind(pod="", uid="", container="")


class LogindWatch:
    """Watches logind for ``period_requested`` seconds of shutdown (the groups' sum)."""

    def __init__(self, dispatch: Dispatch, period_requested: int,
                 config_directory: str = "", address: str | None = None) -> None:
        self._dispatch = dispatch
        self._period = period_requested
        self._config_directory = config_directory
        self._address = address
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._logind: Logind | None = None
        self._inhibit_lock: int | None = None
        self._thread: threading.Thread | None = None
        self.started = threading.Event()  # the first watch is in place (or failed)
        self.error: str = ""  # why the first start failed ("" when it did not)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="logind-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and let go of the lock (a kubelet that stops delays nothing)."""
        self._stop.set()
        with self._lock:
            logind, self._logind = self._logind, None
        if logind is not None:
            logind.bus.close()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._close_lock()

    # --- the Inhibitor the shutdown manager uses -------------------------------------------

    def release(self) -> None:
        self._close_lock()

    def acquire(self) -> None:
        with self._lock:
            logind = self._logind
        if logind is None:
            return
        try:
            self._take_lock(logind)
        except LogindError as err:
            _log.error("unable to take the shutdown inhibitor lock again: {}", err)

    # --- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                signals = self._start()
            except LogindError as err:
                if first:
                    self.error = str(err)
                    _log.error("Failed to start node shutdown manager: {}", err)
                    self.started.set()
                    return  # as upstream: no retry when the first start fails
                _log.error("Unable to watch the node for shutdown events: {}", err)
            else:
                self.started.set()
                first = False
                self._watch(signals)
            if self._stop.wait(RECONNECT_PERIOD):
                return
            _log.debug("Restarting watch for node shutdown events")

    def _start(self) -> queue.Queue[Any]:
        from runtime.logind.bus import SystemBus
        from runtime.logind.inhibit import LOGIND_CONFIG_DIRECTORY, Logind

        bus = SystemBus(self._address)
        logind = Logind(bus, self._config_directory or LOGIND_CONFIG_DIRECTORY)
        try:
            current = logind.current_inhibit_delay()
            if self._period > current:
                try:
                    path = logind.override_inhibit_delay(self._period)
                except LogindError as err:
                    raise LogindError(f"unable to override inhibit delay by shutdown manager: "
                                      f"{err}") from err
                _log.info("wrote {} (InhibitDelayMaxSec={}), reloading logind", path,
                          self._period)
                logind.reload_logind_conf()
                updated = logind.current_inhibit_delay()
                if self._period > updated:
                    raise LogindError(
                        f"node shutdown manager was unable to update logind "
                        f"InhibitDelayMaxSec to {self._period}s (ShutdownGracePeriod), "
                        f"current value of InhibitDelayMaxSec ({updated:g}s) is less than "
                        f"requested ShutdownGracePeriod")
            self._take_lock(logind)
            try:
                signals = logind.monitor_shutdown()
            except LogindError as err:
                self._close_lock()
                raise LogindError(f"failed to monitor shutdown: {err}") from err
        except BaseException:
            bus.close()
            raise
        with self._lock:
            self._logind = logind
        if self._stop.is_set():  # stopped meanwhile: stop() did not see this connection
            bus.close()
        return signals

    def _watch(self, signals: queue.Queue[Any]) -> None:
        from runtime.logind.inhibit import shutdown_active

        while True:
            signal = signals.get()
            if signal is None:
                if not self._stop.is_set():
                    _log.error("Ended to watching the node for shutdown events")
                break
            active = shutdown_active(signal)
            if active is None:
                continue
            _log.debug("Shutdown manager detected new shutdown event, isNodeShuttingDownNow: "
                       "{}", active)
            self._dispatch.tell(names.SHUTDOWN, NodeShutdownEvent(active),
                                sender=f"{names.SHUTDOWN}/logind")
        with self._lock:
            logind, self._logind = self._logind, None
        if logind is not None:
            logind.bus.close()

    def _take_lock(self, logind: Logind) -> None:
        fd = logind.inhibit_shutdown()
        with self._lock:
            old, self._inhibit_lock = self._inhibit_lock, fd
        if old is not None:
            self._release_fd(old)
        _log.info("holding a delay inhibitor lock on shutdown (logind Inhibit, fd {})", fd)

    def _close_lock(self) -> None:
        with self._lock:
            fd, self._inhibit_lock = self._inhibit_lock, None
        if fd is not None:
            self._release_fd(fd)

    @staticmethod
    def _release_fd(fd: int) -> None:
        from runtime.logind.inhibit import Logind

        try:
            Logind.release_inhibit_lock(fd)
        except LogindError as err:
            _log.error("{}", err)
