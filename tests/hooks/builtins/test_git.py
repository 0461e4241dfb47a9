"""Built-in guards against real temporary git repositories."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psutil
import pytest

from wrapagent.hooks.builtins import BUILTIN_NAMES, TRUNCATED, cap_text, run_builtin, validate_args
from wrapagent.hooks.builtins import environment, gitrun
from wrapagent.hooks.context import GuardContext

PROTECTED = (
    'You are on branch "main", which is protected. Do not commit to it: '
    "create a new branch first (git switch -c <name>) and commit there."
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user/system git config, fixed identity and dates: reproducible repos."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(home))  # no sample hooks to copy: faster init
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Ada")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "ada@example.com")
        monkeypatch.setenv(f"GIT_{who}_DATE", "2024-05-01T12:00:00+00:00")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout


def commit(repo: Path, name: str, content: str, message: str) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)


def make_repo(path: Path, *, commits: int = 1, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    if commits:
        commit(path, "README.md", "readme 0\n", "commit 0")
    for i in range(1, commits):  # one fork per extra commit keeps the suite fast
        git(path, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
    return path


def with_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A repo tracking origin/main in a bare remote, in sync."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo = make_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def ctx_for(root: Path, *, resume: bool = False, cwd: Path | None = None) -> GuardContext:
    return GuardContext(project_root=root, cwd=cwd or root, tool="codex", session_id="s1", is_resume=resume)


def run(name: str, root: Path, resume: bool = False, **args: object) -> str:
    return run_builtin(name, args, ctx_for(root, resume=resume), timeout=60)  # a loaded machine's git


def no_git_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


def fake_tool(tmp_path: Path, name: str, script: str) -> Path:
    bindir = tmp_path / "fake-bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return bindir


GIT_NAMES = ("branch_protection", "dirty_tree", "git_status", "git_diff", "recent_commits")


# --------------------------------------------------------------------------- validation


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


def test_run_builtin_validates_too() -> None:
    with pytest.raises(ValueError, match="unknown built-in"):
        run_builtin("nope", {}, ctx_for(Path("/")))


# --------------------------------------------------------------------------- cap_text


def test_cap_text_cuts_at_line_boundary_within_budget() -> None:
    text = "\n".join(f"line {i:02d}" for i in range(20))
    out = cap_text(text, 40)
    assert out == "line 00\nline 01\nline 02\n" + TRUNCATED
    assert len(out.encode()) <= 40
    assert cap_text("short", 40) == "short"
    assert cap_text("x" * 100, 5) == TRUNCATED


def test_cap_text_never_splits_a_multibyte_character() -> None:
    out = cap_text("é" * 100, 30)  # one long line: cut inside the line
    assert out.endswith(TRUNCATED)
    assert len(out.encode()) <= 30
    out.encode("utf-8")  # valid


# --------------------------------------------------------------------------- outside git


@pytest.mark.parametrize("name", GIT_NAMES)
def test_git_builtins_are_silent_outside_a_repo(tmp_path: Path, name: str) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("x")
    assert run(name, plain, resume=True) == ""


@pytest.mark.parametrize("name", GIT_NAMES)
def test_git_builtins_are_silent_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "dirty.txt").write_text("x")
    no_git_path(tmp_path, monkeypatch)
    assert run(name, repo, resume=True) == ""


def test_missing_project_root_is_silent(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    for name in (*GIT_NAMES, "directory_listing"):
        assert run(name, gone, resume=True) == ""
    assert run("prompt_files", gone, files=["AGENTS.md"]) == ""


def test_hanging_git_hits_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    # An absolute sleep: PATH holds only the fake git, and a `sleep` not found would
    # make git fail at once instead of hanging.
    bindir = fake_tool(tmp_path, "git", f"echo $$ > {tmp_path}/git.pid; exec {shutil.which('sleep')} 120\n")
    monkeypatch.setenv("PATH", str(bindir))
    assert run_builtin("git_status", {}, ctx_for(repo), timeout=3) == ""
    # git did start and hang; the deadline ended it (it is gone), not the `sleep 120`.
    pid = int((tmp_path / "git.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_git_gets_a_quiet_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prompts off, no pager, no optional locks, and no inherited GIT_DIR."""
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other", branch="feature")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert run("branch_protection", repo) == PROTECTED  # described repo, not GIT_DIR's
    env = gitrun.quiet_env()
    assert "GIT_DIR" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["GIT_PAGER"] == env["PAGER"] == "cat"
    assert env["GCM_INTERACTIVE"] == "never"
    assert env["GIT_ASKPASS"] == ""
    assert env["LC_ALL"] == "C"


def test_git_has_no_controlling_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs in its own session: /dev/tty cannot be opened, so nothing can prompt."""
    bindir = fake_tool(tmp_path, "git", "if (: </dev/tty) 2>/dev/null; then echo tty; else echo none; fi\n")
    monkeypatch.setenv("PATH", str(bindir))
    out = gitrun.git(("anything",), tmp_path, time.monotonic() + 5)
    assert out == "none\n"


# --------------------------------------------------------------------------- branch_protection


def test_branch_protection_on_main(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert run("branch_protection", repo) == PROTECTED


def test_branch_protection_from_a_subdirectory_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    sub = repo / "src"
    sub.mkdir()
    assert run("branch_protection", sub) == PROTECTED


def test_branch_protection_before_the_first_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=0, branch="master")
    assert run("branch_protection", repo) == PROTECTED.replace('"main"', '"master"')


def test_branch_protection_quiet_on_feature_branch_and_detached(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=2)
    git(repo, "switch", "-q", "-c", "feature/x")
    assert run("branch_protection", repo) == ""
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert run("branch_protection", repo) == ""


def test_branch_protection_custom_list_with_globs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert run("branch_protection", repo, branches=["trunk"]) == ""
    git(repo, "switch", "-q", "-c", "release/1.2")
    out = run("branch_protection", repo, branches=["release/*"])
    assert out.startswith('You are on branch "release/1.2", which is protected.')
    assert run("branch_protection", repo, branches=[]) == ""


# --------------------------------------------------------------------------- git_status


def test_git_status_clean_in_sync(tmp_path: Path) -> None:
    repo, _ = with_remote(tmp_path)
    assert run("git_status", repo) == 'Branch: "main"\nUpstream: origin/main (up to date)\nWorking tree clean.'


def test_git_status_ahead_and_behind(tmp_path: Path) -> None:
    repo, remote = with_remote(tmp_path)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    commit(other, "theirs.txt", "1\n", "theirs 1")
    commit(other, "theirs2.txt", "2\n", "theirs 2")
    git(other, "push", "-q")
    commit(repo, "mine.txt", "1\n", "mine")
    git(repo, "fetch", "-q")
    out = run("git_status", repo)
    assert out.splitlines()[:2] == ['Branch: "main"', "Upstream: origin/main (ahead 1, behind 2)"]


def test_git_status_no_upstream_and_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit(repo, "old.txt", "o\n" * 20, "old")
    git(repo, "mv", "old.txt", "new.txt")
    (repo / "README.md").write_text("changed\n")
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    (repo / "notes.txt").write_text("n\n")
    (repo / "build").mkdir()
    (repo / "build" / "a.o").write_text("")
    (repo / ".gitignore").write_text("build/\n")
    assert run("git_status", repo) == "\n".join(
        [
            'Branch: "main"',
            "Upstream: none",
            "Changes (2 staged, 1 unstaged, 2 untracked):",
            " M README.md",
            "R  old.txt -> new.txt",
            "A  staged.txt",
            "?? .gitignore",
            "?? notes.txt",
        ]
    )


def test_git_status_no_commits_yet(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=0)
    (repo / "a.txt").write_text("a")
    git(repo, "add", "a.txt")
    assert run("git_status", repo) == (
        'Branch: "main" (no commits yet)\nUpstream: none\nChanges (1 staged):\nA  a.txt'
    )


def test_git_status_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=2)
    oid = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert run("git_status", repo) == f"HEAD: detached at {oid[:12]}\nWorking tree clean."


def test_git_status_upstream_gone(tmp_path: Path) -> None:
    repo, _ = with_remote(tmp_path)
    git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    assert "Upstream: origin/main (gone: the remote branch no longer exists)" in run("git_status", repo)


def _conflict(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "topic")
    commit(repo, "README.md", "topic\n", "topic change")
    git(repo, "switch", "-q", "main")
    commit(repo, "README.md", "main\n", "main change")
    subprocess.run(["git", "merge", "-q", "topic"], cwd=repo, capture_output=True, check=False)


def test_git_status_merge_in_progress(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    _conflict(repo)
    assert run("git_status", repo) == "\n".join(
        [
            'Branch: "main"',
            "Upstream: none",
            "A merge is in progress: resolve conflicts, `git add` them, then `git commit` (or `git merge --abort`).",
            "Changes (1 conflicted):",
            "UU README.md",
        ]
    )


def test_git_status_rebase_in_progress_names_the_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "switch", "-q", "-c", "topic")
    commit(repo, "README.md", "topic\n", "topic change")
    git(repo, "switch", "-q", "main")
    commit(repo, "README.md", "main\n", "main change")
    git(repo, "switch", "-q", "topic")
    subprocess.run(["git", "rebase", "-q", "main"], cwd=repo, capture_output=True, check=False)
    out = run("git_status", repo).splitlines()
    assert out[0].startswith("HEAD: detached at ") and out[0].endswith('(rebasing "topic")')
    assert out[1].startswith("A rebase is in progress:")
    assert out[-1] == "UU README.md"


def test_git_status_non_ascii_names_unquoted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "café.txt").write_text("x")
    (repo / "日本語 file.md").write_text("x")
    (repo / 'quote"tab\there.txt').write_text("x")
    lines = run("git_status", repo).splitlines()
    assert lines[3:] == ["?? café.txt", '?? quote"tab\there.txt', "?? 日本語 file.md"]


def test_git_status_caps_output(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for i in range(200):
        (repo / f"untracked-{i:03d}.txt").write_text("x")
    out = run("git_status", repo, max_bytes=300)
    assert len(out.encode()) <= 300
    assert out.startswith('Branch: "main"\nUpstream: none\nChanges (200 untracked):\n?? untracked-000.txt\n')
    assert out.endswith("\n" + TRUNCATED)


def test_git_status_does_not_touch_the_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    index = repo / ".git" / "index"
    (repo / "README.md").write_text("changed\n")
    before = index.stat().st_mtime_ns
    run("git_status", repo)
    assert index.stat().st_mtime_ns == before


# --------------------------------------------------------------------------- dirty_tree


def test_dirty_tree_only_on_resume_unless_always(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("changed\n")
    assert run("dirty_tree", repo, resume=False) == ""
    assert run("dirty_tree", repo, resume=False, always=True).startswith(
        "The repository has work that is not saved yet.\n"
    )


def test_dirty_tree_clean_and_pushed_is_silent(tmp_path: Path) -> None:
    repo, _ = with_remote(tmp_path)
    assert run("dirty_tree", repo, resume=True) == ""


def test_dirty_tree_uncommitted_and_unpushed(tmp_path: Path) -> None:
    repo, _ = with_remote(tmp_path)
    git(repo, "switch", "-q", "-c", "feature")
    git(repo, "push", "-q", "-u", "origin", "feature")
    commit(repo, "a.py", "a\n", "Add a")
    commit(repo, "b.py", "b\n", "Add b")
    (repo / "a.py").write_text("changed\n")
    (repo / "todo.txt").write_text("x\n")
    hashes = git(repo, "log", "--format=%h", "-n", "2").split()
    assert run("dirty_tree", repo, resume=True) == "\n".join(
        [
            "This session resumes earlier work; the repository has work that is not saved yet.",
            "Uncommitted changes (1 unstaged, 1 untracked):",
            " M a.py",
            "?? todo.txt",
            'Unpushed commits on "feature" (2 ahead of origin/feature):',
            f"{hashes[0]} Add b",
            f"{hashes[1]} Add a",
            "Check it before starting something new: do not discard it; commit it "
            "(on a feature branch) and push when it is ready.",
        ]
    )


def test_dirty_tree_branch_without_upstream_lists_commits_on_no_remote(tmp_path: Path) -> None:
    repo, _ = with_remote(tmp_path)
    git(repo, "switch", "-q", "-c", "local-only")
    commit(repo, "x.py", "x\n", "Local work")
    out = run("dirty_tree", repo, resume=True).splitlines()
    assert out[1] == 'Commits on "local-only" (no upstream) that are on no remote (1):'
    assert out[2].endswith(" Local work")


def test_dirty_tree_local_only_repo_does_not_nag_about_pushing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=3)
    assert run("dirty_tree", repo, resume=True) == ""


def test_dirty_tree_commits_on_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "--detach")
    commit(repo, "orphan.txt", "o\n", "Orphan work")
    out = run("dirty_tree", repo, resume=True).splitlines()
    assert out[1] == "Commits on the detached HEAD that are on no branch (1):"
    assert out[2].endswith(" Orphan work")
    assert out[3] == "Create a branch to keep them (git switch -c <name>)."


def test_dirty_tree_merge_in_progress(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    _conflict(repo)
    out = run("dirty_tree", repo, resume=True).splitlines()
    assert out[1].startswith("A merge is in progress:")
    assert out[2:4] == ["Uncommitted changes (1 conflicted):", "UU README.md"]


def test_dirty_tree_respects_max_bytes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for i in range(100):
        (repo / f"f{i:03d}.txt").write_text("x")
    out = run("dirty_tree", repo, resume=True, max_bytes=400)
    assert len(out.encode()) <= 400
    assert TRUNCATED in out
    assert out.endswith("push when it is ready.")


# --------------------------------------------------------------------------- git_diff


def test_git_diff_stat(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("one\ntwo\n")
    (repo / "untracked.txt").write_text("u")
    assert run("git_diff", repo) == "\n".join(
        [
            "Uncommitted changes to tracked files (diffstat against HEAD; untracked files not shown):",
            " README.md | 3 ++-",
            " 1 file changed, 2 insertions(+), 1 deletion(-)",
        ]
    )


def test_git_diff_full_includes_staged_and_unstaged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("new readme\n")
    (repo / "staged.txt").write_text("hello\n")
    git(repo, "add", "staged.txt")
    out = run("git_diff", repo, mode="full")
    assert out.startswith("Uncommitted changes to tracked files (diff against HEAD;")
    assert "-readme 0\n+new readme" in out
    assert "+++ b/staged.txt\n@@ -0,0 +1 @@\n+hello" in out


def test_git_diff_clean_is_silent(tmp_path: Path) -> None:
    assert run("git_diff", make_repo(tmp_path / "repo"), mode="full") == ""


def test_git_diff_no_commits_yet(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=0)
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    out = run("git_diff", repo)
    assert out.splitlines()[0] == (
        "Uncommitted changes to tracked files "
        "(diffstat against an empty tree: no commits yet; untracked files not shown):"
    )
    assert " a.txt | 1 +" in out


def test_git_diff_full_is_capped_at_a_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("".join(f"line {i}\n" for i in range(5000)))
    out = run("git_diff", repo, mode="full", max_bytes=1000)
    assert len(out.encode()) <= 1000
    assert out.endswith("\n" + TRUNCATED)
    assert out.splitlines()[-2].startswith("+line ")


# --------------------------------------------------------------------------- recent_commits


def test_recent_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=4)
    hashes = git(repo, "log", "--format=%h").split()
    out = run("recent_commits", repo, count=2)
    assert out == "\n".join(
        [
            "Recent commits, newest first (2):",
            f"{hashes[0]} 2024-05-01 commit 3 (Ada) [HEAD -> main]",
            f"{hashes[1]} 2024-05-01 commit 2 (Ada)",
        ]
    )


def test_recent_commits_default_count_and_empty_repo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commits=12)
    assert run("recent_commits", repo).splitlines()[0] == "Recent commits, newest first (10):"
    assert run("recent_commits", make_repo(tmp_path / "empty", commits=0)) == ""


# --------------------------------------------------------------------------- environment, date

PINNED = datetime(2026, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=1), "CET"))


def test_date(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)
    monkeypatch.setenv("TZ", "Europe/Paris")
    assert run("date", tmp_path) == "Today's date: 2026-03-04 (Wednesday), time zone Europe/Paris (UTC+01:00)."


def test_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "_now", lambda: PINNED)
    monkeypatch.setenv("TZ", "CET")
    monkeypatch.setenv("SHELL", "/bin/zsh")
    sub = tmp_path / "src"
    out = run_builtin("environment", {}, ctx_for(tmp_path, cwd=sub)).splitlines()
    assert out[0].startswith(f"OS: {os.uname().sysname} ")
    assert out[1:] == [
        f"Architecture: {os.uname().machine}",
        "Shell: /bin/zsh",
        f"Working directory: {sub}",
        f"Project root: {tmp_path}",
        "Date: 2026-03-04 05:06 (Wednesday), time zone CET (UTC+01:00)",
    ]


# --------------------------------------------------------------------------- directory_listing


def test_directory_listing_in_git_ignores_ignored(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("src/pkg/a.py", "src/pkg/b.py", "src/pkg/deep/c.py", "src/main.py", "docs/x.md"):
        commit(repo, name, "x\n", f"add {name}")
    (repo / ".gitignore").write_text("node_modules/\n*.log\n")
    (repo / "node_modules" / "lib").mkdir(parents=True)
    (repo / "node_modules" / "lib" / "i.js").write_text("")
    (repo / "debug.log").write_text("")
    (repo / "new.txt").write_text("")
    assert run("directory_listing", repo) == "\n".join(
        [
            f"Project files under {repo} (2 levels; files tracked or not ignored by git):",
            "docs/",
            "  x.md",
            "src/",
            "  pkg/ (3 files)",
            "  main.py",
            ".gitignore",
            "README.md",
            "new.txt",
        ]
    )


def test_directory_listing_reduces_depth_then_truncates(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for d in range(3):
        for f in range(5):
            (repo / f"d{d}").mkdir(exist_ok=True)
            (repo / f"d{d}" / f"f{f}.txt").write_text("")
    out = run("directory_listing", repo, max_entries=6).splitlines()
    assert out[0] == f"Project files under {repo} (1 level, reduced from 2 to fit 6 entries; files tracked or not ignored by git):"
    assert out[1:] == ["d0/ (5 files)", "d1/ (5 files)", "d2/ (5 files)", "README.md"]
    out = run("directory_listing", repo, max_entries=2, depth=1).splitlines()
    assert out[1:] == ["d0/ (5 files)", "d1/ (5 files)", "… (truncated: 2 more entries)"]


def test_directory_listing_outside_git_walks_and_skips_dot_dirs(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for name in ("a/b/c/deep.txt", "a/top.txt", ".cache/x", "node_modules/m/i.js", "z.txt", ".env"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "emptydir").mkdir()
    assert run("directory_listing", root) == "\n".join(
        [
            f"Project files under {root} (2 levels; dot-directories skipped):",
            "a/",
            "  b/",
            "  top.txt",
            "emptydir/",
            ".env",
            "z.txt",
        ]
    )


def test_directory_listing_non_ascii(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "données").mkdir()
    (repo / "données" / "été.csv").write_text("")
    assert "données/\n  été.csv" in run("directory_listing", repo)


# --------------------------------------------------------------------------- prompt_files


def test_prompt_files_headers_and_missing_skipped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "STYLE.md").write_text("Be brief.\n\n")
    out = run("prompt_files", tmp_path, files=["AGENTS.md", "MISSING.md", "docs/STYLE.md"])
    assert out == "== AGENTS.md ==\nUse tabs.\n\n== docs/STYLE.md ==\nBe brief."


def test_prompt_files_nothing_found(tmp_path: Path) -> None:
    assert run("prompt_files", tmp_path, files=["AGENTS.md"]) == ""


def test_prompt_files_refuses_symlink_escaping_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret\n")
    (root / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    (root / "inside.md").write_text("ok\n")
    (root / "LINK.md").symlink_to(root / "inside.md")
    out = run("prompt_files", root, files=["AGENTS.md", "LINK.md"])
    assert out == "== LINK.md ==\nok"


def test_prompt_files_skips_binary_and_directories(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"\x00\x01")
    (tmp_path / "dir.md").mkdir()
    assert run("prompt_files", tmp_path, files=["bin.md", "dir.md"]) == ""


def test_prompt_files_capped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("".join(f"rule {i}\n" for i in range(1000)))
    (tmp_path / "B.md").write_text("never reached\n")
    out = run("prompt_files", tmp_path, files=["AGENTS.md", "B.md"], max_bytes=100)
    assert len(out.encode()) <= 100
    assert out.startswith("== AGENTS.md ==\nrule 0\nrule 1\n")
    assert out.endswith("\n" + TRUNCATED)
    assert "B.md" not in out


# --------------------------------------------------------------------------- jj


def test_jj_colocated_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".jj").mkdir()
    git(repo, "checkout", "-q", "--detach")
    assert "Version control: Jujutsu (jj), colocated with git" in run("git_status", repo)


def test_jj_only_repo_uses_jj_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "jjrepo"
    (root / ".jj").mkdir(parents=True)
    bindir = fake_tool(tmp_path, "jj", 'echo "Working copy changes:"; echo "M src/a.rs"\n')
    monkeypatch.setenv("PATH", str(bindir))
    assert run("git_status", root) == "Version control: Jujutsu (jj).\nWorking copy changes:\nM src/a.rs"


def test_validated_args_validate_again_unchanged() -> None:
    """guards.py hands the loader's validated args (tuples) back to run_builtin."""
    for name in BUILTIN_NAMES:
        raw = {"files": ["AGENTS.md"]} if name == "prompt_files" else {}
        once = validate_args(name, raw)
        assert validate_args(name, once) == once


def test_dirty_tree_tiny_cap_is_still_respected(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("changed\n")
    out = run("dirty_tree", repo, resume=True, max_bytes=60)
    assert len(out.encode()) <= 60
    assert out.endswith(TRUNCATED)


@pytest.mark.parametrize("name", GIT_NAMES)
def test_git_builtins_are_silent_on_a_broken_repo(tmp_path: Path, name: str) -> None:
    """A `.git` that git rejects (here: empty) makes git fail; that is "" too."""
    root = tmp_path / "broken"
    (root / ".git").mkdir(parents=True)
    (root / "a.txt").write_text("x")
    assert run(name, root, resume=True) == ""
