"""A config problem names the line of its key, though the TOML parser gives no positions for values."""

from __future__ import annotations

import sys

import pytest

from wrapagent.hooks.toml_lines import find_line, toml_error_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HOOKS = """\
# my hooks
[[prompt_guard]]
name = "branch"
command = "git branch"

[[prompt_guard]]
name = "status"
builtin = "git_status"
args = { max_bytes = 4000 }

[hooks.pre_run]
command = "make check"
timeout = 30
"""


@pytest.mark.parametrize("parts,line", [
    (("prompt_guard", 0, "command"), 4),
    (("prompt_guard", 1, "name"), 7),
    (("prompt_guard", 1), 6),  # the second [[prompt_guard]] header
    (("hooks", "pre_run", "timeout"), 13),
    (("hooks", "pre_run"), 11),
    (("prompt_guard", 1, "args", "max_bytes"), 9),  # inside an inline table: the line of its key
])
def test_the_line_of_a_key(parts: tuple, line: int) -> None:
    assert find_line(HOOKS, parts) == line


def test_a_quoted_key_is_found_too() -> None:
    assert find_line('[hooks."pre_run"]\n"command" = "x"\n', ("hooks", "pre_run", "command")) == 2


def test_nothing_to_find_is_none() -> None:
    assert find_line("", ("a",)) is None
    assert find_line(HOOKS, ()) is None
    assert find_line(HOOKS, ("nowhere", "at_all")) is None


def test_the_line_of_a_parse_error() -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads('a = 1\nb = 2\nc = = 3\n')
    assert toml_error_line(caught.value) == 3
    assert toml_error_line(ValueError("no line here")) is None
