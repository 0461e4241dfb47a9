"""`{placeholder}` values reach the shell as one inert word, quoted for where they sit.

Each case runs the substituted command in `sh` and compares what it printed
with the value: the shell, not a reading of the quoting, is the judge. (The
fuzzing against hostile values is tests/security/test_placeholders_fuzz.py.)
"""

from __future__ import annotations

import subprocess

import pytest

from wrapagent.hooks.placeholders import dq, sq, substitute

HOSTILE = "it's a \"$(touch pwned)\" `id` $HOME \\ {tool} }"


def sh(command: str) -> str:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60, check=True).stdout


def test_safe_values_stay_bare_and_others_are_one_single_quoted_word() -> None:
    assert sq("01HZX3ABC") == "01HZX3ABC" and sq("/home/u/p-1.2") == "/home/u/p-1.2"
    assert sq("") == "''" and sq("a b") == "'a b'"
    assert sh(f"printf %s {sq(HOSTILE)}") == HOSTILE


def test_inside_double_quotes_only_the_four_special_characters_are_escaped() -> None:
    assert dq('a$b`c"d\\e') == 'a\\$b\\`c\\"d\\\\e'
    assert sh(f'printf %s "{dq(HOSTILE)}"') == HOSTILE


@pytest.mark.parametrize("template", [
    "printf %s {cwd}",
    "printf %s '{cwd}'",
    'printf %s "{cwd}"',
    'printf %s "${UNSET_VAR:-{cwd}}"',
    'printf %s "$(printf %s {cwd})"',  # (the outer quotes: no word splitting of the output)
    'printf %s "`printf %s {cwd}`"',
])
def test_the_value_arrives_exactly_wherever_it_sits(template: str, tmp_path) -> None:
    command = substitute(template, {"cwd": HOSTILE})
    assert subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path).stdout == HOSTILE
    assert not (tmp_path / "pwned").exists()


def test_one_pass_and_what_is_not_a_placeholder_is_left_alone() -> None:
    assert substitute("echo {cwd} {tool} {unknown} ${HOME} \\{cwd}", {"cwd": "{tool}", "tool": "codex"}) == \
        "echo '{tool}' codex {unknown} ${HOME} \\{cwd}"


def test_in_arithmetic_only_a_number_is_substituted() -> None:
    assert substitute("echo $(( {turn} + 1 ))", {"turn": "3"}) == "echo $(( 3 + 1 ))"
    assert substitute("echo $(( {turn} + 1 ))", {"turn": "$(id)"}) == "echo $(( {turn} + 1 ))"


def test_a_here_document_body_keeps_the_value_as_text() -> None:
    command = substitute("cat <<EOF\nmsg: {msg}\nEOF\n", {"msg": "$(id) EOF"})
    assert sh(command) == "msg: $(id) EOF\n"
