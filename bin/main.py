"""Console-script entry point: ``kubelet-actors [FLAGS]`` runs the daemon
(actors.app.main); ``kubelet-actors COMMAND ...`` runs one of the tools in ``SUBCOMMANDS``,
the one list of them (``--help`` prints it, the README and docs/user-guide.md name the same).

Each tool's module is imported only when it runs: a daemon's start pays for none of them.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass

gc.disable()  # for the start only: see actors.app.startup

from actors.app.main import main as app_main  # noqa: E402
from actors.app.startup import end_of_start  # noqa: E402

PROG = "kubelet-actors"
HELP_FLAGS = ("-h", "--help")


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A tool of the command line: its name, what it does in one line, and the module whose
    ``main(argv) -> int`` runs it."""

    name: str
    summary: str
    module: str
    with_name: bool = False
    """``main`` is given the arguments with the command's name first (one module serves
    two commands)."""
    ends_start: bool = True
    """``end_of_start`` is called before it runs (the collector back on: a tool that runs
    long); explain, short-lived and allocation-heavy, runs with it off."""


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("get", "list the local daemon's pods, as kubectl get pods does",
               "actors.app.tools.get_cli"),
    Subcommand("logs", "print a container's log from the daemon, as kubectl logs does",
               "actors.app.tools.remote.logs_cli"),
    Subcommand("exec", "run a command in a running container, as kubectl exec does",
               "actors.app.tools.remote.stream_cli", with_name=True),
    Subcommand("attach", "attach to a running container's main process, as kubectl attach",
               "actors.app.tools.remote.stream_cli", with_name=True),
    Subcommand("port-forward", "forward local ports to a pod, as kubectl port-forward does",
               "actors.app.tools.remote.portforward", with_name=True),
    Subcommand("explain", "why a pod is as it is: its story told from a recorded trace",
               "actors.app.tools.explain_cli", ends_start=False),
    Subcommand("trace", "look at a recorded trace: show, export, html, replay",
               "actors.app.tools.trace_cli"),
    Subcommand("drill", "run the restart drills on a real containerd",
               "actors.app.drills.cli"),
)
"""Every subcommand, in the order ``--help`` lists them."""

DAEMON_SUMMARY = "run the node agent (the daemon): the flags below"
BY_NAME = {command.name: command for command in SUBCOMMANDS}


def usage() -> str:
    """The whole program's help: its usage, every subcommand in a line, the daemon's
    flags."""
    from actors.app.config.flags import build_parser

    width = max(len(c.name) for c in SUBCOMMANDS) + 2
    lines = [f"usage: {PROG} [FLAGS]", f"       {PROG} COMMAND [ARGS...]",
             f"       {PROG} COMMAND --help | {PROG} help [COMMAND] | {PROG} --version",
             "", "Commands:", f"  {'(none)':<{width}}{DAEMON_SUMMARY}"]
    lines += [f"  {c.name:<{width}}{c.summary}" for c in SUBCOMMANDS]
    lines += ["", "Daemon flags:", ""]
    return "\n".join(lines) + "\n" + build_parser().format_help()


def version() -> str:
    """``kubelet-actors 0.1.0 (commit <sha>)``: the installed version, and the commit when
    the code runs from a git checkout (an installed wheel has none)."""
    from actors.core.trace.provenance import current

    code = current()
    text = f"{code.get('product', PROG)} {code.get('version', '(version unknown)')}"
    return text + (f" (commit {code['commit']})" if code.get("commit") else "")


def run(command: Subcommand, args: list[str]) -> int:
    """Import the command's module and run it with ``args`` (after its name)."""
    import importlib

    module = importlib.import_module(command.module)
    if command.ends_start:
        end_of_start()
    code: int = module.main([command.name, *args] if command.with_name else args)
    return code


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    first = args[0] if args else ""
    if first in BY_NAME:
        sys.exit(run(BY_NAME[first], args[1:]))
    if first == "help":
        if len(args) > 1 and args[1] in BY_NAME:
            sys.exit(run(BY_NAME[args[1]], ["--help"]))
        if len(args) > 1:
            print(f"{PROG}: unknown command {args[1]!r}; the commands: "
                  f"{', '.join(BY_NAME)}", file=sys.stderr)
            sys.exit(2)
        sys.stdout.write(usage())
        sys.exit(0)
    if first == "--version":
        print(version())
        sys.exit(0)
    if any(arg in HELP_FLAGS for arg in args):
        sys.stdout.write(usage())
        sys.exit(0)
    sys.exit(app_main(args))


if __name__ == "__main__":
    main()
