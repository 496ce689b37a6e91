"""The one override of a pykka private method, pinned to the pykka it was written for."""

from __future__ import annotations

import hashlib
import inspect
import threading
from importlib.metadata import version
from types import TracebackType

import pykka

from actors.core.pykka_compat import PYKKA_VERSION, StartReportingActor
from tests.helpers import wait_for

# sha256 of pykka's ActorBase._actor_loop_setup source, as of PYKKA_VERSION. If pykka
# changes it, read the new one and check that StartReportingActor still mirrors it (then
# update both constants).
LOOP_SETUP_SHA256 = "2687bc37265693052fc47c55a875728b2ec8bc73fd10db65efbdc0d932f1ff2f"


def test_pykka_is_the_release_the_override_mirrors() -> None:
    assert version("pykka") == PYKKA_VERSION
    source = inspect.getsource(pykka.ThreadingActor._actor_loop_setup)
    assert hashlib.sha256(source.encode()).hexdigest() == LOOP_SETUP_SHA256, source
    # pykka calls the setup from its loop, then runs the handlers:
    assert "self._actor_loop_setup()" in inspect.getsource(pykka.ThreadingActor._actor_loop)


class FailsToStart(StartReportingActor):
    def __init__(self, failures: list[str], where: str) -> None:
        super().__init__()
        self.failures = failures
        self.where = where

    def before_start(self) -> None:
        if self.where == "before_start":
            raise RuntimeError("before_start")

    def on_start(self) -> None:
        raise RuntimeError("on_start")

    def on_failure(self, exception_type: type[BaseException] | None,
                   exception_value: BaseException | None,
                   traceback: TracebackType | None) -> None:
        self.failures.append(str(exception_value))


def test_a_failed_start_reaches_on_failure_and_stops_the_actor() -> None:
    for where in ("before_start", "on_start"):
        failures: list[str] = []
        ref = FailsToStart.start(failures, where)
        wait_for(lambda f=failures: f != [], 5.0, "on_failure")  # type: ignore[misc]
        assert failures == [where]
        assert ref.actor_stopped.wait(5.0)


def test_plain_pykka_does_not_report_a_failed_start() -> None:
    """Why the override exists: pykka alone never calls on_failure for on_start."""
    called = threading.Event()

    class Plain(pykka.ThreadingActor):
        def on_start(self) -> None:
            raise RuntimeError("on_start")

        def on_failure(self, *args: object) -> None:
            called.set()

    ref = Plain.start()
    assert ref.actor_stopped.wait(5.0)
    assert not called.is_set()
