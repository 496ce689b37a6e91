"""``-o`` renders the same JSON and YAML for every command (actors.app.output_format)."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml_rs

from actors.app import output_format

VALUE = {"kind": "List", "items": [{"name": "a", "ip": None, "ready": True, "n": 3,
                                    "text": "x: y"}]}


@pytest.mark.parametrize("fmt", output_format.MACHINE_FORMATS)
def test_a_machine_format_reads_back_as_the_value(fmt: str) -> None:
    text = output_format.render(VALUE, fmt)
    assert text.endswith("\n")
    back = json.loads(text) if fmt == output_format.JSON else yaml_rs.loads(text)
    assert back == VALUE


def test_yaml_is_one_document_without_the_marker_as_kubectl_prints_it() -> None:
    assert not output_format.render(VALUE, output_format.YAML).startswith("---")


def test_a_person_format_is_not_rendered_here() -> None:
    with pytest.raises(ValueError, match="not a machine-readable output format"):
        output_format.render(VALUE, output_format.WIDE)


def test_the_flag_offers_the_commands_formats_and_shows_its_default() -> None:
    parser = argparse.ArgumentParser()
    output_format.add_output_flag(parser, (output_format.TABLE, output_format.JSON))
    assert parser.parse_args([]).output == "table"
    assert parser.parse_args(["-o", "json"]).output == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["-o", "out.json"])
    assert "(default table)" in parser.format_help()
