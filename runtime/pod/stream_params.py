"""The query words of the kubelet's exec, attach and port-forward endpoints.

Upstream's constants (k8s.io/api/core/v1: ExecStdinParam "input", ExecStdoutParam "output",
ExecStderrParam "error", ExecTTYParam "tty", ExecCommandParam "command", PortHeader "port"):
the API server's pod strategy writes them (streamParams: each asked-for stream as ``=1``,
``command`` once per argument, the ports joined by commas) and the kubelet reads them
(remotecommand.NewOptions, portforward.NewV4Options). They are not the words a client
sends the API server (PodExecOptions' ``stdin``, ``stdout``, ``stderr``, ``tty``,
``command``, ``container``; PodPortForwardOptions' ``ports``).

They live here, below both the kubelet's HTTP API (actors.app.http.stream_request) and
the command-line client (actors.app.tools.remote.stream_cli), so that neither imports the
other for them.
"""

from __future__ import annotations

STDIN = "input"
STDOUT = "output"
STDERR = "error"
TTY = "tty"
COMMAND = "command"
PORT = "port"

ON = "1"
"""A stream is asked for with exactly this value (the strategy writes it, the kubelet
accepts nothing else)."""
