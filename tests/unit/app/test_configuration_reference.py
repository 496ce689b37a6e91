"""docs/configuration.md is the reference the parser writes: regenerated here, it must be
the committed file, and it must name every flag, default and KubeletConfiguration field."""

from __future__ import annotations

from pathlib import Path

from actors.app.config.flags import build_parser
from actors.app.config.kubelet_config import FIELD_OF_DEST
from actors.app.config.reference import COMMAND, reference

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_committed_reference_is_the_one_the_parser_writes() -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert committed == reference(), (
        f"docs/configuration.md is not what the flag parser writes: run `{COMMAND}` "
        "(with the venv's python) and commit it")


def test_every_flag_and_field_is_in_the_reference() -> None:
    text = reference()
    parser = build_parser()
    for action in parser._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                assert f"`{option}`" in text
    for field in FIELD_OF_DEST.values():
        assert f"`{field}`" in text


def test_a_flag_row_says_its_default_field_and_help() -> None:
    rows = {line.split(" | ")[0].removeprefix("| "): line
            for line in reference().splitlines() if line.startswith("| `")}
    assert rows["`--sync-frequency`"] == (
        "| `--sync-frequency` | `1m0s` | `syncFrequency` | how often every pod is synced "
        "again |")
    assert rows["`--client-ca-file`"].split(" | ")[2] == "`authentication.x509.clientCAFile`"
    # a field only the file sets, its default from KubeletFlags
    assert rows["`containerLogMonitorInterval`"] == "| `containerLogMonitorInterval` | `10s` |"
    # a default that depends on another flag is left to the help, which says it
    assert rows["`--read-only-port`"].split(" | ")[1] == "see description"
