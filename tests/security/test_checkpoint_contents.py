"""Checkpoints hold exactly the tracked files plus the untracked, non-ignored ones of that moment,
and none at all for a dotfiles repository at $HOME or a folder the repository
does not track.

Before: the private index never forgot a file (a `.env` snapshotted once while
untracked stayed in every later snapshot, rotated secret included, after the
user ignored it), and a `git init ~` made every wrapped run under `~`
snapshot the whole home folder, `~/.ssh` included, grouped as one "home" project.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checkpoint_world import git, in_store, isolated_env, make_repo, run_session, sessions, user_state, write


def blob_id(repo: Path, env: dict[str, str], text: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "hash-object", "--stdin"], input=text.encode(), env=env,
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def has_object(info: dict, env: dict[str, str], oid: str) -> bool:
    """Whether the object is in the user's repository or in the session's checkpoint store."""
    user = subprocess.run(["git", "-C", info["repo"], "cat-file", "-e", oid], env=env).returncode == 0
    store = subprocess.run(["git", f"--git-dir={info['store']}", "cat-file", "-e", oid], env=env).returncode == 0
    return user or store


def tree_paths(info: dict, env: dict[str, str], commit: str) -> list[str]:
    return [p for p in in_store(info, env, "ls-tree", "-r", "-z", "--name-only", commit).split("\0") if p]


def test_a_file_ignored_since_the_last_snapshot_is_not_in_the_next(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env, ignore="*.log\n")
    write(repo / "secret.key", "old secret\n")  # untracked, not ignored yet
    write(repo / "dumps" / "db.sql", "old dump\n")
    first = run_session(repo, env)["checkpoints"]
    assert {"secret.key", "dumps/db.sql"} <= set(tree_paths(first, env, first["before"]))

    write(repo / ".gitignore", "*.log\nsecret.key\ndumps/\n")  # the user notices, ignores them, rotates
    write(repo / "dumps" / "db.sql", "NEW DUMP\n")
    write(repo / "secret.key", "NEW ROTATED SECRET\n")
    write(repo / "tracked.log", "tracked although ignored\n")
    git(repo, env, "add", "-f", "tracked.log")  # tracked + ignored: still the user's tracked file
    second = run_session(repo, env)["checkpoints"]
    for which in ("before", "after"):
        paths = tree_paths(second, env, second[which])
        assert "secret.key" not in paths and "dumps/db.sql" not in paths
        assert "tracked.log" in paths and ".gitignore" in paths
    assert not has_object(second, env, blob_id(repo, env, "NEW ROTATED SECRET\n"))
    assert not has_object(second, env, blob_id(repo, env, "NEW DUMP\n"))


def wrapagent(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *args], env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def object_count(git_dir: Path) -> int:
    return sum(1 for p in (git_dir / "objects").rglob("*") if p.is_file())


@pytest.fixture()
def dotfiles_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], Path]:
    """A home folder that is a git repository of dotfiles, with untracked files hidden."""
    env = isolated_env(tmp_path / "iso")
    home = Path(env["HOME"]).resolve()
    monkeypatch.setenv("HOME", str(home))  # for the in-process `sessions` commands
    git(home, env, "init", "-q", "-b", "main")
    git(home, env, "config", "status.showUntrackedFiles", "no")
    write(home / ".bashrc", "alias codex='wrapagent codex'\n")
    git(home, env, "add", ".bashrc")
    git(home, env, "commit", "-q", "-m", "dotfiles")
    write(home / ".ssh" / "id_ed25519", "PRIVATE KEY\n")
    (home / "notes").mkdir()
    return env, home


def test_a_dotfiles_repository_at_home_gets_no_checkpoints_from_a_folder_under_it(dotfiles_home) -> None:
    env, home = dotfiles_home
    objects = object_count(home / ".git")
    state = user_state(home, env)
    proc = wrapagent(env, home / "notes", "sh", "-c", "echo x > made.txt")
    assert proc.returncode == 0, proc.stderr
    after = user_state(home, env)
    assert after["files"].pop("notes/made.txt")[0] == b"x\n"
    assert after.pop("status") == state.pop("status") + "?? notes/made.txt\0"  # the session's file
    assert after == state  # config, refs, index bytes, status: the dotfiles repository untouched
    (session_dir,) = (Path(env["XDG_STATE_HOME"]) / "wrapagent" / "projects").glob("*/*/session.json")
    record = json.loads(session_dir.read_text())
    assert record["project_root"] == str(home / "notes")  # its own project, not "home"
    assert record["checkpoints"]["status"] == "skipped"
    assert "home folder" in record["checkpoints"]["note"]
    assert git(home, env, "for-each-ref", "refs/wrapagent/") == ""
    assert object_count(home / ".git") == objects
    assert not has_object({"repo": str(home), "store": str(home / ".git")}, env, blob_id(home, env, "PRIVATE KEY\n"))
    assert not (Path(env["XDG_STATE_HOME"]) / "wrapagent" / "stores").exists()
    code, out, err = sessions(env, home / "notes", "show", record["id"])
    assert code == 0 and "checkpoints skipped: not a git repository (the one at the home folder" in out


def test_a_session_at_home_itself_gets_none_either(dotfiles_home) -> None:
    env, home = dotfiles_home
    git(home, env, "config", "--unset", "status.showUntrackedFiles")  # the home top alone decides
    proc = wrapagent(env, home, "sh", "-c", "true")
    assert proc.returncode == 0, proc.stderr
    (session_dir,) = (Path(env["XDG_STATE_HOME"]) / "wrapagent" / "projects").glob("*/*/session.json")
    record = json.loads(session_dir.read_text())
    info = record["checkpoints"]
    assert info["status"] == "skipped" and "top is the home folder" in info["note"]
    assert git(home, env, "for-each-ref", "refs/wrapagent/") == ""
    code, out, err = sessions(env, home, "show", record["id"])
    assert "top is the home folder" in out


def test_hidden_untracked_files_or_an_untracked_session_folder_mean_no_checkpoints(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "work", env)
    write(repo / "scratch" / "draft.txt", "untracked folder\n")
    info = run_session(repo, env, cwd=repo / "scratch")["checkpoints"]
    assert info["status"] == "skipped" and "scratch" in info["note"] and "tracks" in info["note"]
    tracked = run_session(repo, env, cwd=repo / "src")["checkpoints"]
    assert tracked["status"] == "taken"  # a tracked subfolder is snapshotted as before

    git(repo, env, "config", "status.showUntrackedFiles", "no")
    hidden = run_session(repo, env)["checkpoints"]
    assert hidden["status"] == "skipped" and "showUntrackedFiles" in hidden["note"]
    assert git(repo, env, "for-each-ref", "refs/wrapagent/") == ""
    refs = in_store(tracked, env, "for-each-ref", "--format=%(refname)").split()
    assert all(tracked["ref"] in r for r in refs) and len(refs) == 2


def test_file_names_that_read_as_pathspec_magic_break_neither_snapshots_nor_undo(tmp_path: Path) -> None:
    """`git check-ignore` reads its paths as pathspecs and has no `literal` mode: before, a file
    named `:!README.md` or `:(x)y` made it die, so undo of the session that made it failed and
    every later snapshot of the repository failed too ("pathspec magic not supported")."""
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    names = [":!README.md", ":(bad)x", ":(glob)*", ":/top"]
    expected = user_state(repo, env)
    run_session(repo, env, lambda r: [write(r / name, "the agent's\n") for name in names])
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert user_state(repo, env) == expected

    for name in names:
        write(repo / name, "the user's own\n")
    kept = run_session(repo, env)["checkpoints"]
    assert kept["status"] == "taken", kept.get("note")
    assert set(names) <= set(tree_paths(kept, env, kept["after"]))
    (repo / ".gitignore").write_text(".env\n*.log\n:*\n")  # now the user ignores them
    dropped = run_session(repo, env)["checkpoints"]
    assert dropped["status"] == "taken", dropped.get("note")
    assert not set(names) & set(tree_paths(dropped, env, dropped["after"]))
