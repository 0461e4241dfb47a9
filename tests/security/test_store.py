"""Checkpoints live in wrapagent's own store: the user's repository is only read, and undo gives
back the exact bytes that were there.

Each test stands for a case that went wrong when snapshots were written into the user's `.git`
(refs/wrapagent/*, `.git/wrapagent/` marker files, the index copy) and restored through the
user's filters and eol settings. All run on real temporary repositories.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
from pathlib import Path

import pytest

from checkpoint_world import (finish_session, git, in_store, isolated_env, load_record, make_repo, run_session,
                              sessions, start_session, write)
from wrapagent.hooks.config_model import CheckpointSettings


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path / "iso")


def git_dir_hashes(repo: Path) -> dict[str, str]:
    """Every entry under the user's `.git`, by content hash, mode and link target."""
    out = {}
    for path in sorted((repo / ".git").rglob("*")):
        rel = str(path.relative_to(repo / ".git"))
        st = path.lstat()
        if path.is_symlink():
            out[rel] = f"link {os.readlink(path)}"
        elif path.is_file():
            out[rel] = f"{hashlib.sha256(path.read_bytes()).hexdigest()} {st.st_mode:o} {st.st_uid}"
        else:
            out[rel] = f"dir {st.st_mode:o}"
    return out


def test_the_users_git_dir_is_identical_after_sessions_diff_undo_prune_and_uninstall(tmp_path, env) -> None:
    """Before: refs/wrapagent/*, objects and `.git/wrapagent/` (index, marks) were written there."""
    from wrapagent.commands.uninstall import cmd_uninstall

    repo = make_repo(tmp_path / "proj", env)
    write(repo / "mine.txt", "the user's untracked file\n")
    hashes = git_dir_hashes(repo)
    run_session(repo, env, lambda r: write(r / "README.md", "the agent's edit\n"))
    assert sessions(env, repo, "diff", "last")[0] == 0
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    run_session(repo, env, lambda r: write(r / "new.txt", "another session\n"))
    code, out, err = sessions(env, repo, "prune", "--older-than", "0", "--yes")
    assert code == 0, err
    assert git_dir_hashes(repo) == hashes
    old = dict(os.environ)
    os.environ.update({k: env[k] for k in ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")})
    try:
        assert cmd_uninstall(yes=True, dry_run=False, with_config=False, shim_dir=str(tmp_path / "shims"),
                             stdin=io.StringIO(), out=io.StringIO(), env=env) == 0
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert git_dir_hashes(repo) == hashes
    assert (repo / "README.md").read_text() == "readme\n"


@pytest.mark.parametrize("mark", ["pruned", "over-budget", "index"])
def test_links_planted_under_git_wrapagent_are_never_written_through(tmp_path, env, mark) -> None:
    """A project that arrives with its `.git` (an archive) holding `.git/wrapagent/pruned` as a
    link to ~/.bashrc: before, the first session's end truncated and rewrote ~/.bashrc."""
    repo = make_repo(tmp_path / "proj", env)
    victim = Path(env["HOME"]) / ".bashrc"
    victim.write_text("alias ll='ls -l'\n")
    (repo / ".git" / "wrapagent").mkdir()
    (repo / ".git" / "wrapagent" / mark).symlink_to(victim)
    record = run_session(repo, env, lambda r: write(r / "README.md", "edit\n"))
    assert record["checkpoints"]["status"] == "taken", record["checkpoints"]
    assert victim.read_text() == "alias ll='ls -l'\n"
    sessions(env, repo, "undo", "last")
    sessions(env, repo, "prune", "--older-than", "0", "--yes")
    assert victim.read_text() == "alias ll='ls -l'\n"
    assert sorted(p.name for p in (repo / ".git" / "wrapagent").iterdir()) == [mark]


@pytest.mark.parametrize("setting", ["attributes", "autocrlf"])
def test_crlf_files_come_back_with_their_crlf(tmp_path, env, setting) -> None:
    """Under `* text=auto` or `core.autocrlf=input` the snapshot held the normalised blob and undo
    wrote it with the current eol settings: a `.bat` file came back LF."""
    repo = make_repo(tmp_path / "proj", env)
    if setting == "attributes":
        write(repo / ".gitattributes", "* text=auto\n")
    else:
        git(repo, env, "config", "core.autocrlf", "input")
    crlf = b"@echo off\r\necho hello\r\n"
    (repo / "run.bat").write_bytes(crlf)
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "bat")
    (repo / "run.bat").write_bytes(crlf)  # the checkout may have rewritten it: CRLF on disk for sure
    (repo / "edit.bat").write_bytes(b"rem untracked\r\n")
    run_session(repo, env, lambda r: ((r / "run.bat").write_bytes(b"echo agent\n"),
                                      (r / "edit.bat").write_bytes(b"rem agent\n")))
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / "run.bat").read_bytes() == crlf
    assert (repo / "edit.bat").read_bytes() == b"rem untracked\r\n"


def test_a_required_filter_that_fails_at_undo_time_changes_nothing_half_way(tmp_path, env) -> None:
    """git-lfs style set-up whose filter fails at undo: before, undo deleted new.txt, restored
    m.txt, lost pre.bin from the work tree and stopped. No filter runs now: undo is complete."""
    repo = make_repo(tmp_path / "proj", env)
    write(repo / ".gitattributes", "*.bin filter=lfsish\n")
    git(repo, env, "config", "filter.lfsish.clean", "cat")
    git(repo, env, "config", "filter.lfsish.smudge", "cat")
    git(repo, env, "config", "filter.lfsish.required", "true")
    (repo / "pre.bin").write_bytes(b"\x00binary of the user\xff")
    write(repo / "m.txt", "m before\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "lfs")

    def agent(r: Path) -> None:
        write(r / "new.txt", "new\n")
        write(r / "m.txt", "m by the agent\n")
        (r / "pre.bin").unlink()

    run_session(repo, env, agent)
    git(repo, env, "config", "filter.lfsish.smudge", "false")  # the filter breaks
    git(repo, env, "config", "filter.lfsish.clean", "false")
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / "pre.bin").read_bytes() == b"\x00binary of the user\xff"
    assert (repo / "m.txt").read_text() == "m before\n"
    assert not (repo / "new.txt").exists()


def test_a_file_the_session_made_ignored_and_the_user_wrote_since_is_a_conflict(tmp_path, env) -> None:
    """The session only adds notes.txt to .gitignore; the user then writes notes into it. Before:
    undo wrote the pre-session copy over them, no question."""
    repo = make_repo(tmp_path / "proj", env)
    write(repo / "notes.txt", "old notes\n")
    record = run_session(repo, env, lambda r: write(r / ".gitignore", ".env\n*.log\nnotes.txt\n"))
    write(repo / "notes.txt", "an hour of the user's notes\n")
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and "notes.txt" in err and "changed after the session" in err
    assert (repo / "notes.txt").read_text() == "an hour of the user's notes\n"
    assert (repo / ".gitignore").read_text() == ".env\n*.log\nnotes.txt\n"  # nothing changed
    code, out, err = sessions(env, repo, "undo", "--force", "last")
    assert code == 0, err
    assert (repo / "notes.txt").read_text() == "old notes\n"
    assert load_record(record)["checkpoints"]["undone_at"]


def test_a_60_mb_binary_is_left_out_listed_and_the_small_edit_undone(tmp_path, env) -> None:
    """Before: the binary went into the user's `.git` (or the snapshot ran past its budget and the
    session had no checkpoints at all)."""
    repo = make_repo(tmp_path / "proj", env)
    store_size = lambda info: sum(p.stat().st_size for p in Path(info["store"]).rglob("*")  # noqa: E731
                                  if p.is_file())

    def agent(r: Path) -> None:
        write(r / "README.md", "small edit\n")
        with open(r / "model.bin", "wb") as f:
            f.write(os.urandom(60 * 1000 * 1000))

    first = run_session(repo, env)["checkpoints"]
    grown_from = store_size(first)
    record = run_session(repo, env, agent)
    info = record["checkpoints"]
    assert info["status"] == "taken", info
    assert info["left_out_after"] == {"model.bin": 60_000_000}
    assert store_size(info) - grown_from < 20 * 1000 * 1000
    code, out, err = sessions(env, repo, "diff", "--stat", "last")
    assert code == 0 and "not in the snapshot: model.bin, 60 MB" in out
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert "model.bin: not restored (not in the snapshot: 60 MB" in out
    assert (repo / "README.md").read_text() == "readme\n"
    assert (repo / "model.bin").stat().st_size == 60_000_000  # never touched


def test_a_project_renamed_mid_session_keeps_its_before_snapshot(tmp_path, env) -> None:
    """Before: the record said "checkpoints skipped: not a git repository" although the `before`
    snapshot was taken, and that snapshot became unreachable."""
    repo = make_repo(tmp_path / "proj", env)
    record = start_session(repo, env)
    before = record["checkpoints"]["before"]
    repo.rename(tmp_path / "renamed")
    finish_session(record, env)
    info = load_record(record)["checkpoints"]
    assert info["status"] == "taken" and info["before"] == before and not info.get("after")
    assert "deleted, moved" in info["after_note"]
    assert in_store(dict(info, repo=str(tmp_path / "renamed")), env, "cat-file", "-t", before).strip() == "commit"
    code, out, err = sessions(env, tmp_path, "diff", record["id"])
    assert code == 1 and before in err and "no `after` checkpoint" in err


def test_borrowed_content_removed_by_the_users_gc_is_named_never_half_undone(tmp_path, env) -> None:
    """The store borrows the user's objects: a blob the user's `git gc` removed since cannot be
    restored; undo says which files, and changes nothing."""
    repo = make_repo(tmp_path / "proj", env)
    write(repo / "staged.txt", "only ever staged\n")
    git(repo, env, "add", "staged.txt")  # in the user's index (and objects), in no commit
    run_session(repo, env, lambda r: ((r / "staged.txt").unlink(), write(r / "README.md", "agent\n")))
    git(repo, env, "rm", "-q", "--cached", "staged.txt")
    git(repo, env, "gc", "-q", "--prune=now")
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and "cannot be restored" in err and "staged.txt" in err
    assert (repo / "README.md").read_text() == "agent\n"  # nothing changed


def test_an_undo_that_stopped_part_way_is_finished_by_running_it_again(tmp_path, env, monkeypatch) -> None:
    """Before: the rerun refused on the files the first run had already restored."""
    from wrapagent.history import checkpoints

    repo = make_repo(tmp_path / "proj", env, files={"a.txt": "a\n", "b.txt": "b\n"})
    run_session(repo, env, lambda r: (write(r / "a.txt", "A\n"), write(r / "b.txt", "B\n"),
                                      write(r / "c.txt", "C\n")))
    real = checkpoints.Repo.checkout_paths

    def half(self, tree, paths):
        real(self, tree, paths[:1])
        raise checkpoints.CheckpointError("disk full (simulated)")

    monkeypatch.setattr(checkpoints.Repo, "checkout_paths", half)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and "stopped part-way" in err and "again to finish" in err
    monkeypatch.setattr(checkpoints.Repo, "checkout_paths", real)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert [(repo / n).read_text() for n in ("a.txt", "b.txt")] == ["a\n", "b\n"]
    assert not (repo / "c.txt").exists()


def test_mode_bits_come_back(tmp_path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    run_session(repo, env, lambda r: (r / "run.sh").chmod(0o644))
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert script.stat().st_mode & 0o111


def test_git_log_all_in_the_users_repository_shows_no_checkpoint(tmp_path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    run_session(repo, env, lambda r: write(r / "README.md", "agent\n"))
    assert git(repo, env, "log", "--all", "--format=%s").split("\n") == ["initial", ""]


def test_the_store_is_private_whatever_the_umask(tmp_path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    old = os.umask(0o022)
    try:
        info = run_session(repo, env, lambda r: write(r / "README.md", "agent\n"))["checkpoints"]
    finally:
        os.umask(old)
    store = Path(info["store"])
    for path in [store, *store.rglob("*")]:
        mode = path.lstat().st_mode & 0o777
        assert mode & 0o077 == 0, f"{path}: {mode:o}"


def test_a_snapshot_in_the_users_repository_reads_with_no_optional_locks(tmp_path, env) -> None:
    """`git status` from a background tool must not refresh the user's index: its bytes stay."""
    repo = make_repo(tmp_path / "proj", env)
    index = (repo / ".git" / "index").read_bytes()
    os.utime(repo / "README.md", None)  # a stat change git would write back into the index
    run_session(repo, env, lambda r: None, settings=CheckpointSettings(budget_secs=60))
    assert (repo / ".git" / "index").read_bytes() == index


def test_a_transcript_copy_records_and_the_sessions_repository_are_private_under_umask_022(tmp_path) -> None:
    """Before: the copy of a 0600 claude transcript was 0644 in 0755 folders (umask 022), and
    another local user could read a secret from it; records too."""
    from wrapagent.history import records, transcripts

    env = isolated_env(tmp_path / "iso")
    source = tmp_path / "native.jsonl"
    source.write_text('{"secret": "sk-live-123"}\n')
    source.chmod(0o600)
    old = os.umask(0o022)
    try:
        session = records.Session.create(tool="sh", transport="sh", argv=["sh"], executable="/bin/sh",
                                          cwd=tmp_path, project_root=tmp_path, env=env, mode="pipe")
        session.log("a line")
        dest = Path(session.dir) / "transcript"
        dest.mkdir(mode=0o700)
        transcripts._copy_capped(source, dest / "claude-x.jsonl", 1 << 20)
        session.save()
    finally:
        os.umask(old)
    state = Path(env["XDG_STATE_HOME"]) / "wrapagent"
    for path in [state, *state.rglob("*")]:
        mode = path.lstat().st_mode & 0o777
        assert mode & 0o077 == 0, f"{path}: {mode:o}"


@pytest.mark.parametrize("where", ["relative", "in-repository"])
def test_a_sessions_root_of_somebody_elses_repository_is_refused(tmp_path, env, where) -> None:
    """`WRAPAGENT_SESSIONS_ROOT=.` in a fresh repository: before, wrapagent called the user's `.git`
    damaged, set it aside, ran `git init` and committed every file of the folder, `.env` included."""
    import sys

    repo = tmp_path / "proj"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    write(repo / ".env", "TOKEN=secret\n")
    hashes = git_dir_hashes(repo)
    run_env = dict(env, WRAPAGENT_SESSIONS_ROOT="." if where == "relative" else str(repo / "sessions"))
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo tool ran; exit 3"], cwd=repo,
                          env=run_env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 3 and "tool ran" in proc.stdout  # the tool's exit code, the tool ran
    assert "without a session record" in proc.stderr and proc.stderr.count("\n") == 1
    assert git_dir_hashes(repo) == hashes
    assert sorted(p.name for p in repo.iterdir()) == [".env", ".git"]


def test_a_folder_that_existed_before_the_session_stays_even_empty(tmp_path, env) -> None:
    """`uploads/` (a mount point, a folder the app expects) was deleted by undo once the session's
    file in it was removed."""
    repo = make_repo(tmp_path / "proj", env)
    (repo / "uploads").mkdir()
    (repo / "logs").mkdir()
    write(repo / "logs" / "app.log", "ignored\n")
    info = run_session(repo, env, lambda r: (write(r / "uploads" / "x.png", "png\n"),
                                             write(r / "logs" / "new.txt", "n\n"),
                                             write(r / "made" / "deep" / "f.txt", "f\n")))["checkpoints"]
    assert {"uploads", "logs"} <= set(info["folders_before"])
    (repo / "logs" / "app.log").unlink()  # even with nothing of the user's left in it
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / "uploads").is_dir() and not list((repo / "uploads").iterdir())
    assert (repo / "logs").is_dir()
    assert not (repo / "made").exists()  # the session's own folders go


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: `sudo codex` is run as root")
def test_under_sudo_nothing_root_owned_is_left_in_the_users_folders(tmp_path) -> None:
    """`sudo codex` in your own repository left root-owned objects, refs and `.git/wrapagent/`:
    the owner's checkpoints then failed silently. Now nothing is written there as root."""
    import sys

    home = tmp_path / "home"
    home.mkdir()
    repo = home / "proj"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    for path in [home, *home.rglob("*")]:
        os.lchown(path, 4242, 4242)
    hashes = git_dir_hashes(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "WRAPAGENT_", "GIT_"))}
    env.update(HOME=str(home), SUDO_UID="4242", SUDO_GID="4242", GIT_CONFIG_NOSYSTEM="1")
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo b > b.txt"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (repo / "b.txt").unlink()  # the tool's own file (root's, as the user asked for)
    assert [str(p) for p in [home, *home.rglob("*")] if p.lstat().st_uid == 0] == []
    assert git_dir_hashes(repo) == hashes
