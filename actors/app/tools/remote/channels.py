"""The websocket channel protocols of exec, attach and port-forward, as pure functions.

Each websocket message carries one stream's bytes behind a one-byte channel number
(apimachinery wsstream; ``base64.`` protocols send text: the channel as an ASCII digit, then
base64). For exec and attach the channels are stdin 0, stdout 1, stderr 2, error 3 (a v1
``Status`` once the process ends: Success, or NonZeroExitCode with an ExitCode cause) and
resize 4 (``{"Width":..,"Height":..}``); ``v5.channel.k8s.io`` adds 255, whose message
``[255, n]`` closes channel n (stdin's end of file; v4 cannot say it). Port-forward uses a
data channel and an error channel per port, each first carrying the port (2 bytes, little
endian). client-go's decoding of the error channel (errorDecoderV4) is ported by
``exit_status``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
REMOTE_COMMAND_PROTOCOLS = (V5, V4, V4_BASE64)
"""What the remote commands offer, best first (containerd 1.6 speaks v4)."""
PORT_FORWARD_PROTOCOLS = (V4,)

NON_ZERO_EXIT_CODE = "NonZeroExitCode"
EXIT_CODE_CAUSE = "ExitCode"


class ProtocolError(ValueError):
    """A message that breaks the channel protocol."""


def is_base64(protocol: str | None) -> bool:
    return bool(protocol) and "base64." in (protocol or "")


def encode(channel: int, data: bytes, protocol: str | None = V4) -> bytes | str:
    """One message for ``channel``: binary, or text for a base64 protocol."""
    if is_base64(protocol):
        return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
    return bytes((channel,)) + data


def decode(message: bytes | str) -> tuple[int, bytes]:
    """The channel and bytes of a message (text messages are the base64 protocols')."""
    if isinstance(message, str):
        if not message:
            raise ProtocolError("empty message")
        channel = ord(message[0]) - ord("0")
        try:
            return channel, base64.b64decode(message[1:], validate=True)
        except ValueError as err:
            raise ProtocolError(f"channel {channel}: bad base64: {err}") from err
    if not message:
        raise ProtocolError("empty message")
    return message[0], bytes(message[1:])


def resize(width: int, height: int, protocol: str | None = V4) -> bytes | str:
    """The resize channel's message for a terminal of ``width`` x ``height``."""
    body = json.dumps({"Width": width, "Height": height}, separators=(",", ":")).encode()
    return encode(RESIZE, body, protocol)


def close_stdin(protocol: str | None) -> bytes | None:
    """v5's end of stdin; None where the protocol cannot say it."""
    return bytes((CLOSE, STDIN)) if protocol == V5 else None


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How the remote process ended: its exit code, and the error to show (if any)."""

    code: int
    message: str = ""


def exit_status(body: bytes) -> ExitStatus:
    """The error channel's Status, as client-go reads it: Success is 0; NonZeroExitCode
    carries the code ("command terminated with exit code N"); any other failure is 1 with
    the Status's message."""
    try:
        status = json.loads(body)
    except ValueError:
        return ExitStatus(1, f"error stream protocol error: {body.decode(errors='replace')}")
    if not isinstance(status, dict):
        return ExitStatus(1, "error stream protocol error: unknown error")
    if status.get("status") == "Success":
        return ExitStatus(0)
    if status.get("status") != "Failure":
        return ExitStatus(1, "error stream protocol error: unknown error")
    if status.get("reason") != NON_ZERO_EXIT_CODE:
        return ExitStatus(1, str(status.get("message", "")))
    details = status.get("details")
    if not isinstance(details, dict):
        return ExitStatus(1, "error stream protocol error: details must be set")
    for cause in details.get("causes") or ():
        if not isinstance(cause, dict) or cause.get("reason") != EXIT_CODE_CAUSE:
            continue
        value = str(cause.get("message", ""))
        if not value.isascii() or not value.isdigit() or int(value) > 255:
            return ExitStatus(
                1, f'error stream protocol error: invalid exit code value "{value}"')
        code = int(value)
        return ExitStatus(code, f"command terminated with exit code {code}")
    return ExitStatus(1, f"error stream protocol error: no {EXIT_CODE_CAUSE} cause given")


def port_prefix(port: int) -> bytes:
    """The port header each port-forward channel starts with."""
    return port.to_bytes(2, "little")
