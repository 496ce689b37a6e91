"""The daemon stops on SIGTERM or SIGINT, also on both at once (a Ctrl-C to the process
group followed by a SIGTERM): its signal handler only notes the signal, so a second one
cannot re-enter the logger while the first is being logged."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, cast

from actors.app.daemon import EXIT_OK, Kubelet, StopSignals, run_until_signalled
from tests.helpers import wait_for


class _Alive:
    def is_alive(self) -> bool:
        return True


class _FakeKubelet:
    def __init__(self) -> None:
        self.sync_loop = _Alive()
        self.stopped = 0

    def stop(self) -> None:
        self.stopped += 1


def test_two_signals_at_once_stop_the_daemon_once() -> None:
    kubelet = _FakeKubelet()
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def send() -> None:
        wait_for(lambda: signal.getsignal(signal.SIGTERM) != before[signal.SIGTERM], 10,
                 "run_until_signalled's handlers in place", interval=0.01)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send)
    sender.start()
    code = run_until_signalled(cast(Kubelet, cast(Any, kubelet)))
    sender.join(10)
    assert code == EXIT_OK
    assert kubelet.stopped == 1
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_upkeep_runs_on_its_period_until_the_signal() -> None:
    kubelet = _FakeKubelet()
    upkeeps: list[None] = []

    def send() -> None:
        wait_for(lambda: len(upkeeps) >= 2, 10, "two upkeeps", interval=0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send)
    sender.start()
    code = run_until_signalled(cast(Kubelet, cast(Any, kubelet)),
                               upkeep=lambda: upkeeps.append(None), upkeep_period=0.01)
    sender.join(10)
    assert code == EXIT_OK
    assert len(upkeeps) >= 2


def test_a_signal_during_the_start_stops_the_daemon_in_order_once_started() -> None:
    """/healthz answers before the start is over: a SIGTERM sent then is noted (by the
    handlers the daemon puts in place before it starts the kubelet) and honoured."""
    kubelet = _FakeKubelet()
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signals = StopSignals()
    os.kill(os.getpid(), signal.SIGTERM)  # the start is still going on
    code = run_until_signalled(cast(Kubelet, cast(Any, kubelet)), signals=signals)
    assert code == EXIT_OK
    assert kubelet.stopped == 1
    assert {s: signal.getsignal(s) for s in before} == before
