"""What the kubelet records of itself: its trace (``--trace-dir``,
``--trace-max-bytes``, ``--trace-max-files``, ``--trace-flush-frequency``;
actors.core.trace writes it) and its logs (klog's ``-v`` and ``--vmodule``, this
project's ``--log-level``, ``--logging-format``; ``verbosity`` maps klog's numbers
onto the log levels)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager

from actors.app.config.pflag_values import DURATION, INT, LEVEL, UPPER_STRING, VMODULE
from actors.app.config.verbosity import LOG_LEVELS
from actors.core.trace.writer import DEFAULT_MAX_FILES as TRACE_MAX_FILES
from actors.core.trace.writer import DEFAULT_WRITE_EVERY as TRACE_FLUSH_FREQUENCY
from runtime.errors import ConfigError
from runtime.events.v1 import go_duration


def add_trace_flags(add: Callable[..., None]) -> None:
    """The trace's flags, on build_parser's ``add``."""
    add("--trace-dir", default="",
        help="record every delivery, runtime call and decision here, for "
             "`kubelet-actors trace replay|show|export`")
    add("--trace-max-bytes", type=INT, default=64 * 1024 * 1024,
        help="the size, in bytes, past which a new trace file is started (64 MiB)")
    add("--trace-max-files", type=INT, default=TRACE_MAX_FILES,
        help="how many trace files are kept, the newest (older ones are deleted); a run "
             "whose first files are gone is replayed from the oldest kept file, for the "
             "actors that started there")
    add("--trace-flush-frequency", type=DURATION, default=TRACE_FLUSH_FREQUENCY,
        help="how often, at least, the trace's buffer is written out (as upstream's "
             "--log-flush-frequency for logs): the most of its trace a kubelet killed "
             "outright loses")


def check_trace(ns: argparse.Namespace,
                check: Callable[[], AbstractContextManager[None]]) -> None:
    """The trace flags' rules, each inside ``check`` (Problems.check: a broken one is kept
    and the checking goes on)."""
    with check():
        if ns.trace_max_bytes < 4096:
            raise ConfigError(f"--trace-max-bytes {ns.trace_max_bytes}: must be at least 4096")
    with check():
        if ns.trace_max_files < 1:
            raise ConfigError(f"--trace-max-files {ns.trace_max_files}: must be at least 1")
    with check():
        if ns.trace_flush_frequency <= 0:
            raise ConfigError(f"--trace-flush-frequency {go_duration(ns.trace_flush_frequency)}"
                              ": must be greater than 0")


def add_logging_flags(add: Callable[..., None]) -> None:
    """The logging flags, on build_parser's ``add``."""
    add("-v", "--v", dest="verbosity", type=LEVEL, default=0,
        help="number for the log level verbosity, as upstream's (klog's): 0 to 3 write "
             "INFO lines and above, 4 adds DEBUG, 5 and more TRACE")
    add("--vmodule", type=VMODULE, default="",
        help="comma-separated list of pattern=N settings for file-filtered logging, as "
             "upstream's (klog's): a source file whose name (without .py; its path when "
             "the pattern has a /) matches a pattern logs at verbosity N instead of --v's")
    add("--log-level", type=UPPER_STRING, choices=LOG_LEVELS, default=None,
        help="this project's own: the least severe log lines written, by name instead of "
             "--v's number, and winning over it (default: the level --v gives)")
    add("--logging-format", "--log-format", dest="log_format", choices=("text", "json"),
        default="text", help="how log lines are written: text, or one JSON object a line")
