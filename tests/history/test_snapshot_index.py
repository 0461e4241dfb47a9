"""Which paths a snapshot leaves out: asked of git's own ignore rules, for any file name an agent can make."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wrapagent import gitcmd
from wrapagent.history.snapshot_index import CheckpointError, check_ignore, ignore_query

# Names git would read as pathspec magic (`:!x` excludes x, `:(glob)` changes matching) if passed as they are.
NAMES = [b"build.log", b":!README.md", b":(top)notes.txt", b"src/keep.py", b"-rf", b"caf\xe9.log", b"dir/x.log"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\n:!README.md\n")
    return tmp_path


def ignored(repo: Path, names: list[bytes]) -> list[bytes]:
    proc = gitcmd.run(repo, ["check-ignore", "--no-index", "-z", "--stdin"], input=ignore_query(names), timeout=120)
    return check_ignore(proc)


def test_every_name_is_asked_about_literally(repo: Path) -> None:
    assert ignored(repo, NAMES) == [b"build.log", b":!README.md", b"caf\xe9.log", b"dir/x.log"]


def test_nothing_ignored_is_an_empty_answer_not_a_failure(repo: Path) -> None:
    assert ignored(repo, [b"src/keep.py"]) == []
    assert ignored(repo, []) == []


def test_the_query_prefixes_each_name_so_none_starts_as_magic() -> None:
    assert ignore_query([b":!a", b"b"]) == b"./:!a\0./b\0"


def test_a_failing_git_is_an_error_naming_its_last_line() -> None:
    failed = gitcmd.Result(["git", "check-ignore"], 128, b"", b"warning: x\nfatal: not a git repository\n", False)
    with pytest.raises(CheckpointError, match="`git check-ignore` failed: fatal: not a git repository"):
        check_ignore(failed)
