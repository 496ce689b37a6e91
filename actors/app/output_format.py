"""``-o``: the output format of every command that prints something, as kubectl spells it.

One flag, one meaning: ``-o/--output`` names a format (``table``, ``wide``, ``json``,
``yaml``), never a file; a command that writes a file takes ``--output-file`` or a
positional argument. Each command says which formats it offers; the renderers of the
machine-readable ones live here so that ``get``, ``explain`` and ``--runonce`` print the
same JSON and YAML for the same value.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, Final

import yaml_rs

TABLE: Final = "table"
WIDE: Final = "wide"
JSON: Final = "json"
YAML: Final = "yaml"
MACHINE_FORMATS: Final = (JSON, YAML)
"""Formats that print the value itself rather than a view of it for a person."""


def add_output_flag(
    parser: argparse.ArgumentParser, choices: Sequence[str], default: str = TABLE
) -> None:
    """Add ``-o/--output FORMAT`` with this command's formats and its default."""
    parser.add_argument(
        "-o", "--output", choices=list(choices), default=default, metavar="FORMAT",
        help=f"output format: one of {', '.join(choices)} (default {default})")


def render(value: Any, output: str) -> str:
    """``value`` (JSON-shaped: dicts, lists, str, numbers, bools, None) as JSON or YAML.

    JSON is indented as ``kubectl -o json`` prints it; YAML is one document without the
    leading ``---``, as ``kubectl -o yaml`` prints it. Ends with a newline.
    """
    if output == JSON:
        return json.dumps(value, indent=4) + "\n"
    if output == YAML:
        text = yaml_rs.dumps(value)
        text = text.removeprefix("---\n")
        return text if text.endswith("\n") else text + "\n"
    raise ValueError(f"not a machine-readable output format: {output!r} "
                     f"(one of {', '.join(MACHINE_FORMATS)})")
