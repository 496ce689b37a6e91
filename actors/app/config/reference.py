"""docs/configuration.md, the flags and KubeletConfiguration reference, written from the
parser itself so it cannot drift from the code: every flag with its default, its help and
its KubeletConfiguration field, then the fields that only the file sets.

``python -m actors.app.config.reference > docs/configuration.md`` writes it;
tests/unit/app/test_configuration_reference.py fails while the committed file differs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from actors.app.config.flags import KubeletFlags, build_parser
from actors.app.config.kubelet_config import API_VERSION, DURATION_FIELDS, FIELD_OF_DEST, KIND
from actors.app.config.pflag_values import DURATION
from runtime.events.v1 import go_duration

COMMAND = "python -m actors.app.config.reference > docs/configuration.md"
"""How the reference is written again."""

_HEAD = f"""# Flags and KubeletConfiguration reference

<!-- Generated from the flag parser (actors/app/config/); do not edit by hand:
     {COMMAND} -->

`kubelet-actors` takes upstream's kubelet flags (those it acts on) and a
KubeletConfiguration file: `--config`, with `apiVersion: {API_VERSION}`
and `kind: {KIND}`. A flag given on the command line wins over the
file's field; a field of the file that kubelet-actors does not act on is named in a warning
at start and ignored. Every value is checked before anything starts, as upstream checks
it; an error names the flag, or the file and field, that set the value. Flags are
written as upstream's (spf13/pflag): `--flag value` or `--flag=value`; a boolean flag
alone is true, and takes a value only after `=` (`--seccomp-default=false`), in Go's
spellings (`true`, `false`, `1`, `0`, `t`, `f`, `TRUE`, `False`, ...). Durations are Go's
(`90s`, `1m30s`, `500ms`: each number with its unit; `0` alone needs none). Each flag's value
has upstream's pflag type (`--help` shows it: `int32`, `duration`, `ip`, `strings`,
`mapStringString`, ...), and a value it refuses stops the start, before anything runs, with
exit code 2 and upstream's words, e.g. `Error: failed to parse kubelet flag: invalid
argument "abc" for "--max-pods" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
`--v` takes klog's numbers: 0 to 3 log INFO lines and above, 4 adds DEBUG, 5 and more TRACE.
"""


def _cell(text: str) -> str:
    """``text`` inside a Markdown table cell: no line breaks, no cell or HTML delimiters."""
    return (" ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _code(text: str) -> str:
    return "`" + text.replace("|", "\\|") + "`"


def _value(value: Any, duration: bool) -> str:
    """A default as the user writes it."""
    if isinstance(value, bool):
        return _code(str(value).lower())
    if duration and isinstance(value, int | float):
        return _code(go_duration(value))
    if value == "":
        return '`""`'
    return _code(str(value))


def _flag_default(action: argparse.Action) -> str:
    if action.default is None:
        return "see description"  # it depends on another flag: the help says how
    return _value(action.default, duration=action.type is DURATION)


def _file_only_defaults() -> dict[str, Any]:
    """KubeletFlags' defaults, by field name: the file-only fields' defaults."""
    names = KubeletFlags.__struct_fields__
    defaults = KubeletFlags.__struct_defaults__
    return dict(zip(names[len(names) - len(defaults):], defaults, strict=True))


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole reference, as Markdown."""
    parser = parser or build_parser()
    lines = [_HEAD, "## Flags", "",
             "| Flag | Default | KubeletConfiguration field | Description |",
             "|---|---|---|---|"]
    dests: set[str] = set()
    for action in parser._actions:  # argparse has no public list of its flags
        if isinstance(action, argparse._HelpAction):
            continue
        dests.add(action.dest)
        names = ", ".join(_code(o) for o in action.option_strings)
        field = FIELD_OF_DEST.get(action.dest)
        help_text = (action.help or "").replace("%%", "%")
        if action.choices is not None:
            help_text += f" (one of {', '.join(map(str, action.choices))})"
        lines.append(f"| {names} | {_flag_default(action)} | "
                     f"{_code(field) if field else ''} | {_cell(help_text)} |")
    defaults = _file_only_defaults()
    lines += ["", "## Fields the file alone sets", "",
              "These KubeletConfiguration fields have no flag here (upstream has none, or "
              "kubelet-actors takes only the field).", "",
              "| KubeletConfiguration field | Default |", "|---|---|"]
    for dest, field in sorted(FIELD_OF_DEST.items(), key=lambda item: item[1]):
        if dest not in dests:
            lines.append(f"| {_code(field)} | "
                         f"{_value(defaults[dest], field in DURATION_FIELDS)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
