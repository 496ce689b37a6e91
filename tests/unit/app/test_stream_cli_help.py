"""exec, attach and port-forward: each help has a description, a full usage (exec's
``-- COMMAND [ARG...]``), its exit codes, and every option with a value shows its default;
``-n`` defaults to ``default`` (kubectl's habit, this round's convention)."""

from __future__ import annotations

import argparse

import pytest

from actors.app.tools.remote import portforward, stream_cli

PARSERS = {
    "exec": lambda: stream_cli.build_parser("exec"),
    "attach": lambda: stream_cli.build_parser("attach"),
    "port-forward": portforward.build_parser,
}


@pytest.mark.parametrize("command", PARSERS)
def test_help_has_a_description_a_usage_and_exit_codes(command: str) -> None:
    parser = PARSERS[command]()
    text = " ".join(parser.format_help().split())
    assert parser.description and len(parser.description) > 40
    assert text.startswith(f"usage: kubelet-actors {command} POD ")
    assert " ".join(parser.description.split()) in text
    assert "exit codes: " in text and "2 a flag is wrong" in text


def test_exec_usage_names_the_command_after_the_dashes() -> None:
    usage = stream_cli.build_parser("exec").format_usage()
    assert usage.rstrip().endswith("-- COMMAND [ARG...]")
    assert "--" not in stream_cli.build_parser("attach").format_usage().split("]")[-1]


def test_port_forward_usage_names_its_port_specs() -> None:
    assert "POD [LOCAL:]REMOTE [[LOCAL:]REMOTE...]" in portforward.build_parser().format_usage()


def _valued_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("command", PARSERS)
def test_every_option_with_a_value_shows_its_default(command: str) -> None:
    parser = PARSERS[command]()
    for action in _valued_options(parser):
        assert action.help and "(default: " in action.help, action.option_strings
        if action.default not in ("", None):
            assert f"(default: {action.default}" in action.help, action.option_strings


@pytest.mark.parametrize("command", PARSERS)
def test_the_namespace_defaults_to_default(command: str) -> None:
    parser = PARSERS[command]()
    argv = ["web", "80"] if command == "port-forward" else ["web"]
    assert parser.parse_args(argv).namespace == "default"
    assert parser.parse_args([*argv, "-n", "kube-system"]).namespace == "kube-system"
