"""``kubelet-actors trace ...``: look at a recorded trace.

  kubelet-actors trace show DIR|FILE [--pod P] [--actor A] [--type T[,T...]]...
                                     [--since S] [--until S] [--limit N]
  kubelet-actors trace export DIR|FILE [OUT.json | --output-file OUT.json] [-o perfetto]
  kubelet-actors trace html DIR|FILE (OUT.html | --output-file OUT.html)
  kubelet-actors trace replay DIR|FILE [--until-delivery N] [--actor NAME]

``--since``/``--until`` are seconds from the trace's start (``show``); replay's prefix is
a delivery id, hence ``--until-delivery``. ``-o`` is a format, as everywhere: a file is
a positional argument or ``--output-file``.

Exit codes (actors.app.command_line): 0 done, 1 the trace cannot be read or the file
cannot be written (the message names it), 2 usage; replay: 1 also when it diverged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from actors.app.command_line import EXIT_FAILED, EXIT_OK, EXIT_USAGE, HelpFormatter, epilog
from actors.core.trace.reader import Trace, TraceError, read_trace

EXIT_TRACE = EXIT_FAILED
PROG = "kubelet-actors trace"
PERFETTO = "perfetto"
EXIT_CODES = epilog((EXIT_OK, "done"),
                    (EXIT_TRACE, "the trace cannot be read or the output file cannot be "
                                 "written (the message names it)"),
                    (EXIT_USAGE, "a flag or argument is wrong"))


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises on usage errors instead of exiting."""

    def error(self, message: str) -> Any:
        raise _UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: {message}")


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _types(text: str) -> list[str]:
    """``--type UpdatePod,Tick``: the names, commas allowed (the flag is also repeatable)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"no message type in {text!r}")
    return names


def _parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Look at a trace recorded with --trace-dir: "
                     "print it, export it for Perfetto, write it as a page, replay it.",
                     epilog=EXIT_CODES, formatter_class=HelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def command(name: str, summary: str, description: str) -> _Parser:
        sub: _Parser = commands.add_parser(name, help=summary, description=description,
                                           epilog=EXIT_CODES, formatter_class=HelpFormatter)
        sub.add_argument("path", metavar="DIR|FILE",
                         help="a trace directory or one trace file")
        return sub

    show = command("show", "print the trace as a timeline",
                   "Print the trace as a timeline in the terminal, filtered by pod, actor, "
                   "message type and time (seconds from the trace's start).")
    show.add_argument("--pod", help="only what concerns this pod (name, ns/name or UID prefix)")
    show.add_argument("--actor", help="only this actor (exact name or prefix, e.g. pod/)")
    show.add_argument("--type", dest="types", type=_types, action="append", default=[],
                      metavar="T[,T...]",
                      help="only these message types: repeat the flag or separate them by "
                           "commas (--type UpdatePod,Tick)")
    show.add_argument("--since", type=_non_negative, metavar="S",
                      help="from S seconds after the trace starts")
    show.add_argument("--until", type=_non_negative, metavar="S",
                      help="up to S seconds after the trace starts")
    show.add_argument("--limit", type=_positive_int, metavar="N",
                      help="print at most N entries")

    export = command("export", "convert the trace for another tool",
                     "Convert the trace for another tool: perfetto is Chrome trace-event "
                     "JSON for ui.perfetto.dev. Written to OUT.json, or to standard output "
                     "without one.")
    export.add_argument("out", metavar="OUT.json", nargs="?",
                        help="the file to write (default: standard output)")
    export.add_argument("--output-file", metavar="OUT.json", help="the same as OUT.json")
    export.add_argument("-o", "--output", "--format", dest="format", default=PERFETTO,
                        metavar="FORMAT",
                        help=f"the output format: {PERFETTO} (the only one; default "
                             f"{PERFETTO})")

    html = command("html", "write the trace as a timeline page (one HTML file)",
                   "Write the trace as one self-contained timeline page (it opens offline).")
    html.add_argument("out", metavar="OUT.html", nargs="?", help="the page to write")
    html.add_argument("--output-file", metavar="OUT.html", help="the same as OUT.html")

    # replay parses its own arguments (actors.core.trace.replay.main)
    replay = commands.add_parser("replay", help="replay a trace against this code",
                                 add_help=False)
    replay.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def _output_file(args: argparse.Namespace, required: bool) -> str | None:
    """The file the command writes: OUT or --output-file (not both); None for standard
    output. _UsageError when neither is given and one is ``required``, or both are."""
    if args.out and args.output_file and args.out != args.output_file:
        raise _UsageError(f"{PROG} {args.command}: the file is named twice: {args.out} and "
                          f"--output-file {args.output_file}")
    out: str | None = args.out or args.output_file
    if out is None and required:
        raise _UsageError(f"{PROG} {args.command}: name the file to write: "
                          f"{PROG} {args.command} DIR|FILE OUT.html (or --output-file)")
    return out


def main(argv: Sequence[str]) -> int:
    parser = _parser()
    argv = list(argv)
    if argv[:1] == ["replay"]:
        return _replay(argv[1:])
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse fills the positionals of one run of them only: OUT after an option
        # (`export DIR -o perfetto OUT.json`) comes back as extra.
        if (extra and len(extra) == 1 and not extra[0].startswith("-")
                and args.command in ("export", "html") and args.out is None):
            args.out, extra = extra[0], []
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except _UsageError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
    if args.command == "show":
        args.types = [name for names in args.types for name in names]
        return _show(args)
    try:
        if args.command in ("export", "html"):
            args.output = _output_file(args, required=args.command == "html")
    except _UsageError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    if args.command == "export":
        return _export(args)
    if args.command == "html":
        return _html(args)
    return _replay(list(args.args))


def _read(path: str) -> Trace | None:
    # The kubelet's plug-ins, imported for what they register: its message names (old
    # traces' too), then its messages' summaries, back-offs and pods.
    import actors.app.tools.kubelet_labels
    import actors.app.tools.kubelet_plugin
    import actors.kubelet.trace  # noqa: F401

    try:
        trace = read_trace(path)
    except TraceError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return None
    except OSError as err:
        print(f"{PROG}: {path}: cannot read: {err}", file=sys.stderr)
        return None
    if not trace.records:
        print(f"{PROG}: {path}: the trace holds no records", file=sys.stderr)
        return None
    return trace


def _show(args: argparse.Namespace) -> int:
    from actors.app.tools.timeline import show

    if args.since is not None and args.until is not None and args.until < args.since:
        print(f"{PROG} show: --until {args.until:g} is before --since {args.since:g}",
              file=sys.stderr)
        return EXIT_USAGE
    trace = _read(args.path)
    if trace is None:
        return EXIT_TRACE
    try:
        show(trace, pod=args.pod, actor=args.actor, types=args.types, since=args.since,
             until=args.until, limit=args.limit)
    except BrokenPipeError:  # `trace show ... | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    if args.format != PERFETTO:
        print(f"{PROG} export: unknown output format {args.format!r} (known: {PERFETTO})",
              file=sys.stderr)
        return EXIT_USAGE
    from actors.app.tools.perfetto import export_perfetto

    trace = _read(args.path)
    if trace is None:
        return EXIT_TRACE
    for torn in trace.torn:
        print(f"{PROG}: warning: {torn}", file=sys.stderr)
    data = json.dumps(export_perfetto(trace), separators=(",", ":"))
    if args.output is None:
        sys.stdout.write(data + "\n")
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(data)
    except OSError as err:
        print(f"{PROG} export: cannot write {args.output}: {err}", file=sys.stderr)
        return EXIT_TRACE
    print(f"wrote {args.output}: open it in ui.perfetto.dev", file=sys.stderr)
    return EXIT_OK


def _html(args: argparse.Namespace) -> int:
    from actors.app.tools.page_html import trace_page

    trace = _read(args.path)
    if trace is None:
        return EXIT_TRACE
    for torn in trace.torn:
        print(f"{PROG}: warning: {torn}", file=sys.stderr)
    page = trace_page(trace, title=args.path)
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as err:
        print(f"{PROG} html: cannot write {args.output}: {err}", file=sys.stderr)
        return EXIT_TRACE
    print(f"wrote {args.output}: open it in a browser (it needs no network)", file=sys.stderr)
    return EXIT_OK


def _replay(args: list[str]) -> int:
    """``trace replay ARGS``: the framework's replay engine with the kubelet's world."""
    from actors.core.trace.replay import main as replay_main
    from actors.kubelet.trace import KubeletWorld

    try:
        return replay_main(args, KubeletWorld(), prog=f"{PROG} replay")
    except SystemExit as exit:  # --help, or a usage error argparse printed
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
