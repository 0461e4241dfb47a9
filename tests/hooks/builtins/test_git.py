"""The git built-ins (branch_protection, git_status, dirty_tree, git_diff, recent_commits) against real
temporary repositories; jj's note; every failure silent.

(The other built-ins' tests are beside their modules: test_environment.py, test_files.py; the
argument schema's in test_schema.py, the cap in test_truncate.py.)
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from builtin_repos import (commit, ctx_for, fake_tool, git, isolated_git, make_repo,  # noqa: F401 - autouse
                           no_git_path, run, with_remote)
from wrapagent.hooks.builtins import TRUNCATED, gitrun, run_builtin

PROTECTED = (
    'You are on branch "main", which is protected. Do not commit to it: '
    "create a new branch first (git switch -c <name>) and commit there."
)


GIT_NAMES = ("branch_protection", "dirty_tree", "git_status", "git_diff", "recent_commits")


def test_run_builtin_validates_too() -> None:
    with pytest.raises(ValueError, match="unknown built-in"):
        run_builtin("nope", {}, ctx_for(Path("/")))


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
