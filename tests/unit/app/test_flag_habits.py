"""Every flag of the daemon's parser keeps upstream's (pflag's) habits, checked flag by flag
over ``parser._actions``, so that a flag added without them fails here: its value is read by
a pflag type (int32, duration, ip, strings, mapStringString, ...) and a bad one is refused in
pflag's words, as upstream's kubelet prints them; a boolean takes ``--flag``, ``--flag=true``
and ``--flag=false`` (and Go's other spellings); a non-zero default is printed in the help as
pflag prints it, and only there; no help line breaks inside a word, at any width; the main
port is called HTTPS and the plain ones HTTP."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from actors.app.config.flags import build_parser, parse_flags
from actors.app.config.pflag import FlagHelp, FlagParser, GoBool
from actors.app.config.pflag_values import (
    BOOL,
    DURATION,
    INT,
    INT32,
    IP,
    LANGLE_MAP_STRING_STRING,
    LEVEL,
    MAP_STRING_BOOL,
    MAP_STRING_STRING,
    STRING,
    STRINGS,
    UPPER_STRING,
    VMODULE,
    FlagType,
)
from runtime.events.v1 import go_duration

PARSER = build_parser()
FLAGS = [a for a in PARSER._actions if not isinstance(a, argparse._HelpAction)]
BOOLS = [a for a in FLAGS if isinstance(a, GoBool)]
IDS = [a.option_strings[-1] for a in FLAGS]

# Go's strconv.ParseBool, every spelling it takes.
GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")

PORT_PROTOCOLS = {"port": "HTTPS", "read_only_port": "HTTP", "healthz_port": "HTTP"}
"""What each port flag serves: the main port HTTPS (TLS), the others plain HTTP."""


def _long(action: argparse.Action) -> str:
    return next(o for o in action.option_strings if o.startswith("--"))


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
def test_a_flag_that_is_a_boolean_is_a_go_bool(action: argparse.Action) -> None:
    """A store_true (or any flag without a value) cannot take ``=false``."""
    assert action.nargs != 0, f"{_long(action)}: a boolean flag must be a GoBool"
    if isinstance(action.default, bool) or action.type is bool:
        assert isinstance(action, GoBool), f"{_long(action)}: a boolean flag must be a GoBool"


@pytest.mark.parametrize("action", BOOLS, ids=[a.option_strings[-1] for a in BOOLS])
def test_every_boolean_takes_the_bare_flag_and_go_s_true_and_false(
        action: argparse.Action) -> None:
    flag = _long(action)
    assert getattr(PARSER.parse_args([flag]), action.dest) is True
    for text in GO_TRUE:
        assert getattr(PARSER.parse_args([f"{flag}={text}"]), action.dest) is True, text
    for text in GO_FALSE:
        assert getattr(PARSER.parse_args([f"{flag}={text}"]), action.dest) is False, text
    # the last one given wins, as pflag's
    assert getattr(PARSER.parse_args([flag, f"{flag}=false"]), action.dest) is False


@pytest.mark.parametrize("action", BOOLS, ids=[a.option_strings[-1] for a in BOOLS])
def test_a_boolean_given_a_bad_value_is_refused_in_pflag_s_words(
        action: argparse.Action, capsys: pytest.CaptureFixture[str]) -> None:
    flag = _long(action)
    for argv, words in (
            ([f"{flag}=yes"], f'invalid argument "yes" for "{flag}" flag: strconv.ParseBool: '
                              'parsing "yes": invalid syntax'),
            ([f"{flag}="], f'invalid argument "" for "{flag}" flag: strconv.ParseBool: '
                           'parsing "": invalid syntax'),
            # pflag's booleans take a value only after "=": "false" here is an argument,
            # which upstream's kubelet refuses as a command.
            ([flag, "false"], "Error: unknown command false")):
        with pytest.raises(SystemExit) as exited:
            PARSER.parse_args(argv)
        assert exited.value.code == 2
        assert words in capsys.readouterr().err


def _pflag_default(action: argparse.Action) -> str | None:
    """The default as pflag prints it, or None for a zero value (pflag prints none)."""
    value = action.default
    if value is None or value in ("", 0, False):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if action.type is DURATION:
        return go_duration(value)
    return f'"{value}"' if isinstance(value, str) else str(value)


def _rendered(action: argparse.Action, width: int) -> str:
    formatter = FlagHelp(prog="kubelet-actors", width=width)
    formatter.add_argument(action)
    return formatter.format_help()


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
def test_each_non_zero_default_is_in_the_help_once_as_pflag_prints_it(
        action: argparse.Action) -> None:
    shown = _pflag_default(action)
    help_text = " ".join(_rendered(action, 400).split())
    if shown is None:
        assert "(default " not in help_text.replace(action.help or "", ""), help_text
        return
    assert help_text.endswith(f"(default {shown})"), help_text
    # the default is the formatter's to print: a hand-written one drifts from the code
    assert "(default" not in (action.help or ""), (
        f"{_long(action)}: its help names a default; the formatter prints it: {action.help}")


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
@pytest.mark.parametrize("width", [50, 80, 100, 140])
def test_no_help_line_breaks_inside_a_word(action: argparse.Action, width: int) -> None:
    """The rendered block has the same words as the help and its default: a word cut by
    the wrap (as --eviction-hard's default was) is two words there."""
    words = " ".join(_rendered(action, 400).split()).split(" ")
    assert " ".join(_rendered(action, width).split()).split(" ") == words


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
def test_a_port_is_called_by_what_it_serves(action: argparse.Action) -> None:
    if not (action.dest == "port" or action.dest.endswith("_port")):
        assert not re.search(r"\bHTTPS? port\b", action.help or ""), action.help
        return
    assert action.dest in PORT_PROTOCOLS, (
        f"{_long(action)}: a new port flag: say in PORT_PROTOCOLS whether it serves HTTPS")
    words = set(re.findall(r"\bHTTPS?\b", action.help or ""))
    assert words == {PORT_PROTOCOLS[action.dest]}, f"{_long(action)}: {action.help}"


@pytest.mark.parametrize(("argv", "verbosity", "level"), [
    ([], 0, "INFO"), (["--v=0"], 0, "INFO"), (["--v", "2"], 2, "INFO"),
    (["-v", "3"], 3, "INFO"), (["-v4"], 4, "DEBUG"), (["-v=5"], 5, "TRACE"),
    (["--v=10"], 10, "TRACE"), (["--v=2147483647"], 2147483647, "TRACE"),
    # this project's own level names, as the e2e daemon and benches use them; they win
    (["--log-level", "DEBUG"], 0, "DEBUG"), (["--log-level=trace", "--v=2"], 2, "TRACE"),
    (["--v=5", "--log-level", "warning"], 5, "WARNING"),
])
def test_v_is_klog_s_number_mapped_onto_the_log_levels(
        argv: list[str], verbosity: int, level: str) -> None:
    flags = parse_flags(["--pod-manifest-path", "/nonexistent", *argv])
    assert (flags.verbosity, flags.log_level) == (verbosity, level)


@pytest.mark.parametrize(("value", "why"), [
    ("x", 'parsing "x": invalid syntax'), ("-1", 'parsing "-1": invalid syntax'),
    ("+2", 'parsing "+2": invalid syntax'), ("2.5", 'parsing "2.5": invalid syntax'),
    ("", 'parsing "": invalid syntax'),
    ("2147483648", 'parsing "2147483648": value out of range'),
])
def test_a_bad_v_is_refused_in_upstream_s_words(
        value: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        PARSER.parse_args([f"--v={value}"])
    assert exited.value.code == 2
    assert (f'invalid argument "{value}" for "-v, --v" flag: strconv.ParseUint: {why}'
            in capsys.readouterr().err)


def test_flag_names_are_never_abbreviated(capsys: pytest.CaptureFixture[str]) -> None:
    """pflag has no abbreviations: --seccomp is not --seccomp-default."""
    with pytest.raises(SystemExit):
        PARSER.parse_args(["--seccomp"])
    assert "unknown flag: --seccomp\n" in capsys.readouterr().err


def test_help_is_pflag_s_shape() -> None:
    text = PARSER.format_help()
    assert text.startswith("usage: kubelet-actors [flags]\n")
    assert "  -v, --v Level " in text
    assert "  --seccomp-default " in text  # a boolean has no value to show
    assert "  --sync-frequency duration\n" in text
    assert "  --max-pods int32 " in text and "  --address ip " in text
    assert "  --cluster-dns strings\n" in text
    assert "  --node-labels mapStringString\n" in text
    assert '(default "/var/lib/kubelet-actors")' in " ".join(text.split())


REFUSALS: dict[FlagType, tuple[str, str]] = {
    # each pflag type: a value its Set refuses, and the words it refuses it with
    BOOL: ("yes", 'strconv.ParseBool: parsing "yes": invalid syntax'),
    INT: ("abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    INT32: ("2147483648", 'strconv.ParseInt: parsing "2147483648": value out of range'),
    LEVEL: ("-1", 'strconv.ParseUint: parsing "-1": invalid syntax'),
    DURATION: ("5x", 'time: unknown unit "x" in duration "5x"'),
    IP: ("1.2.3", '"1.2.3" is not a valid IP address'),
    STRINGS: ('a,b"c', 'parse error on line 1, column 4: bare " in non-quoted-field'),
    MAP_STRING_STRING: ("a=b,c", "malformed pair, expect string=string"),
    LANGLE_MAP_STRING_STRING: ("memory.available=1Gi", "malformed pair, expect string<string"),
    VMODULE: ("pod_*=4,prober", '"prober" does not have the pattern=N format'),
    MAP_STRING_BOOL: ("Gate=maybe", 'invalid value of Gate: maybe, err: strconv.ParseBool: '
                                    'parsing "maybe": invalid syntax'),
}
ANY_TEXT = (None, STRING, UPPER_STRING)
"""Types that take any text (pflag's string): only a flag's choices refuse a value."""


def _refusal(action: argparse.Action) -> tuple[str, str] | None:
    if action.choices is not None:
        choices = ", ".join(f'"{c}"' for c in action.choices)
        return "bogus", f"supported values: {choices}"
    if action.type in ANY_TEXT:
        return None
    assert isinstance(action.type, FlagType) and action.type in REFUSALS, (
        f"{_long(action)}: a pflag type without a bad value in REFUSALS: {action.type}")
    return REFUSALS[action.type]


def _pflag_name(action: argparse.Action) -> str:
    short = [o for o in action.option_strings if not o.startswith("--")]
    return ", ".join([*short[:1], _long(action)])


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
def test_every_flag_s_value_is_read_by_a_pflag_type(action: argparse.Action) -> None:
    """argparse's own types (int, float, a function) would refuse in argparse's words."""
    assert action.type is None or isinstance(action.type, FlagType), (
        f"{_long(action)}: type={action.type!r}; use a pflag_values type")


@pytest.mark.parametrize("action", FLAGS, ids=IDS)
def test_a_typed_flag_refuses_a_bad_value_in_pflag_s_words(
        action: argparse.Action, capsys: pytest.CaptureFixture[str]) -> None:
    refusal = _refusal(action)
    if refusal is None:
        return
    bad, why = refusal
    with pytest.raises(SystemExit) as exited:
        PARSER.parse_args([f"{_long(action)}={bad}"])
    assert exited.value.code == 2
    first = capsys.readouterr().err.splitlines()[0]
    # Go's %q, as JSON writes these ASCII texts
    assert first == (f"Error: failed to parse kubelet flag: invalid argument {json.dumps(bad)} "
                     f'for "{_pflag_name(action)}" flag: {why}'), first


def test_a_plain_argparse_type_is_refused_when_the_flag_is_added() -> None:
    with pytest.raises(TypeError, match=r"--x: type must be a pflag_values\.FlagType"):
        FlagParser(prog="p").add_argument("--x", type=int)


@pytest.mark.parametrize(("argv", "words"), [
    (["--foo"], "Error: failed to parse kubelet flag: unknown flag: --foo"),
    (["--foo=bar"], "Error: failed to parse kubelet flag: unknown flag: --foo"),
    (["-x"], "Error: failed to parse kubelet flag: unknown shorthand flag: 'x' in -x"),
    (["--max-pods"], "Error: failed to parse kubelet flag: flag needs an argument: --max-pods"),
    (["--sync-frequency"],
     "Error: failed to parse kubelet flag: flag needs an argument: --sync-frequency"),
    (["--max-pods", "3", "pods"], "Error: unknown command pods"),
    (["--", "pods"], "Error: unknown command pods"),
])
def test_unknown_flags_missing_values_and_arguments_as_upstream_s_kubelet_says(
        argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        PARSER.parse_args(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        words, "See 'kubelet-actors --help' for the flags."]


@pytest.mark.parametrize(("flag", "text", "value"), [
    # pflag's int and int32 read as strconv.ParseInt(text, 0, bits) does
    ("--max-pods", "+7", 7), ("--max-pods", "0x1F", 31), ("--max-pods", "0o17", 15),
    ("--max-pods", "017", 15), ("--max-pods", "0b101", 5), ("--max-pods", "1_000", 1000),
    ("--max-pods", "2147483647", 2147483647), ("--node-status-max-images", "-1", -1),
    ("--trace-max-bytes", "2147483648", 2147483648),
    ("--address", "010.0.0.1", "010.0.0.1"), ("--address", "::1", "::1"),
    ("--cluster-dns", '"10.0.0.10",10.0.0.11', ["10.0.0.10", "10.0.0.11"]),
    ("--cluster-dns", "", []),
    ("--sync-frequency", "1m30s", 90.0), ("--sync-frequency", "0", 0.0),
])
def test_typed_values_go_takes(flag: str, text: str, value: object) -> None:
    action = next(a for a in FLAGS if flag in a.option_strings)
    assert getattr(PARSER.parse_args([f"{flag}={text}"]), action.dest) == value


@pytest.mark.parametrize(("flag", "text", "why"), [
    ("--max-pods", "", 'strconv.ParseInt: parsing "": invalid syntax'),
    ("--max-pods", "-", 'strconv.ParseInt: parsing "-": invalid syntax'),
    ("--max-pods", "1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
    ("--max-pods", "08", 'strconv.ParseInt: parsing "08": invalid syntax'),
    ("--max-pods", "1__0", 'strconv.ParseInt: parsing "1__0": invalid syntax'),
    ("--max-pods", "_1", 'strconv.ParseInt: parsing "_1": invalid syntax'),
    ("--max-pods", "-2147483649", 'strconv.ParseInt: parsing "-2147483649": value out of '
                                  'range'),
    ("--trace-max-bytes", "9223372036854775808",
     'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
    ("--sync-frequency", "90", 'time: missing unit in duration "90"'),
    ("--address", "fe80::1%eth0", '"fe80::1%eth0" is not a valid IP address'),
    ("--cluster-dns", '"10.0.0.10', 'parse error on line 1, column 11: extraneous or missing '
                                    '" in quoted-field'),
    ("--cluster-dns", '"10.0.0.10"x', 'parse error on line 1, column 11: extraneous or '
                                      'missing " in quoted-field'),
    ("--feature-gates", "Gate", "malformed pair, expect string=bool"),
    ("--log-level", "loud", 'supported values: "TRACE", "DEBUG", "INFO", "WARNING", "ERROR"'),
])
def test_typed_values_go_refuses(flag: str, text: str, why: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        PARSER.parse_args([f"{flag}={text}"])
    assert (f'invalid argument {json.dumps(text)} for "{flag}" flag: {why}\n'
            in capsys.readouterr().err)


ACCUMULATING = [a for a in FLAGS if isinstance(a.type, FlagType) and a.type.accumulates]


@pytest.mark.parametrize("action", ACCUMULATING, ids=[_long(a) for a in ACCUMULATING])
def test_a_list_or_map_flag_given_twice_keeps_both_as_pflag_does(
        action: argparse.Action) -> None:
    """pflag's StringSlice and component-base's maps add a second Set to the first; the
    first replaces the default."""
    both: object
    if action.type is STRINGS:
        first, second, both = "a", "b,c", ["a", "b", "c"]
    elif action.type is MAP_STRING_BOOL:
        first, second, both = "A=true", "B=false", "A=true,B=false"
    elif action.type is LANGLE_MAP_STRING_STRING:
        first, second, both = "memory.available<1Mi", "nodefs.available<1%", \
            "memory.available<1Mi,nodefs.available<1%"
    else:
        first, second, both = "a=1", "b=2", "a=1,b=2"
    ns = PARSER.parse_args([f"{_long(action)}={first}", f"{_long(action)}={second}"])
    assert getattr(ns, action.dest) == both
    # A new parse starts over: the second value alone, nothing of the parse before.
    alone = PARSER.parse_args([f"{_long(action)}={second}"])
    assert getattr(alone, action.dest) == (["b", "c"] if action.type is STRINGS else second)


def test_node_labels_given_twice_label_the_node_with_both(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path),
                         "--node-labels", "a=1", "--node-labels", "b=2"])
    assert dict(flags.node_labels) == {"a": "1", "b": "2"}
