"""Shell completion: the candidates engine, its agreement with --help, and the three shells.

Before, there was no completion at all (`wrapagent completion` ran a
program named `completion`). The shell tests load each script in a real
shell; zsh and fish are skipped, with the reason, where they are not
installed (`./run-tests` installs them with apt-get when it runs as root).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wrapagent_argv
from wrapagent.commands import completion
from wrapagent.commands.completion import DIRS, FILES, SPEC, TOP, candidates

IDS = ["01M87WN03KSFHY4A9H5KCDF3JP", "01M87WN07M9X5V14XMVX5J5Z8Q", "01M87ZZZZZZZZZZZZZZZZZZZZZ"]


@pytest.fixture
def recorded(isolated_home: Path) -> list[str]:
    """Session folders as wrapagent writes them (only the names matter to completion)."""
    root = isolated_home / "state" / "wrapagent" / "projects" / "proj-12345678"
    for session_id in IDS:
        (root / session_id).mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".running").mkdir()
    return IDS


def names(words: list[str]) -> list[str]:
    return [name for name, _ in candidates(words)]


def test_top_level_offers_subcommands_and_tools():
    got = names([""])
    assert {"demo", "sessions", "completion", "uninstall", "codex", "claude"} <= set(got)
    assert "_complete" not in got  # the hidden helper stays hidden
    assert names(["ses"]) == ["sessions"]
    assert names(["sen"]) == ["send"]
    assert set(names(["--"])) >= {"--no-hooks", "--strict", "--shim-dir", "--version"}
    assert names(["--shim-dir", ""]) == [DIRS]
    assert names(["--strict", "con"]) == ["config"]


def test_actions_options_and_values():
    assert names(["sessions", ""]) == list(SPEC["sessions"].actions)
    assert names(["config", "i"]) == ["init"]
    assert set(names(["config", "init", "--"])) == {"--help", "--project", "--force"}
    assert names(["sessions", "list", "--tool", "g"]) == ["gemini"]
    assert names(["sessions", "list", "--project", ""]) == [DIRS]
    assert names(["doctor", "--probe", ""]) == list(completion.TOOLS)
    assert names(["init", "f"]) == ["fish"] and names(["completion", "z"]) == ["zsh"]
    assert names(["shims", "install", "codex", ""]) == ["claude", "gemini", "opencode"]
    assert names(["trust", ""]) == [FILES]
    assert names(["sessions", "list", "--limit", ""]) == []  # a number: nothing to offer
    assert names(["sessions", "export", "--format", ""]) == ["cast", "md", "json"]
    assert names(["sessions", "export", "last", "-o", ""]) == [FILES]
    assert names(["sessions", "search", "--tool", "co"]) == ["codex"]
    assert names(["sessions", "search", ""]) == []  # the text: anything


def test_session_ids_newest_first_with_last(recorded):
    assert names(["sessions", "show", ""]) == ["last", *sorted(recorded, reverse=True)]
    assert names(["sessions", "diff", "--stat", "01m87wn0"]) == [IDS[1], IDS[0]]  # case-insensitive
    assert names(["sessions", "show", IDS[0], ""]) == []  # one ID only
    assert names(["sessions", "resume", "last", "--", ""]) == [FILES]
    assert names(["sessions", "replay", ""])[0] == "last" and names(["sessions", "export", "01M87Z"]) == [IDS[2]]


def test_a_tools_own_arguments_are_left_to_the_shell():
    assert names(["codex", ""]) == [FILES]
    assert names(["--", "demo", "--"]) == [FILES]
    assert names(["--", "c"]) == ["codex", "claude"]


def _help_options(*args: str) -> set[str]:
    text = subprocess.run([*wrapagent_argv(), *args, "--help"], capture_output=True, text=True,
                          timeout=60).stdout
    section = text.split("options:", 1)[1] if "options:" in text else text
    return set(re.findall(r"(?:^|[\s,\[])(--?[A-Za-z][-A-Za-z]*)", section))


@pytest.mark.parametrize("path", [
    [name] if not cmd.actions else [name, action]
    for name, cmd in SPEC.items() if name not in ("help", "demo")
    for action in (cmd.actions or [None])
])
def test_spec_options_match_the_parsers(path):
    """A new option in a parser without completion (or the reverse) fails here."""
    cmd = SPEC[path[0]] if len(path) == 1 else SPEC[path[0]].actions[path[1]]
    assert set(cmd.options) == _help_options(*path)


def test_demo_and_top_options_are_in_the_usage():
    usage = subprocess.run([*wrapagent_argv(), "--help"], capture_output=True, text=True).stdout
    for option in TOP.options:
        assert option in usage
    assert "-p" in subprocess.run([*wrapagent_argv(), "demo", "--help"], capture_output=True, text=True).stdout


def _shell_env(isolated_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(wrapagent_argv()[0]).parent), env.get("PATH", "")])
    return env


@pytest.fixture
def on_path() -> None:
    if Path(wrapagent_argv()[0]).name != "wrapagent":
        pytest.skip("needs the installed wrapagent console script (the scripts call `wrapagent`)")


def script(shell: str) -> str:
    return subprocess.run([*wrapagent_argv(), "completion", shell], capture_output=True, text=True,
                          check=True).stdout


def test_bash_loads_the_script_and_completes_a_session_id(recorded, isolated_home, on_path):
    program = script("bash") + r"""
complete -p wrapagent
COMP_WORDS=(wrapagent sessions show 01M87WN07); COMP_CWORD=3
_wrapagent
printf 'got:%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(wrapagent sess); COMP_CWORD=1
_wrapagent
printf 'got:%s\n' "${COMPREPLY[@]}"
"""
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                            env=_shell_env(isolated_home), timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "complete -F _wrapagent wrapagent" in result.stdout
    assert result.stdout.splitlines()[1:] == [f"got:{IDS[1]}", "got:sessions"]


def test_zsh_loads_the_script_and_offers_a_session_id(recorded, isolated_home, on_path):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (./run-tests installs it with apt-get when run as root)")
    # _describe is completion-system machinery that needs a live line editor; the stand-in
    # prints what it was handed, which is what zsh would offer.
    program = ("autoload -Uz compinit && compinit -u -D\n" + script("zsh")
               + "\nprint -r -- ${_comps[wrapagent]}\n"
               + "_describe() { print -rl -- \"${(@P)4}\"; }\n"
               + "words=(wrapagent sessions show 01M87WN07); CURRENT=4; _wrapagent\n")
    result = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True,
                            env=_shell_env(isolated_home), timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "_wrapagent" and [l.split(":")[0] for l in lines[1:]] == [IDS[1]]


def test_fish_loads_the_script_and_completes_a_session_id(recorded, isolated_home, on_path):
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (./run-tests installs it with apt-get when run as root)")
    program = script("fish") + "\ncomplete -C'wrapagent sessions show 01M87WN07'\ncomplete -C'wrapagent sess'\n"
    result = subprocess.run(["fish", "--no-config", "-c", program], capture_output=True, text=True,
                            env=_shell_env(isolated_home), timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split("\t")[0] == IDS[1] and lines[1] == "sessions\trecorded sessions"
