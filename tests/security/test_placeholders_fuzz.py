"""Placeholder values are inert in every quoting context, in dash and in bash.

A placeholder's value comes from outside (`{cwd}` is a cloned repository's
directory name). Whatever the value holds — quotes, `$(…)`, backticks,
backslashes, newlines, a here-document's delimiter, bytes that are not UTF-8 —
the shell must print back exactly the value and run nothing of it. Every
template runs in each shell that is installed (dash and bash are on the
project's machines; a shell is skipped only when it is not installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wrapagent.hooks.hook_runner import substitute

SHELLS = [
    pytest.param(("dash", "C.UTF-8"), id="dash"),
    pytest.param(("bash", "C.UTF-8"), id="bash-utf8"),
    pytest.param(("bash", "C"), id="bash-C"),
]

# Pieces a hostile directory name or tool name is made of. `touch pwned`
# creates a file in the (otherwise empty) working directory if it ever runs.
FRAGMENTS = [
    "'", '"', "\\", "`", "$", "$(", ")", "${", "}", "{", "$((", "))", "(", ";", "&", "|", "#", "*", "?",
    "[", "]", "~", "!", "-", " ", "\t", "\n", "\r", "EOF", "\nEOF\n", "\tEOF", "\n\t", "{v}", "{tool}",
    "touch pwned", "$(touch pwned)", "`touch pwned`", "';touch pwned;'", '";touch pwned;"',
    "'\"'\"'", "\\\"", "\\'", "\\$(touch pwned)", "${x:-$(touch pwned)}", "$((1+1))", "é", "\u202e",
    "\udcff", "\udc80", "\udce9",  # not UTF-8: bytes 0xff, 0x80, 0xe9 through surrogateescape
    "<(", ">(", "<(touch pwned)",  # bash's process substitution: a syntax error inside "${…"…"}"
]
VALUES = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4),
    ),
    max_size=8,
).map("".join)


def _heredoc_left_alone(value: str, strip_tabs: bool = False, template_tab: bool = False) -> bool:
    """Whether a quoted-delimiter body cannot hold `value` (a line would end it, or `<<-` eat its tabs)."""
    if "\x01" in value:  # bash inside $(…) reads \x01 as its escape byte: `\x01\x01` → `\x01`
        return True
    lines = value.split("\n")
    # a line that starts with the delimiter: bash ends a document inside $(…) there (`EOF$(…)`)
    if any((line.lstrip("\t") if strip_tabs else line).startswith("EOF") for line in lines):
        return True
    # dash drops a non-ASCII byte that follows the delimiter's first characters at a line's start.
    for line in lines:
        bare = line.lstrip("\t") if strip_tabs else line
        k = next((k for k in range(3, 0, -1) if bare.startswith("EOF"[:k])), 0)
        if k and len(bare) > k and not bare[k].isascii():
            return True
    return strip_tabs and (any(line.startswith("\t") for line in lines[1:]) or value.startswith("\t"))


# (template, expected output for a value). `S` is set, `U` is not, for the ${…} words.
CASES = {
    "unquoted": ("printf '%s' {v}", lambda v: v),
    "unquoted-joined": ("printf '%s' a{v}b", lambda v: f"a{v}b"),
    "single": ("printf '%s' '{v}'", lambda v: v),
    "single-inside": ("printf '%s' 'a {v} b'", lambda v: f"a {v} b"),
    "double": ('printf \'%s\' "{v}"', lambda v: v),
    "double-inside": ('printf \'%s\' "a {v} b"', lambda v: f"a {v} b"),
    "default-double": ('printf \'%s\' "${U:-{v}}"', lambda v: v),
    "default-double-inside": ('printf \'%s\' "${U:-a{v}b}"', lambda v: f"a{v}b"),
    "default-unquoted": ("printf '%s' ${U:-{v}}", lambda v: v),
    "default-nested-quotes": ('printf \'%s\' "${U:-"{v}"}"', lambda v: v),
    "default-nested": ('printf \'%s\' "${U:-${U2:-{v}}}"', lambda v: v),
    "default-no-colon": ('printf \'%s\' "${U-{v}}"', lambda v: v),
    "alternative-double": ('S=1; printf \'%s\' "${S:+{v}}"', lambda v: v),
    "alternative-unquoted": ("S=1; printf '%s' ${S:+{v}}", lambda v: v),
    "assign-default": ('x=${U:-{v}}; printf \'%s\' "$x"', lambda v: v),
    "pattern-double": ('x=A{v}B; printf \'%s\' "${x#A{v}}"', lambda v: "B"),
    "pattern-unquoted": ("x=A{v}B; printf '%s' ${x%{v}B}", lambda v: "A"),
    "assignment": ('x={v}; printf \'%s\' "$x"', lambda v: v),
    "cmdsubst": ('printf \'%s\' "$(printf \'%s\' {v}; printf x)"', lambda v: v + "x"),
    "cmdsubst-double": ('printf \'%s\' "$(printf \'%s\' "{v}"; printf x)"', lambda v: v + "x"),
    "cmdsubst-single": ('printf \'%s\' "$(printf \'%s\' \'{v}\'; printf x)"', lambda v: v + "x"),
    "cmdsubst-default": ('printf \'%s\' "$(printf \'%s\' "${U:-{v}}"; printf x)"', lambda v: v + "x"),
    "backticks": ("x=`printf '%s' {v}; printf x`; printf '%s' \"$x\"", lambda v: v + "x"),
    "backticks-single": ("x=`printf '%s' '{v}'; printf x`; printf '%s' \"$x\"", lambda v: v + "x"),
    "backticks-in-double": ("printf '%s' \"`printf '%s' {v}; printf x`\"", lambda v: v + "x"),
    "backticks-nested": ("x=`y=\\`printf '%s' {v}; printf x\\`; printf '%s' \"$y\"`; printf '%s' \"$x\"",
                         lambda v: v + "x"),
    "heredoc": ("cat <<EOF\n{v}\nEOF", lambda v: v + "\n"),
    "heredoc-inside": ("cat <<EOF\npre {v} post $U\nEOF", lambda v: f"pre {v} post \n"),
    "heredoc-tabs": ("cat <<-EOF\n\t{v}\n\tEOF", lambda v: v + "\n"),
    "heredoc-in-cmdsubst": ('x=$(cat <<EOF\n{v}\nEOF\nprintf x\n); printf \'%s\' "$x"', lambda v: v + "\nx"),
    "heredoc-quoted-in-cmdsubst": ('x=$(cat <<\'EOF\'\n{v}\nEOF\nprintf x\n); printf \'%s\' "$x"',
                                   lambda v: ("{v}" if _heredoc_left_alone(v) else v) + "\nx"),
    "heredoc-quoted": ("cat <<'EOF'\n{v}\nEOF",
                       lambda v: "{v}\n" if _heredoc_left_alone(v) else v + "\n"),
    "heredoc-double-quoted": ('cat <<"EOF"\n{v}\nEOF',
                              lambda v: "{v}\n" if _heredoc_left_alone(v) else v + "\n"),
    "heredoc-quoted-tabs": ("cat <<-\\EOF\n\t{v}\n\tEOF",
                            lambda v: "{v}\n" if _heredoc_left_alone(v, strip_tabs=True) else v + "\n"),
    "after-comment": ("# it's a comment\nprintf '%s' \"{v}\"", lambda v: v),
}


@pytest.mark.parametrize("case", ["heredoc-in-cmdsubst", "heredoc-quoted-in-cmdsubst", "heredoc-quoted"])
@pytest.mark.parametrize("value", ["\x01\x01", "\x01\x7f", "a\x01\x01b", "\x01"])
def test_a_value_holding_bashs_escape_byte_comes_back_exactly_or_not_at_all(case, value):
    """bash (5.2) reading a here-document inside `$(…)` takes \x01 for its internal escape byte and
    drops one (`\x01\x01` → `\x01`) even under a quoted delimiter: such a value is left out there."""
    _runs_nothing_and_prints_back_in_both_shells(case, value)


def _runs_nothing_and_prints_back_in_both_shells(case: str, value: str) -> None:
    template, expected = CASES[case]
    command = substitute(template, {"v": value})
    for shell in ("bash", "dash"):
        if shutil.which(shell) is None:
            continue
        with tempfile.TemporaryDirectory() as cwd:
            proc = _run(shell, "C.UTF-8", command, cwd)
            assert os.listdir(cwd) == [], (shell, command, "something ran")
        assert proc.stdout == os.fsencode(expected(value)), (shell, command, proc.stderr)


@pytest.mark.parametrize("case", ["heredoc-in-cmdsubst", "heredoc-quoted-in-cmdsubst"])
@pytest.mark.parametrize("value", ["EOF$(touch pwned)", "EOF\\$(touch pwned)", "EOF`touch pwned`", "EOFx"])
def test_a_value_line_starting_with_the_delimiter_inside_cmdsubst(case, value):
    """bash (5.2) ends a here-document inside `$(…)` at a line starting `EOF$(`: nothing may run."""
    _runs_nothing_and_prints_back_in_both_shells(case, value)


@pytest.mark.parametrize("value", ["%", "#", "%%", "/", ":", "-x", ""])
def test_a_value_that_would_extend_the_operator_of_an_unquoted_pattern(value):
    """`${x%{v}B}` with `%` made `${x%%B}`: a bare value next to an operator changed the operator."""
    template, expected = CASES["pattern-unquoted"]
    command = substitute(template, {"v": value})
    for shell in ("bash", "dash"):
        if shutil.which(shell) is None:
            continue
        with tempfile.TemporaryDirectory() as cwd:
            proc = _run(shell, "C.UTF-8", command, cwd)
        assert proc.stdout == os.fsencode(expected(value)), (shell, command, proc.stderr)


def _run(shell: str, locale: str, command: str, cwd: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": locale}
    return subprocess.run([shell, "-c", command], capture_output=True, cwd=cwd, env=env, timeout=30)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=VALUES)
@example(value="<(>(")  # found by a CI run: bash wanted the `)` of `<(` inside `"${U:-a"…"b}"`
@example(value="'{v}<(")  # found by a CI run: the same in "`printf '%s' ''\"'\"'{v}<('`"
def test_value_printed_back_exactly_and_nothing_runs(shell, case, value):
    name, locale = shell
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    template, expected = CASES[case]
    command = substitute(template, {"v": value, "tool": "TOOL-SHOULD-NOT-APPEAR"})
    with tempfile.TemporaryDirectory() as cwd:
        proc = _run(name, locale, command, cwd)
        assert os.listdir(cwd) == [], (command, "something ran")
    assert proc.stdout == os.fsencode(expected(value)), (command, proc.stderr)
    assert proc.returncode == 0, (command, proc.stderr)


@pytest.mark.parametrize("template", ["printf '%s' $(( {v} + 1 ))", "printf '%s' \"$(( '{v}' ))\"",
                                      "x=abc; printf '%s' \"${x:{v}}\"", "printf '%s' \"$(( ${U:-{v}} ))\""])
@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=30, deadline=None)
@given(value=st.one_of(VALUES, st.sampled_from(["a[$(touch pwned)]", "x[`touch pwned`]", "1", "-3", "0"])))
def test_arithmetic_takes_integers_and_runs_nothing(shell, template, value):
    """Both shells run a `$(…)` found in an arithmetic expression, quoted or not: only integers go in."""
    name, locale = shell
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    command = substitute(template, {"v": value})
    with tempfile.TemporaryDirectory() as cwd:
        _run(name, locale, command, cwd)
        assert os.listdir(cwd) == [], (command, "something ran")
    if value.lstrip("+-").isdigit() and value.isascii():
        assert "{v}" not in command
    else:
        assert "{v}" in command


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("value", ["a}b", 'a"b', "$(touch pwned)", "`touch pwned`", "a\\", "'x'", "\udcff}"])
def test_directory_name_in_default_expansion(shell, value):
    """The issue's reproduction: `"${VAR:-{cwd}}"` with a hostile directory name."""
    name, locale = shell
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    command = substitute('printf \'%s\' "${WRAPAGENT_UNSET:-{cwd}}"', {"cwd": value})
    with tempfile.TemporaryDirectory() as cwd:
        proc = _run(name, locale, command, cwd)
        assert os.listdir(cwd) == []
    assert proc.stdout == os.fsencode(value), command
