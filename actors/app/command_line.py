"""What every command of the program shares: its exit codes (one meaning each,
everywhere) and how its help shows defaults and names those codes.

docs/user-guide.md ("Exit codes") has the table a person reads; each command's help
names the codes it uses. A remote command (``exec``, ``attach``) that ran exits with the
remote command's own code instead, as kubectl does.
"""

from __future__ import annotations

import argparse
from typing import Final

EXIT_OK: Final = 0
"""Done as asked."""
EXIT_FAILED: Final = 1
"""Not done: the trace could not be read, the daemon refused or could not be reached,
a pod failed (``--runonce``), a drill run failed or diverged. The message says which."""
EXIT_USAGE: Final = 2
"""The command line is wrong (a flag, its value, a missing argument): nothing was done."""
EXIT_RUNTIME: Final = 3
"""The daemon (or ``--runonce``) could not run: the container runtime or the node's
setup failed."""


def epilog(*codes: tuple[int, str]) -> str:
    """A command's help epilog naming its exit codes: ``exit codes: 0 done, 1 ...``."""
    return "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in codes)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, as kubelet's and kubectl's do, unless the
    help names it already or there is none to name (a switch that is off, an empty value)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or default is False
                or default in ("", [], argparse.SUPPRESS)):
            return text
        return super()._get_help_string(action)
