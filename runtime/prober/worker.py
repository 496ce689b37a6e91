"""One probe of one container as a pure state machine (upstream prober worker.doProbe).

A ProbeWorker runs no probes and reads no clock: its owner (the probe manager actor)
tells it what the runtime shows of the container (``observe``), whether the container has
started (``started``), asks when the next attempt is due (``next_due`` / ``due``), marks
an attempt as launched (``begin``) and feeds back what the attempt answered (``step``).
It returns a verdict only when the published result changes, so the owner sends nothing
for the steady state. All times are on one monotonic clock.

The rules, as upstream's:
- initial results: readiness Failure, liveness Success, startup Unknown;
- no probing before initialDelaySeconds from the container's start;
- until the container has started (startup Success, or no startup probe) only the startup
  probe runs; once it succeeded, the startup probe stops;
- a result flips only after failureThreshold / successThreshold equal results in a row;
- after a liveness or startup Failure the worker holds until a new container id appears,
  which resets it to the initial state;
- an attempt that errors (Unknown) is tried again at once, up to MAX_ATTEMPTS attempts in
  all (upstream's maxProbeRetries), and then counts as a Failure;
- a container that does not run is not probed: readiness turns Failure, liveness and
  startup do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.ids import ContainerID
from runtime.pod.model import Probe
from runtime.prober.results import ProbeResult

MAX_ATTEMPTS = 3
"""Attempts of one probe round that errors before it counts as a Failure."""

EPSILON = 1e-6
"""Slack when comparing a due time with a tick's time (sums of float periods drift)."""

LIVENESS = "liveness"
READINESS = "readiness"
STARTUP = "startup"

INITIAL_RESULT = {
    LIVENESS: ProbeResult.SUCCESS,
    READINESS: ProbeResult.FAILURE,
    STARTUP: ProbeResult.UNKNOWN,
}


@dataclass(slots=True)
class ProbeWorker:
    """The state of one probe (``kind``: liveness, readiness or startup) of one container.

    ``not_before`` is the monotonic time probing may begin (the container's start plus
    initialDelaySeconds); ``started`` gates liveness and readiness (the owner sets it from
    the startup worker's result, or True when there is no startup probe).
    """

    kind: str
    probe: Probe
    container_id: ContainerID
    not_before: float = 0.0
    running: bool = True
    started: bool = True
    result: ProbeResult = field(init=False)
    on_hold: bool = field(default=False, init=False)
    in_flight: int | None = field(default=None, init=False)
    last_start: float | None = field(default=None, init=False)
    _last_outcome: ProbeResult | None = field(default=None, init=False)
    _run: int = field(default=0, init=False)
    _errors: int = field(default=0, init=False)
    _retry_at: float | None = field(default=None, init=False)
    _seq: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in INITIAL_RESULT:
            raise ValueError(f"unknown probe kind {self.kind!r}")
        self.result = INITIAL_RESULT[self.kind]

    # --- what the owner tells it -----------------------------------------------------

    def observe(
        self, container_id: ContainerID, running: bool, not_before: float
    ) -> ProbeResult | None:
        """The newest instance of the container, as the runtime shows it.

        A new container id resets the worker; returns the result to publish when that or
        the container not running changed it (readiness only: a reset liveness or startup
        result is the initial one and needs no message).
        """
        publish: ProbeResult | None = None
        if container_id != self.container_id:
            self._reset(container_id)
            if self.kind == READINESS:
                publish = self.result
        self.running = running
        self.not_before = not_before
        if not running and self.kind == READINESS and self.result != ProbeResult.FAILURE:
            self.result = ProbeResult.FAILURE
            publish = self.result
        return publish

    def _reset(self, container_id: ContainerID) -> None:
        self.container_id = container_id
        self.result = INITIAL_RESULT[self.kind]
        self.on_hold = False
        self.in_flight = None
        self.last_start = None
        self._last_outcome = None
        self._run = 0
        self._errors = 0
        self._retry_at = None

    # --- scheduling ------------------------------------------------------------------

    @property
    def eligible(self) -> bool:
        """Whether this probe should run at all right now (ignoring time)."""
        if not self.running or self.on_hold:
            return False
        if self.kind == STARTUP:
            return self.result != ProbeResult.SUCCESS
        return self.started

    @property
    def next_due(self) -> float | None:
        """When the next attempt may start; None while it must not (or one is running)."""
        if self.in_flight is not None or not self.eligible:
            return None
        if self._retry_at is not None:
            return max(self._retry_at, self.not_before)
        if self.last_start is None:
            return self.not_before
        return max(self.last_start + max(self.probe.period_seconds, 1), self.not_before)

    def due(self, now: float) -> bool:
        """Whether an attempt should be launched at ``now``."""
        due = self.next_due
        return due is not None and now + EPSILON >= due

    def begin(self, now: float) -> int:
        """Mark an attempt launched at ``now``; returns its number, which ``step`` checks."""
        self._seq += 1
        self.in_flight = self._seq
        if self._retry_at is None:
            self.last_start = now  # retries keep the period anchored to the round's start
        self._retry_at = None
        return self._seq

    # --- results ---------------------------------------------------------------------

    def _threshold(self, outcome: ProbeResult) -> int:
        if outcome == ProbeResult.FAILURE:
            return max(self.probe.failure_threshold, 1)
        # Validation forces successThreshold 1 on liveness and startup probes.
        return max(self.probe.success_threshold, 1) if self.kind == READINESS else 1

    def step(self, now: float, outcome: ProbeResult) -> ProbeResult | None:
        """Feed one attempt's result; returns the new result when it flips, else None."""
        self.in_flight = None
        if not self.running or self.on_hold or not self.eligible:
            return None
        if outcome == ProbeResult.UNKNOWN:
            self._errors += 1
            if self._errors < MAX_ATTEMPTS:
                self._retry_at = now
                return None
            outcome = ProbeResult.FAILURE
        self._errors = 0
        self._retry_at = None
        if outcome == self._last_outcome:
            self._run += 1
        else:
            self._last_outcome = outcome
            self._run = 1
        if self._run < self._threshold(outcome):
            return None
        changed = outcome != self.result
        self.result = outcome
        if outcome == ProbeResult.FAILURE and self.kind in (LIVENESS, STARTUP):
            self.on_hold = True
            self._run = 0
        return outcome if changed else None

    # --- kept across a kubelet restart (runtime.prober.state) -------------------------

    def progress(self) -> tuple[ProbeResult, ProbeResult | None, int, bool]:
        """What a restarted kubelet needs to continue: the result, the outcome of the
        current run and its length (capped at its threshold: longer runs change nothing,
        so the steady state reads the same every time), and whether it holds."""
        last = self._last_outcome
        run = min(self._run, self._threshold(last)) if last is not None else 0
        return self.result, last, run, self.on_hold

    def resume(self, result: ProbeResult, last_outcome: ProbeResult | None, run: int,
               on_hold: bool) -> None:
        """Continue from ``progress()`` of the same container's worker before a restart."""
        self.result = result
        self._last_outcome = last_outcome
        self._run = max(run, 0) if last_outcome is not None else 0
        self.on_hold = on_hold and self.kind in (LIVENESS, STARTUP)

    def abandon(self) -> None:
        """Forget the attempt in flight (its container went away); schedule anew."""
        self.in_flight = None
