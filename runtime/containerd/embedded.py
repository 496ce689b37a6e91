"""An embedded containerd, started and stopped by the kubelet as k3s does it.

``EmbeddedContainerd`` writes its own config (runtime.containerd.config: its own root, state
dir, socket and CNI bridge under ``<base>/containerd``), runs ``containerd --config CONFIG``
as a child in its own session (a SIGINT to the kubelet's process group does not reach it),
and waits until a readiness check (by default CRI ``Version``) answers. ``stop()`` ends
containerd only: the containers keep running under their shim v2 processes, and a new
containerd on the same directory finds them again.

Restarting containerd with backoff when it dies is the actor layer's job; this class gives it
``poll()``/``wait()`` (the exit code), ``is_running()`` and a ``start()`` it can call again.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

from loguru import logger

from runtime.clock import Clock, RealClock
from runtime.containerd.config import (
    DEFAULT_BRIDGE_NAME,
    DEFAULT_CNI_BIN_DIR,
    DEFAULT_SANDBOX_IMAGE,
    DEFAULT_SUBNET,
    ContainerdConfig,
    write_config_files,
)
from runtime.cri.client import CRIClient
from runtime.errors import ContainerdError

ReadinessCheck = Callable[[str], object]
"""Called with the CRI endpoint; returns when the runtime is ready, raises when it is not."""

_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LOG_ROTATE_BYTES = 16 * 1024 * 1024
_TAIL_LINES = 30
# containerd keeps running without the CRI plugin, answering every CRI call UNIMPLEMENTED:
# waiting for it to become ready would only run into the deadline.
_CRI_LOAD_FAILED = re.compile(r'failed to load plugin io\.containerd\.grpc\.v1\.cri"?(.*)')
_ERROR_LINE = re.compile(r"level=(fatal|error|panic)|^containerd: ")


def cri_version_ready(endpoint: str, timeout: float = 2.0) -> None:
    """The default readiness check: CRI ``Version`` answers with runtime API ``v1``.

    Raises what CRIClient raises (a CRIError) while containerd is not serving yet, and
    ContainerdError when it serves another API version.
    """
    with CRIClient(endpoint, timeout=timeout) as client:
        api_version = client.version().runtime_api_version
    if api_version != "v1":
        raise ContainerdError(f"{endpoint} serves CRI {api_version!r}, not v1")


class _LogWatcher:
    """Follows containerd's log file from an offset, keeping its last lines."""

    def __init__(self, path: Path, offset: int) -> None:
        self._path = path
        self._offset = offset
        self._partial = ""
        self.lines: deque[str] = deque(maxlen=_TAIL_LINES)
        self.cri_failure: str | None = None

    def read(self) -> None:
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return
        if not chunk:
            return
        self._offset += len(chunk)
        text = self._partial + chunk.decode("utf-8", errors="replace")
        *complete, self._partial = text.split("\n")
        for line in complete:
            self.lines.append(line)
            match = _CRI_LOAD_FAILED.search(line)
            if match and self.cri_failure is None:
                self.cri_failure = line

    def tail(self) -> str:
        self.read()
        lines = [*self.lines, self._partial] if self._partial else list(self.lines)
        return "\n".join(lines)

    def cause(self) -> str | None:
        """The last error-looking line of this run, the likeliest reason it failed."""
        if self.cri_failure:
            return self.cri_failure
        errors = [line for line in self.lines if _ERROR_LINE.search(line)]
        return errors[-1] if errors else None


class EmbeddedContainerd:
    """A containerd the kubelet runs as its child, with everything under ``<base>/containerd``.

    ``start()`` writes the config, starts containerd and blocks until it is ready;
    ``stop()`` stops containerd (not the containers). One instance runs at most one
    containerd at a time; ``start()`` after an exit starts a new one. Thread-safe.
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        sandbox_image: str = DEFAULT_SANDBOX_IMAGE,
        bridge_name: str = DEFAULT_BRIDGE_NAME,
        subnet: str = DEFAULT_SUBNET,
        cni_bin_dir: str = DEFAULT_CNI_BIN_DIR,
        ip_masq: bool = False,
        state_dir: str | os.PathLike[str] | None = None,
        cni_conf_dir: str | os.PathLike[str] | None = None,
        pod_cidr_from_kubelet: bool = False,
        log_level: str = "info",
        containerd_binary: str = "containerd",
        readiness: ReadinessCheck | None = None,
        clock: Clock | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        poll_interval: float = 0.05,
    ) -> None:
        """Validate the configuration; nothing is written or started before ``start()``.

        ``readiness`` is called with the endpoint until it returns without raising (default
        ``cri_version_ready``). ``cni_conf_dir`` and ``pod_cidr_from_kubelet``: see
        runtime.containerd.config (the operator's conf dir; cluster mode's template).
        Raises ContainerdError for a configuration that cannot work.
        """
        self.config = ContainerdConfig.for_base_dir(
            base_dir,
            sandbox_image=sandbox_image,
            bridge_name=bridge_name,
            subnet=subnet,
            cni_bin_dir=cni_bin_dir,
            ip_masq=ip_masq,
            log_level=log_level,
            state_dir=state_dir,
            cni_conf_dir=cni_conf_dir,
            pod_cidr_from_kubelet=pod_cidr_from_kubelet,
        )
        self.containerd_binary = containerd_binary
        self.readiness: ReadinessCheck = readiness or cri_version_ready
        self.clock: Clock = clock or RealClock()
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.poll_interval = poll_interval
        self.last_startup_seconds: float | None = None
        """How long the last successful ``start()`` took, from spawn to ready."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()
        # A restart keeps the CNI config containerd rendered from the kubelet's pod CIDR:
        # the kubelet gives it once (see write_config_files).
        self._started_once = False

    # --- what others need to know --------------------------------------------------------

    @property
    def base_dir(self) -> Path:
        return self.config.base_dir

    @property
    def endpoint(self) -> str:
        """``unix://<base>/containerd/containerd.sock``: the CRI endpoint."""
        return self.config.endpoint

    @property
    def socket_path(self) -> Path:
        return self.config.socket_path

    @property
    def config_path(self) -> Path:
        return self.config.config_path

    @property
    def log_path(self) -> Path:
        """containerd's stdout and stderr, appended to across starts."""
        return self.config.log_path

    @property
    def pid(self) -> int | None:
        """containerd's pid while this instance runs it, else None."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                return None
            return self._proc.pid

    def is_running(self) -> bool:
        """Whether the containerd this instance started is still alive."""
        return self.pid is not None

    def poll(self) -> int | None:
        """None while containerd runs, its exit code once it has exited (negative: signal).

        Raises ContainerdError if ``start()`` was never called.
        """
        with self._lock:
            if self._proc is None:
                raise ContainerdError("the embedded containerd was never started")
            return self._proc.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until containerd exits and return its exit code; None after ``timeout``.

        Raises ContainerdError if ``start()`` was never called.
        """
        with self._lock:
            proc = self._proc
        if proc is None:
            raise ContainerdError("the embedded containerd was never started")
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = _TAIL_LINES) -> str:
        """The last lines of containerd's log file ("" when there is none)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 64 * 1024))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def __repr__(self) -> str:
        return f"EmbeddedContainerd(endpoint={self.endpoint!r}, pid={self.pid})"

    # --- start ---------------------------------------------------------------------------

    def start(self, timeout: float | None = None) -> None:
        """Write the config, start containerd and wait until the readiness check passes.

        A no-op while this instance's containerd runs. Stops a containerd left running on
        the same directory by an earlier process (found through the pid file). Raises
        ContainerdError, with containerd's last log lines, when the binary is missing, the
        config cannot be written, containerd exits, or it is not ready within ``timeout``
        seconds (default ``start_timeout``); containerd is stopped again in those cases.
        """
        with self._lock:
            if self.is_running():
                return
            deadline_s = self.start_timeout if timeout is None else timeout
            binary = self._resolve_binary()
            write_config_files(self.config, fresh=not self._started_once)
            self._started_once = True
            self._stop_leftover()
            self._refuse_foreign_server()
            self._rotate_log()
            started = self.clock.monotonic()
            proc, watcher = self._spawn(binary)
            self._proc = proc
            try:
                self._wait_ready(proc, watcher, started + deadline_s, deadline_s)
            except BaseException:
                self._terminate(proc)
                self.config.pid_path.unlink(missing_ok=True)
                raise
            self.last_startup_seconds = self.clock.monotonic() - started
            logger.info(
                "embedded containerd pid {} ready on {} in {:.3f}s",
                proc.pid,
                self.endpoint,
                self.last_startup_seconds,
            )

    def _resolve_binary(self) -> str:
        path = os.environ.get("PATH", "") + ":" + _SYSTEM_PATH
        if os.sep in self.containerd_binary:
            found = self.containerd_binary if os.access(self.containerd_binary, os.X_OK) else None
        else:
            found = shutil.which(self.containerd_binary, path=path)
        if not found or not os.path.isfile(found):
            raise ContainerdError(
                f"containerd binary {self.containerd_binary!r} not found or not executable "
                "(install Debian's containerd package: scripts/setup.sh)"
            )
        return os.path.abspath(found)

    def _child_env(self, binary: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS")}
        # containerd finds containerd-shim-runc-v2, runc and the CNI plugins' helpers (iptables)
        # through PATH; a kubelet started with a thin PATH must not break that.
        env["PATH"] = ":".join([os.path.dirname(binary), env.get("PATH", ""), _SYSTEM_PATH])
        return env

    def _spawn(self, binary: str) -> tuple[subprocess.Popen[bytes], _LogWatcher]:
        log_path = self.log_path
        try:
            log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - handed to the child
        except OSError as err:
            raise ContainerdError(f"cannot open containerd's log {log_path}: {err}") from err
        with log:
            header = (
                f"--- kubelet-actors: starting {binary} --config {self.config_path} "
                f"at {time.strftime('%Y-%m-%dT%H:%M:%S%z', time.localtime(self.clock.now()))}\n"
            )
            log.write(header.encode())
            log.flush()
            offset = log.tell()
            try:
                proc = subprocess.Popen(
                    [binary, "--config", str(self.config_path)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.config.containerd_dir,
                    env=self._child_env(binary),
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as err:
                raise ContainerdError(f"cannot start {binary}: {err}") from err
        try:
            self.config.pid_path.write_text(f"{proc.pid}\n")
        except OSError as err:
            logger.warning("cannot write {}: {}", self.config.pid_path, err)
        logger.debug("embedded containerd started: pid {} log {}", proc.pid, log_path)
        return proc, _LogWatcher(log_path, offset)

    def _wait_ready(
        self,
        proc: subprocess.Popen[bytes],
        watcher: _LogWatcher,
        deadline: float,
        timeout: float,
    ) -> None:
        last_error: BaseException | None = None
        while True:
            code = proc.poll()
            watcher.read()
            if code is not None:
                raise ContainerdError(
                    self._failure(
                        f"containerd exited with code {code} before it was ready", watcher
                    )
                )
            if watcher.cri_failure is not None:
                raise ContainerdError(
                    self._failure("containerd could not load its CRI plugin", watcher)
                )
            if self.socket_path.exists():
                try:
                    self.readiness(self.endpoint)
                    return
                except Exception as err:  # not ready yet: any failure means "try again"
                    last_error = err
            if self.clock.monotonic() >= deadline:
                why = f"; last readiness error: {last_error}" if last_error else ""
                raise ContainerdError(
                    self._failure(
                        f"containerd (pid {proc.pid}) was not ready on {self.endpoint} "
                        f"within {timeout:g}s{why}",
                        watcher,
                    )
                )
            self.clock.sleep(self.poll_interval)

    def _failure(self, what: str, watcher: _LogWatcher) -> str:
        tail = watcher.tail()
        cause = watcher.cause()
        msg = what
        if cause:
            msg += f": {cause.strip()}"
        msg += f"\n--- last lines of {self.log_path}:\n{tail or '(empty)'}"
        logger.error("{}", msg)
        return msg

    def _rotate_log(self) -> None:
        try:
            if self.log_path.stat().st_size > _LOG_ROTATE_BYTES:
                os.replace(self.log_path, self.log_path.with_suffix(".log.1"))
        except OSError:
            pass

    def _stop_leftover(self) -> None:
        """Stop a containerd that an earlier kubelet process started on this directory."""
        try:
            pid = int(self.config.pid_path.read_text().strip())
        except (OSError, ValueError):
            return
        if not _is_our_containerd(pid, self.config_path):
            self.config.pid_path.unlink(missing_ok=True)
            return
        logger.warning(
            "stopping containerd pid {} left running on {} by an earlier run", pid, self.endpoint
        )
        _signal(pid, signal.SIGTERM)
        if not _wait_gone(pid, self.stop_timeout):
            _signal(pid, signal.SIGKILL)
            if not _wait_gone(pid, 5.0):
                raise ContainerdError(f"leftover containerd pid {pid} survived SIGKILL")
        self.config.pid_path.unlink(missing_ok=True)

    def _refuse_foreign_server(self) -> None:
        """Refuse to start when something we did not start already serves our socket."""
        if not self.socket_path.exists():
            return
        try:
            self.readiness(self.endpoint)
        except Exception:
            return  # a stale socket file: containerd replaces it
        raise ContainerdError(
            f"another process already serves {self.endpoint}; refusing to start a second "
            "containerd on the same root"
        )

    # --- stop ----------------------------------------------------------------------------

    def stop(self, timeout: float | None = None) -> int | None:
        """Stop containerd: SIGTERM, then SIGKILL after ``timeout`` (default stop_timeout).

        Running containers are left alone (their shims outlive containerd). Returns the exit
        code, or None when this instance never started containerd. Idempotent.
        """
        with self._lock:
            proc = self._proc
            if proc is None:
                return None
            code = self._terminate(proc, timeout)
            self.config.pid_path.unlink(missing_ok=True)
            logger.info("embedded containerd pid {} stopped (exit code {})", proc.pid, code)
            return code

    def _terminate(self, proc: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        if proc.poll() is not None:
            return proc.returncode
        grace = self.stop_timeout if timeout is None else timeout
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            logger.warning(
                "containerd pid {} ignored SIGTERM for {:g}s; sending SIGKILL", proc.pid, grace
            )
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        return proc.wait()

    def __enter__(self) -> EmbeddedContainerd:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _is_our_containerd(pid: int, config_path: Path) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return (
        bool(argv)
        and os.path.basename(argv[0]) == b"containerd"
        and (str(config_path).encode() in argv)
    )


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait for a process that is not our child to vanish (polling /proc; real time)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False
