"""A leftover argument is reported with the usage of the sub-action that was used, not its parent's."""

from __future__ import annotations

import argparse

import pytest

from wrapagent.commands.cliparse import chosen_subparser, parse


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="wrapagent")
    subs = top.add_subparsers(dest="command")
    config = subs.add_parser("config", prog="wrapagent config")
    actions = config.add_subparsers(dest="action")
    init = actions.add_parser("init", prog="wrapagent config init")
    init.add_argument("--force", action="store_true")
    actions.add_parser("check", prog="wrapagent config check")
    subs.add_parser("doctor", prog="wrapagent doctor")
    return top


def test_a_known_command_line_parses() -> None:
    ns = parse(_parser(), ["config", "init", "--force"])
    assert (ns.command, ns.action, ns.force) == ("config", "init", True)


def test_the_innermost_sub_action_is_found() -> None:
    parser = _parser()
    assert chosen_subparser(parser, parser.parse_args(["config", "init"])).prog == "wrapagent config init"
    assert chosen_subparser(parser, parser.parse_args(["doctor"])).prog == "wrapagent doctor"
    assert chosen_subparser(parser, parser.parse_args([])) is None


def test_a_leftover_is_reported_by_the_sub_action_used(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(_parser(), ["config", "init", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("usage: wrapagent config init") and "unrecognized arguments: --bogus" in err
