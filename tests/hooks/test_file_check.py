"""One config file's problems: each with its line, the first MAX_PROBLEMS kept and the rest counted."""

from __future__ import annotations

from wrapagent.hooks.file_check import MAX_KEY_PARTS, MAX_PROBLEMS, FileCheck, too_many_key_parts

TEXT = '[hooks.pre_run]\ncommand = "make"\ntimout = 3\n'


def test_a_problem_gets_the_line_of_its_key() -> None:
    check = FileCheck("/p/hooks.toml", TEXT)
    check.unknown_keys({"command": "make", "timout": 3}, ("command", "timeout"), "hooks.pre_run.",
                       ("hooks", "pre_run"))
    (problem,) = check.reported()
    assert (problem.path, problem.severity, problem.line, problem.key) == (
        "/p/hooks.toml", "warning", 3, "hooks.pre_run.timout")
    assert problem.message == "unknown key, ignored (did you mean 'timeout'?)"
    assert not check.has_errors


def test_an_error_inside_one_guard_entry_does_not_make_the_file_unusable() -> None:
    check = FileCheck("f", "")
    check.in_entry = True
    check.error("prompt_guard[0].command", "expected a string")
    assert (check.errors, check.has_errors) == (1, False)
    check.in_entry = False
    check.error("hooks", "expected a table")
    assert (check.errors, check.has_errors) == (2, True)


def test_past_the_cap_problems_are_counted_in_one_closing_line() -> None:
    check = FileCheck("f", "")
    for i in range(MAX_PROBLEMS + 7):
        check.error(f"k{i}", "bad", line=i + 1)
    for i in range(2):
        check.warning(f"w{i}", "odd", line=1)
    reported = check.reported()
    assert len(reported) == MAX_PROBLEMS + 1 and check.errors == MAX_PROBLEMS + 7
    assert reported[-1].severity == "error"
    assert reported[-1].message == \
        f"7 errors and 2 warnings more, not listed (only the first {MAX_PROBLEMS} problems are)"
    assert check.did_you_mean("comand", ("command",)) == ""  # no hint work for a problem only counted


def test_a_key_of_too_many_parts_is_found_before_the_parser_sees_it() -> None:
    ok = "a." * (MAX_KEY_PARTS - 1) + "z = 1\n"  # exactly MAX_KEY_PARTS parts
    assert too_many_key_parts(ok) is None
    bad = "x = 1\ny = 2\n" + "a." * MAX_KEY_PARTS + "z = 1\n"  # one part more
    assert too_many_key_parts(bad) == 3
