"""``kubelet-actors trace ...``: look at a recorded trace.

  kubelet-actors trace show DIR|FILE [--pod P] [--actor A] [--type T ...]
                                     [--since S] [--until S] [--limit N]
  kubelet-actors trace export DIR|FILE --format perfetto [-o OUT.json]
  kubelet-actors trace html DIR|FILE -o OUT.html
  kubelet-actors trace replay DIR|FILE [--until N] [--actor NAME]

Exit codes: 0 done, 1 the trace cannot be read (the message names the file), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from actors.core.trace.reader import Trace, TraceError, read_trace

EXIT_OK = 0
EXIT_TRACE = 1
EXIT_USAGE = 2
PROG = "kubelet-actors trace"


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


def _parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Look at a trace recorded with --trace-dir.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    show = commands.add_parser("show", help="print the trace as a timeline")
    show.add_argument("path", metavar="DIR|FILE", help="a trace directory or one trace file")
    show.add_argument("--pod", help="only what concerns this pod (name, ns/name or UID prefix)")
    show.add_argument("--actor", help="only this actor (exact name or prefix, e.g. pod/)")
    show.add_argument("--type", dest="types", nargs="+", action="extend", default=[],
                      metavar="T", help="only these message types (e.g. UpdatePod Tick)")
    show.add_argument("--since", type=_non_negative, metavar="S",
                      help="from S seconds after the trace starts")
    show.add_argument("--until", type=_non_negative, metavar="S",
                      help="up to S seconds after the trace starts")
    show.add_argument("--limit", type=_positive_int, metavar="N",
                      help="print at most N entries")

    export = commands.add_parser("export", help="convert the trace for another tool")
    export.add_argument("path", metavar="DIR|FILE", help="a trace directory or one trace file")
    export.add_argument("--format", required=True,
                        help="perfetto: Chrome trace-event JSON for ui.perfetto.dev")
    export.add_argument("-o", "--output", metavar="OUT.json",
                        help="write here instead of standard output")

    html = commands.add_parser("html", help="write the trace as a timeline page (one HTML file)")
    html.add_argument("path", metavar="DIR|FILE", help="a trace directory or one trace file")
    html.add_argument("-o", "--output", metavar="OUT.html", required=True,
                      help="the page to write")

    # replay parses its own arguments (actors.core.trace.replay.main)
    replay = commands.add_parser("replay", help="replay a trace against this code",
                                 add_help=False)
    replay.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str]) -> int:
    parser = _parser()
    argv = list(argv)
    if argv[:1] == ["replay"]:
        return _replay(argv[1:])
    try:
        args = parser.parse_args(argv)
    except _UsageError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
    if args.command == "show":
        return _show(args)
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
    if args.format != "perfetto":
        print(f"{PROG} export: unknown --format {args.format!r} (known: perfetto)",
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

    return replay_main(args, KubeletWorld(), prog=f"{PROG} replay")
