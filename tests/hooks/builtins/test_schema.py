"""Built-in guards' `args` are checked when the config loads: defaults filled, each mistake named by its key."""

from __future__ import annotations

import pytest

from wrapagent.hooks.builtins.schema import BUILTIN_NAMES, is_inside_path, validate_args


def test_every_built_in_has_a_schema_and_missing_args_get_their_defaults() -> None:
    for name in BUILTIN_NAMES:
        if name == "prompt_files":
            continue  # its `files` are required
        assert isinstance(validate_args(name, {}), dict)
    assert validate_args("git_diff", {}) == {"mode": "stat", "max_bytes": 8000}


def test_lists_come_back_as_tuples_the_frozen_config_holds() -> None:
    assert validate_args("branch_protection", {"branches": ["main", "release"]}) == {
        "branches": ("main", "release")}
    assert validate_args("prompt_files", {"files": ["AGENTS.md"]})["files"] == ("AGENTS.md",)


@pytest.mark.parametrize("name,args,message", [
    ("nope", {}, 'unknown built-in guard "nope"; known: branch_protection,'),
    ("git_status", {"max_byte": 1}, 'args.max_byte: unknown option for built-in "git_status"; known: max_bytes'),
    ("date", {"x": 1}, "known: none"),
    ("git_status", {"max_bytes": True}, "args.max_bytes: expected a positive integer, got true"),
    ("git_status", {"max_bytes": 0}, "expected a positive integer, got 0"),
    ("dirty_tree", {"always": "yes"}, 'args.always: expected true or false, got "yes"'),
    ("git_diff", {"mode": "all"}, 'args.mode: expected "stat" or "full", got "all"'),
    ("branch_protection", {"branches": "main"}, 'expected a list of strings, got "main"'),
    ("branch_protection", {"branches": ["main", ""]}, "args.branches[1]: expected a non-empty string"),
    ("prompt_files", {}, 'args.files: required by built-in "prompt_files"'),
    ("prompt_files", {"files": []}, "args.files: expected at least one file name"),
    ("prompt_files", {"files": ["../secret"]}, "args.files[0]: expected a path relative to the project root"),
])
def test_a_mistake_names_its_key_and_what_was_written(name: str, args: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        validate_args(name, args)
    assert message in str(caught.value)


def test_args_must_be_a_table() -> None:
    with pytest.raises(ValueError, match="args: expected a table"):
        validate_args("git_status", ["max_bytes"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name,inside", [("AGENTS.md", True), ("docs/a.md", True), ("a..b.md", True),
                                         ("/etc/passwd", False), ("~/x", False), ("../x", False),
                                         ("docs/../../x", False), ("docs\\..\\x", False)])
def test_paths_that_could_climb_out_of_the_project(name: str, inside: bool) -> None:
    assert is_inside_path(name) is inside
