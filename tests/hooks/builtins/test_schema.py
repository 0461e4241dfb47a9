"""Built-in guards' `args` are checked when the config loads: defaults filled, each mistake named by its key."""

from __future__ import annotations

import pytest

from wrapagent.hooks.builtins.schema import BUILTIN_NAMES, is_inside_path, validate_args


def test_names_are_the_documented_set() -> None:
    assert set(BUILTIN_NAMES) == {
        "branch_protection", "dirty_tree", "git_status", "git_diff", "recent_commits",
        "environment", "date", "directory_listing", "prompt_files",
    }


def test_validate_fills_defaults_and_lists_become_tuples() -> None:
    assert validate_args("git_diff", {}) == {"mode": "stat", "max_bytes": 8000}
    assert validate_args("branch_protection", {}) == {"branches": ("main", "master", "dev", "develop")}
    assert validate_args("branch_protection", {"branches": ["trunk"]}) == {"branches": ("trunk",)}
    assert validate_args("dirty_tree", {"always": True}) == {"always": True, "max_bytes": 4000}
    assert validate_args("recent_commits", {"count": 3})["count"] == 3
    assert validate_args("directory_listing", {}) == {"depth": 2, "max_entries": 200}
    assert validate_args("environment", {}) == {}


def test_validate_unknown_builtin_lists_known_names() -> None:
    with pytest.raises(ValueError) as err:
        validate_args("x", {})
    assert str(err.value) == f'unknown built-in guard "x"; known: {", ".join(BUILTIN_NAMES)}'


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("git_status", {"max_bytes": "x"}, 'args.max_bytes: expected a positive integer, got "x"'),
        ("git_status", {"max_bytes": 0}, "args.max_bytes: expected a positive integer, got 0"),
        ("git_status", {"max_bytes": True}, "args.max_bytes: expected a positive integer, got true"),
        ("git_status", {"max_bytes": 1.5}, "args.max_bytes: expected a positive integer, got 1.5"),
        ("dirty_tree", {"always": "yes"}, 'args.always: expected true or false, got "yes"'),
        ("git_diff", {"mode": "patch"}, 'args.mode: expected "stat" or "full", got "patch"'),
        ("branch_protection", {"branches": "main"}, 'args.branches: expected a list of strings, got "main"'),
        ("branch_protection", {"branches": ["main", 3]}, "args.branches[1]: expected a non-empty string, got 3"),
        ("git_status", {"depth": 1}, 'args.depth: unknown option for built-in "git_status"; known: max_bytes'),
        ("date", {"format": "x"}, 'args.format: unknown option for built-in "date"; known: none'),
        ("prompt_files", {}, 'args.files: required by built-in "prompt_files"'),
        ("prompt_files", {"files": []}, "args.files: expected at least one file name"),
    ],
)
def test_validate_rejects_with_key_named(name: str, args: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        validate_args(name, args)
    assert str(err.value) == message


@pytest.mark.parametrize("bad", ["../secrets", "/etc/passwd", "docs/../../x", "~/notes.md"])
def test_validate_refuses_paths_escaping_the_root(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^args\.files\[0\]: expected a path relative to the project root"):
        validate_args("prompt_files", {"files": [bad]})


def test_validated_args_validate_again_unchanged() -> None:
    """guards.py hands the loader's validated args (tuples) back to run_builtin."""
    for name in BUILTIN_NAMES:
        raw = {"files": ["AGENTS.md"]} if name == "prompt_files" else {}
        once = validate_args(name, raw)
        assert validate_args(name, once) == once


def test_file_lists_come_back_as_tuples_the_frozen_config_holds() -> None:
    assert validate_args("prompt_files", {"files": ["AGENTS.md"]}) == {"files": ("AGENTS.md",), "max_bytes": 16000}


def test_args_must_be_a_table() -> None:
    with pytest.raises(ValueError, match="args: expected a table"):
        validate_args("git_status", ["max_bytes"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name,inside", [("AGENTS.md", True), ("docs/a.md", True), ("a..b.md", True),
                                         ("/etc/passwd", False), ("~/x", False), ("../x", False),
                                         ("docs/../../x", False), ("docs\\..\\x", False)])
def test_paths_that_could_climb_out_of_the_project(name: str, inside: bool) -> None:
    assert is_inside_path(name) is inside
