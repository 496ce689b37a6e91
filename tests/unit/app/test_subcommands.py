"""bin.main's table of subcommands, walked: every command's --help exits 0 with a usage
line and a description; the program's --help (and ``help``) lists every command with its
line; ``help COMMAND`` is ``COMMAND --help``; --version names the version and commit."""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
from types import ModuleType

import pytest


def _entry_point() -> ModuleType:
    """bin.main, imported with the collector left as it was (importing it turns the
    collector off for a start; the tests' process must keep collecting)."""
    was_on = gc.isenabled()
    module = importlib.import_module("bin.main")
    if was_on:
        gc.enable()
    return module


ENTRY = _entry_point()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    was_on = gc.isenabled()
    try:
        with pytest.raises(SystemExit) as exit:
            ENTRY.main(argv)
    finally:
        if was_on:
            gc.enable()
    out, err = capsys.readouterr()
    return exit.value.code, out, err


def names() -> list[str]:
    return [c.name for c in ENTRY.SUBCOMMANDS]


def test_the_table_holds_every_command_the_issue_names() -> None:
    assert names() == ["get", "logs", "exec", "attach", "port-forward", "explain", "trace",
                       "drill"]


@pytest.mark.parametrize("name", names())
def test_each_commands_help_has_a_usage_and_a_description(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([name, "--help"], capsys)
    assert (code, err) == (0, "")
    usage, _, rest = out.partition("\n\n")
    assert usage.startswith(f"usage: kubelet-actors {name} ")
    if name == "exec":  # the command to run comes after --, as kubectl's usage says
        assert "-- COMMAND" in usage, usage
    description = rest.partition("\n\n")[0]
    # A description: a sentence before the options, not the argument list.
    assert description and not description.startswith(("positional arguments", "options")), (
        out)
    assert run(["help", name], capsys)[:2] == (0, out)


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["help"], ["--node-name", "x", "-h"]])
def test_the_programs_help_lists_every_command_then_the_daemons_flags(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from actors.app.config.flags import build_parser

    code, out, err = run(argv, capsys)
    assert (code, err) == (0, "")
    assert out.startswith("usage: kubelet-actors [FLAGS]\n")
    commands = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in commands] == ["(none)", *names()]
    assert commands[0].endswith(ENTRY.DAEMON_SUMMARY)
    for line, command in zip(commands[1:], ENTRY.SUBCOMMANDS, strict=True):
        assert line.endswith(command.summary)
    assert out.endswith(build_parser().format_help())


def test_help_for_an_unknown_command_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["help", "nosuch"], capsys)
    assert (code, out) == (2, "")
    assert "unknown command 'nosuch'" in err and "get, logs" in err


def test_version_names_the_version_and_this_checkouts_commit(
        capsys: pytest.CaptureFixture[str]) -> None:
    from actors.core.trace.provenance import current

    code, out, _err = run(["--version"], capsys)
    assert code == 0
    commit = current().get("commit")
    expected = f"kubelet-actors {importlib.metadata.version('kubelet-actors')}"
    assert out == expected + (f" (commit {commit})" if commit else "") + "\n"
