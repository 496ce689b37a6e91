"""The one place that overrides a private method of pykka.

Pykka stops an actor whose ``on_start`` raised without calling ``on_failure``, so a
supervisor never hears that the child it started is dead (found by the raise-in-on-start
drill). ``StartReportingActor`` runs pykka's loop setup with two changes: a hook runs just
before ``on_start`` (where a fault plan may make the start fail), and a failure in either
reaches ``on_failure`` like a failure in a handler does.

tests/unit/core/test_pykka_compat.py pins the pykka source this mirrors, so an upgrade
that changes it fails a test instead of silently changing how failures are reported.
"""

from __future__ import annotations

import sys

import pykka

PYKKA_VERSION = "4.5.0"
"""The pykka release whose ``ActorBase._actor_loop_setup`` this override was written for."""


class StartReportingActor(pykka.ThreadingActor):
    """A pykka thread actor whose start failures reach ``on_failure``."""

    def before_start(self) -> None:
        """Hook: runs in the actor's thread right before ``on_start``."""

    def _actor_loop_setup(self) -> None:
        try:
            self.before_start()
            self.on_start()
        except Exception:
            self._handle_failure(*sys.exc_info())
            self.on_failure(*sys.exc_info())
