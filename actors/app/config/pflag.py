"""Upstream's flag habits (spf13/pflag, as the kubelet's cobra command parses its flags) on
argparse: one parser class, a boolean action and a help formatter, used by every flag of
``build_parser``, so that no flag needs a habit of its own.

- Every flag's value is read by its pflag type (``pflag_values.FlagType``: ``int32``,
  ``duration``, ``ip``, ``strings``, ``mapStringString``, ...) in one place,
  ``FlagParser._get_value``; a value refused there (or outside a flag's ``choices``) is
  pflag's error: ``invalid argument "abc" for "--max-pods" flag: strconv.ParseInt: parsing
  "abc": invalid syntax``. ``FlagParser`` takes no other ``type``.
- ``GoBool``: a boolean flag. ``--flag`` sets true; ``--flag=true``, ``--flag=false`` and
  Go's other spellings (strconv.ParseBool: 1, 0, t, f, TRUE, False, ...) set what they say;
  ``--flag false`` is not a value (pflag's bools take one only after ``=``).
- klog's ``-v, --v Level``: a number as component-base reads it (``pflag_values.LEVEL``).
- ``FlagParser``: pflag's usage (``kubelet-actors [flags]``), no abbreviated flag names, and
  its errors as upstream's kubelet prints them (``Error: failed to parse kubelet flag:
  unknown flag: --foo``, ``flag needs an argument: --max-pods``, ``unknown command x`` for
  an argument that is no flag), exit code 2.
- ``FlagHelp``: each flag's help ends with its default as pflag prints it (``(default 1m0s)``,
  ``(default "/var/lib/kubelet-actors")``), none for a zero value (empty, 0, false) or a default
  that depends on other flags (None: the help says how); the value's type as the metavar
  (``string``, ``int32``, ``duration``); and lines are wrapped between words, never inside one
  (a long default such as --eviction-hard's overflows the line whole).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, NoReturn

from actors.app.config.gostrconv import go_quote
from actors.app.config.pflag_values import BOOL, DURATION, STRING, FlagType
from runtime.events.v1 import go_duration

PARSE_FAILURE = "failed to parse kubelet flag"
"""Upstream's kubelet in front of pflag's error (its command's RunE)."""

_NO_VALUE = (argparse._HelpAction, argparse._VersionAction)
"""Actions that are not settings: no default to print."""


def pflag_name(action: argparse.Action) -> str:
    """The flag as pflag names it in an error: ``--name``, or ``-s, --name`` with a short one."""
    short = [o for o in action.option_strings if not o.startswith("--")]
    long = [o for o in action.option_strings if o.startswith("--")]
    return ", ".join(short[:1] + long[:1])


def invalid_argument(action: argparse.Action, text: str, why: str) -> str:
    """pflag's words for a value its flag refused (FlagSet.set's InvalidValueError)."""
    return f"invalid argument {go_quote(text)} for {go_quote(pflag_name(action))} flag: {why}"


class GoBool(argparse._StoreAction):
    """A boolean flag (pflag's BoolVar); FlagParser turns a bare ``--flag`` into
    ``--flag=true``, so the action always has its value after ``=``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("type", BOOL)
        super().__init__(*args, **kwargs)


class Accumulates(argparse.Action):
    """A list or map flag given again adds to what it was given (pflag's StringSlice and
    component-base's maps): ``--node-labels a=1 --node-labels b=2`` is ``a=1,b=2``; the
    first time it is given it replaces the default."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given = getattr(parser, "given", None)
        if given is None or self.dest not in given:
            if given is not None:
                given.add(self.dest)
            setattr(namespace, self.dest, values)
            return
        before = getattr(namespace, self.dest)
        if isinstance(values, list):
            setattr(namespace, self.dest, [*before, *values])
        else:
            setattr(namespace, self.dest, ",".join(v for v in (before, values) if v))


class FlagParser(argparse.ArgumentParser):
    """argparse with pflag's habits (see the module's docstring)."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("usage", "%(prog)s [flags]")
        options.setdefault("formatter_class", FlagHelp)
        super().__init__(allow_abbrev=False, exit_on_error=False, **options)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """A flag whose value pflag's types read: any other ``type`` is a programmer's
        slip, which would give argparse's words instead of pflag's."""
        kind = kwargs.get("type")
        if isinstance(kind, FlagType) and kind.accumulates:
            kwargs.setdefault("action", Accumulates)
        action = super().add_argument(*args, **kwargs)
        if action.type is not None and not isinstance(action.type, FlagType):
            raise TypeError(f"{pflag_name(action)}: type must be a pflag_values.FlagType, "
                            f"not {action.type!r}")
        return action

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            first = extras[0]
            if first.startswith("--") and first != "--":
                self.error(f"{PARSE_FAILURE}: unknown flag: {first.partition('=')[0]}")
            if first.startswith("-") and len(first) > 1 and first != "--":
                self.error(f"{PARSE_FAILURE}: unknown shorthand flag: '{first[1]}' in {first}")
            # upstream: "check if there are non-flag arguments in the command line"
            self.error(f"unknown command {(extras[1:] if first == '--' else extras)[0]}")
        return parsed

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        spelled = self.spelled_out(sys.argv[1:] if args is None else args)
        self.given: set[str] = set()  # the Accumulates flags given so far in this parse
        try:
            return super().parse_known_args(spelled, namespace)
        except argparse.ArgumentError as err:
            self.error(f"{PARSE_FAILURE}: {err}")

    def error(self, message: str) -> NoReturn:
        """The error as upstream's kubelet prints it (component-base's cli.Run), then where
        the flags are listed; exit code 2, argparse's for a command line it refused."""
        self.exit(2, f"Error: {message}\nSee '{self.prog} --help' for the flags.\n")

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

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """The one place a flag's text becomes its value: its pflag type reads it, and a
        refusal (the type's, or the value outside the flag's choices) is pflag's error."""
        read = action.type if isinstance(action.type, FlagType) else STRING
        try:
            value = read(arg_string)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentError(None, invalid_argument(action, arg_string, str(err))
                                         ) from None
        if action.choices is not None and value not in action.choices:
            supported = ", ".join(go_quote(str(c)) for c in action.choices)
            raise argparse.ArgumentError(None, invalid_argument(
                action, arg_string, f"supported values: {supported}"))
        return value

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """Checked in ``_get_value``, against the text as typed."""

    def _match_argument(self, action: argparse.Action, arg_strings_pattern: str) -> int:
        try:
            return super()._match_argument(action, arg_strings_pattern)
        except argparse.ArgumentError:
            if not action.option_strings:
                raise
            long = [o for o in action.option_strings if o.startswith("--")]
            raise argparse.ArgumentError(
                None, f"flag needs an argument: {(long or action.option_strings)[0]}"
            ) from None


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
    """The value's type as pflag names it in help (``string``, ``int32``, ``duration``)."""
    return action.type.name if isinstance(action.type, FlagType) else STRING.name


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
    if action.type is DURATION:
        return go_duration(default)
    if isinstance(default, str):
        return go_quote(default)
    return str(default)

