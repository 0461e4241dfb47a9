"""wrapagent started from inside git (a hook, a linked worktree, an exported
GIT_INDEX_FILE) never writes into the user's repository, and runs none of the user's git hooks.

Each test runs the real wrapagent (one-shot, `wrapagent true`) on real temporary repositories
and compares the user's repository byte for byte (config, HEAD, index, refs, log, status) with
what it was, or with exactly what the user's own git command asked for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_state import (WAIT, clean_env, committed_paths, git, install_hook, make_repo, records,
                        sessions_roots, sessions_status, state, wrapagent_cmd)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX git hooks")


def _commit(work_tree: Path, message: str, *, env: dict | None = None, all: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "commit", "-q", *(["-a"] if all else []), "-m", message], cwd=work_tree,
                          env=clean_env() if env is None else env, capture_output=True, text=True,
                          timeout=WAIT, stdin=subprocess.DEVNULL)


def _refused_commit_baseline(work_tree: Path, repo: Path, *, env: dict | None = None) -> dict:
    """The repository's state after a commit that pre-commit refused, without wrapagent.

    git itself rewrites the index (its cache-tree) when it prepares a commit,
    even one a hook refuses; a second refused commit changes nothing more.
    """
    install_hook(repo, "pre-commit", "exit 1")
    assert _commit(work_tree, "probe", env=env).returncode != 0
    return state(work_tree)


def _only_sessions_root() -> Path:
    (root,) = sessions_roots(dict(os.environ))
    return root


def _assert_session_committed(root: Path) -> dict:
    (record,) = records(root)
    assert record["state"] == "finished" and record["exit_code"] == 0
    assert f"{record['id']}/session.json" in committed_paths(root)
    assert sessions_status(root) == ""
    return record


def test_pre_commit_hook_running_wrapagent_leaves_the_repository_alone(tmp_path: Path) -> None:
    """An "AI commit message" set-up under a dotfiles manager (GIT_DIR, GIT_WORK_TREE exported):
    the pre-commit hook runs a wrapped tool one-shot.

    The hook then refuses the commit, so the user's repository must be byte for byte what it
    was after a refused commit without wrapagent. Before: wrapagent's `git init` and `git
    config` ran on GIT_DIR (the user's repository): `core.hooksPath=/dev/null` and
    `user.name=wrapagent` in its config, wrapagent's files staged in its index.
    """
    repo = make_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("staged by the user\n")
    git(repo, "add", "change.txt")
    env = clean_env(GIT_DIR=str(repo / ".git"), GIT_WORK_TREE=str(repo))
    before = _refused_commit_baseline(repo, repo, env=env)
    install_hook(repo, "pre-commit", f"{wrapagent_cmd()} || echo wrapagent-failed >&2\nexit 1")
    proc = _commit(repo, "user's commit", env=env)
    assert proc.returncode != 0  # the hook refused it, as written
    assert "wrapagent-failed" not in proc.stderr
    assert state(repo) == before
    _assert_session_committed(_only_sessions_root())


@pytest.mark.parametrize("how", ["GIT_DIR exported", "commit -a (GIT_INDEX_FILE=index.lock)"])
def test_pre_commit_hook_then_the_users_commit_holds_exactly_their_content(tmp_path: Path, how: str) -> None:
    """The hook runs wrapagent and lets the commit through.

    Before: with GIT_DIR the user's commit failed (`cannot lock ref 'HEAD'`: wrapagent had
    committed "sessions repository" and "session … complete" onto `main`); with `commit -a`
    (git hands hooks GIT_INDEX_FILE=<repo>/.git/index.lock) wrapagent's files were added to
    the index being committed.
    """
    repo = make_repo(tmp_path / "repo")
    config = (repo / ".git" / "config").read_bytes()
    install_hook(repo, "pre-commit", wrapagent_cmd())
    if how == "GIT_DIR exported":
        (repo / "change.txt").write_text("staged by the user\n")
        git(repo, "add", "change.txt")
        proc = _commit(repo, "user's commit", env=clean_env(GIT_DIR=str(repo / ".git"), GIT_WORK_TREE=str(repo)))
        files = ["README", "change.txt"]
    else:
        (repo / "README").write_text("edited\n")
        proc = _commit(repo, "user's commit", all=True)
        files = ["README"]
    assert proc.returncode == 0, proc.stderr
    assert git(repo, "log", "--format=%an %s", "main").splitlines() == ["User user's commit", "User initial"]
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() == files
    assert git(repo, "ls-files").split() == files
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert (repo / ".git" / "config").read_bytes() == config
    (record,) = records(_only_sessions_root())
    assert record["checkpoints"]["status"] == "taken"  # it did run in the repository
    _assert_session_committed(_only_sessions_root())


def test_linked_worktree_hook(tmp_path: Path) -> None:
    """In a linked worktree git exports GIT_DIR=<main>/.git/worktrees/<name> to hooks."""
    main = make_repo(tmp_path / "main")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "change.txt").write_text("staged in the worktree\n")
    git(linked, "add", "change.txt")
    before_linked = _refused_commit_baseline(linked, main)
    before_main = state(main)
    install_hook(main, "pre-commit", f"{wrapagent_cmd()}\nexit 1")
    proc = _commit(linked, "worktree commit")
    assert proc.returncode != 0
    assert state(main) == before_main
    assert state(linked) == before_linked
    _assert_session_committed(_only_sessions_root())


def test_exported_index_file_only(tmp_path: Path) -> None:
    """GIT_INDEX_FILE alone (a partial commit's hook, a script) naming the user's index.

    Before: the sessions repository's `git add` wrote wrapagent's files into the user's index
    (their next commit: `invalid object`).
    """
    repo = make_repo(tmp_path / "repo")
    (repo / "change.txt").write_text("staged\n")
    git(repo, "add", "change.txt")
    before = state(repo)
    elsewhere = tmp_path / "elsewhere"  # not a repository: no checkpoints, only the sessions repository
    elsewhere.mkdir()
    env = clean_env(GIT_INDEX_FILE=str(repo / ".git" / "index"))
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "true"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert state(repo) == before
    assert _commit(repo, "next").returncode == 0  # the user's next commit works
    _assert_session_committed(_only_sessions_root())


@pytest.mark.parametrize("hook", ["post-index-change", "reference-transaction"])
def test_user_hooks_do_not_run_during_snapshots(tmp_path: Path, hook: str) -> None:
    """The README says no git hook runs: snapshots only read the user's repository (and write
    wrapagent's own store, where no hook of the user's is configured either)."""
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / f"{hook}.ran"
    install_hook(repo, hook, f"echo \"$@\" >> '{marker}'")
    (repo / "untracked.txt").write_text("the agent's work\n")
    before = state(repo)
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo more > more.txt"], cwd=repo,
                          env=clean_env(), capture_output=True, text=True, timeout=WAIT,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (record,) = records(_only_sessions_root())
    assert record["checkpoints"]["status"] == "taken", record["checkpoints"]  # snapshots did run
    assert git(repo, "for-each-ref", "refs/wrapagent/") == ""
    assert not marker.exists(), marker.read_text()
    after = state(repo)
    assert after["status"] == "?? more.txt\n" + before["status"]
    assert {k: v for k, v in after.items() if k != "status"} == {k: v for k, v in before.items() if k != "status"}
    # the hook is real: git itself runs it
    if hook == "reference-transaction":
        git(repo, "update-ref", "refs/heads/probe", "HEAD")
    else:
        git(repo, "add", "more.txt")
    assert marker.exists()


def test_the_old_default_copied_into_a_config_is_run_as_the_default(tmp_path: Path) -> None:
    """The README used to show `cd {sessions_root} && git add … && git commit …` as the default;
    a config holding it verbatim means the default, run in-process (no `sh`, nothing inherited).
    Before: `sh` ran it with GIT_INDEX_FILE naming the user's index."""
    legacy = "cd {sessions_root} && git add {session_id}/ && git commit -m 'session {session_id} complete' -q --allow-empty"
    from wrapagent.hooks import config_model

    assert getattr(config_model, "LEGACY_DEFAULT_SESSION_COMPLETE", legacy) == legacy
    hooks = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text(f'[session_complete]\ncommand = "{legacy}"\ntimeout_secs = 20\n')
    repo = make_repo(tmp_path / "repo")
    before = state(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(GIT_INDEX_FILE=str(repo / ".git" / "index"))
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "true"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert state(repo) == before
    record = _assert_session_committed(_only_sessions_root())
    (hook,) = [h for h in record["hooks"] if h["name"] == "session_complete"]
    assert hook["exit_code"] == 0


def test_a_repositorys_own_fsmonitor_command_never_runs(tmp_path: Path) -> None:
    """A project that came as an archive can carry its `.git/config`: `core.fsmonitor` names a
    command git runs on `status` and `add`. wrapagent's own git calls (the git_status guard, the
    `before`/`after` checkpoints) must not run it: the user typed `codex`, not a git command."""
    marker = tmp_path / "fsmonitor-ran"
    work = tmp_path / "archive-project"
    make_repo(work)
    git(work, "config", "core.fsmonitor", f"touch {marker}; false #")
    (work / "new.txt").write_text("untracked\n")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text('[[prompt_guard]]\nname = "git"\nbuiltin = "git_status"\n')
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo ran > out.txt"], cwd=work,
                          env=clean_env(), capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (root,) = sessions_roots(dict(os.environ))
    (record,) = records(root)
    assert (work / "out.txt").exists() and record["checkpoints"]["status"] != "skipped", record["checkpoints"]
    assert not marker.exists(), "the repository's fsmonitor command ran"
