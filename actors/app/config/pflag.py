"""Upstream's flag habits (spf13/pflag, as the kubelet's cobra command parses its flags) on
argparse: one parser class, two Go-typed actions and a help formatter, used by every flag of
``build_parser``, so that no flag needs a habit of its own.

- ``GoBool``: a boolean flag. ``--flag`` sets true; ``--flag=true``, ``--flag=false`` and
  Go's other spellings (strconv.ParseBool: 1, 0, t, f, TRUE, False, ...) set what they say;
  ``--flag false`` is not a value (pflag's bools take one only after ``=``).
- ``Verbosity``: klog's ``-v, --v Level``, a number as component-base reads it
  (strconv.ParseUint(text, 10, 31)).
- ``FlagParser``: pflag's usage (``kubelet-actors [flags]``), no abbreviated flag names, and a
  value a Go-typed action refuses worded as pflag words it:
  ``invalid argument "x" for "-v, --v" flag: strconv.ParseUint: parsing "x": invalid syntax``.
- ``FlagHelp``: each flag's help ends with its default as pflag prints it (``(default 1m0s)``,
  ``(default "/var/lib/kubelet-actors")``), none for a zero value (empty, 0, false) or a default
  that depends on other flags (None: the help says how); the value's type as the metavar
  (``string``, ``int``, ``duration``); and lines are wrapped between words, never inside one
  (a long default such as --eviction-hard's overflows the line whole).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from actors.app.config.durations import parse_duration
from actors.app.config.gostrconv import NumError, go_quote, parse_bool, parse_uint
from runtime.events.v1 import go_duration

VERBOSITY_BITS = 31
"""component-base's verbosity: strconv.ParseUint(text, 10, 31), to fit klog's int32."""

_NO_VALUE = (argparse._HelpAction, argparse._VersionAction)
"""Actions that are not settings: no default to print."""


def pflag_name(action: argparse.Action) -> str:
    """The flag as pflag names it in an error: ``--name``, or ``-s, --name`` with a short one."""
    short = [o for o in action.option_strings if not o.startswith("--")]
    long = [o for o in action.option_strings if o.startswith("--")]
    return ", ".join(short[:1] + long[:1])


class _GoValue(argparse.Action):
    """A flag whose text Go's strconv reads: a refused value is pflag's error."""

    parse: Callable[[str], Any]
    type_name = ""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        text = values if isinstance(values, str) else ""
        try:
            value = type(self).parse(text)
        except NumError as err:
            # argument=None: the message is the whole error, as pflag's is.
            raise argparse.ArgumentError(
                None, f"invalid argument {go_quote(text)} for {go_quote(pflag_name(self))} flag: "
                      f"{err}") from None
        setattr(namespace, self.dest, value)


class GoBool(_GoValue):
    """A boolean flag (pflag's BoolVar); FlagParser turns a bare ``--flag`` into
    ``--flag=true``, so the action always has its value after ``=``."""

    parse = staticmethod(parse_bool)
    type_name = "bool"


class Verbosity(_GoValue):
    """klog's ``-v, --v Level`` (component-base's VerbosityLevel)."""

    parse = staticmethod(lambda text: parse_uint(text, VERBOSITY_BITS))
    type_name = "Level"


class FlagParser(argparse.ArgumentParser):
    """argparse with pflag's habits (see the module's docstring)."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("usage", "%(prog)s [flags]")
        options.setdefault("formatter_class", FlagHelp)
        super().__init__(allow_abbrev=False, **options)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        spelled = self.spelled_out(sys.argv[1:] if args is None else args)
        return super().parse_known_args(spelled, namespace)

    def spelled_out(self, args: Sequence[str]) -> list[str]:
        """``args`` with each bare boolean flag written ``--flag=true`` (before ``--``):
        the one place the three spellings of a boolean become one."""
        bare = {option for action in self._actions if isinstance(action, GoBool)
                for option in action.option_strings}
        out: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                return out + list(args[i:])
            out.append(f"{arg}=true" if arg in bare else arg)
        return out


class FlagHelp(argparse.HelpFormatter):
    """pflag's help habits (see the module's docstring)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False,
                             break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line for line in self._split_lines(text, width - len(indent)))

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if (shown := default_shown(action)) is not None:
            help_text += f" (default {shown.replace('%', '%%')})"
        return help_text

    def _format_action_invocation(self, action: argparse.Action) -> str:
        """pflag's ``-v, --v Level``: the names, then the value's type once (none for a
        boolean)."""
        names = ", ".join(action.option_strings)
        if isinstance(action, GoBool) or action.nargs == 0 or not action.option_strings:
            return names or super()._format_action_invocation(action)
        metavar = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{names} {metavar}"

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        return type_name(action)


def type_name(action: argparse.Action) -> str:
    """The value's type as pflag names it in help (``string``, ``int``, ``duration``)."""
    if isinstance(action, _GoValue):
        return action.type_name
    if action.type is parse_duration:
        return "duration"
    if action.type is int:
        return "int"
    return "string"


def default_shown(action: argparse.Action) -> str | None:
    """The default as pflag's help prints it after "default", or None where pflag prints
    none: a zero value (``""``, 0, ``0s``, false), no default (None: it depends on other
    flags, which the help says), or an action that is not a flag with a value (--help)."""
    default = action.default
    if (default is None or default is argparse.SUPPRESS or isinstance(action, _NO_VALUE)
            or default in ("", 0, False)):
        return None
    if isinstance(default, bool):
        return str(default).lower()
    if action.type is parse_duration:
        return go_duration(default)
    if isinstance(default, str):
        return go_quote(default)
    return str(default)

