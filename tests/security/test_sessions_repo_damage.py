"""A damaged or blocked sessions repository never sends a commit anywhere else,
is repaired without losing a record, and a commit killed half-way does not block later ones.

Real wrapagent runs (one-shot, `wrapagent true`) on real temporary repositories.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_state import (WAIT, clean_env, committed_paths, git, make_repo, records, sessions_roots,
                        sessions_status, state)


def _wrapagent(cwd: Path, env: dict, *tool: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *(tool or ("true",))], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)


@pytest.fixture
def dotfiles_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """HOME is a dotfiles repository (`git init ~`) with a change the user staged; no
    XDG_STATE_HOME, so the sessions repositories live inside it, under ~/.local/state."""
    home = Path(os.environ["HOME"])
    make_repo(home, {".bashrc": "alias ll='ls -l'\n"})
    (home / ".bashrc").write_text("alias ll='ls -la'\n")
    git(home, "add", ".bashrc")
    monkeypatch.delenv("XDG_STATE_HOME")
    project = tmp_path / "project"  # outside HOME, not a repository: no checkpoints involved
    project.mkdir()
    env = clean_env()
    return {"home": home, "project": project, "env": env}


def _without_new_untracked(snapshot: dict) -> dict:
    """The session files wrapagent adds under ~/.local are untracked files of the dotfiles
    repository (as they were before): everything else must stay exactly as it was."""
    out = dict(snapshot)
    out["status"] = "".join(line + "\n" for line in snapshot["status"].splitlines()
                            if not line.startswith("?? .local/"))
    return out


def _garbage_head(dot_git: Path) -> None:
    (dot_git / "HEAD").write_text("this is not a ref\n")


def _empty_folder(dot_git: Path) -> None:
    import shutil

    shutil.rmtree(dot_git)
    dot_git.mkdir()


def _pointer_to_home(dot_git: Path) -> None:
    import shutil

    shutil.rmtree(dot_git)
    dot_git.write_text(f"gitdir: {Path(os.environ['HOME']) / '.git'}\n")


def _branch_naming_a_missing_commit(dot_git: Path) -> None:
    """Looks valid on disk (HEAD → an existing branch file); git disagrees."""
    head = (dot_git / "HEAD").read_text().split(": ", 1)[1].strip()
    (dot_git / head).write_text("0123456789abcdef0123456789abcdef01234567\n")


@pytest.mark.parametrize("damage", [_garbage_head, _empty_folder, _pointer_to_home, _branch_naming_a_missing_commit],
                         ids=["garbage HEAD", "empty .git folder", ".git file naming ~/.git",
                              "branch naming a missing commit"])
def test_damaged_sessions_repository_inside_a_dotfiles_home(dotfiles_home: dict, damage) -> None:
    """Before: git walked up from the sessions root to ~/.git and committed the session there,
    with the user's staged `.bashrc`. After: ~/.git is untouched, the damaged `.git` is kept
    aside, a new sessions repository holds every record (the old one's too)."""
    home, project, env = dotfiles_home["home"], dotfiles_home["project"], dotfiles_home["env"]
    first = _wrapagent(project, env)
    assert first.returncode == 0, first.stderr
    (root,) = sessions_roots(env)
    assert str(root).startswith(str(home))
    damage(root / ".git")
    before = _without_new_untracked(state(home))
    assert before["staged"] == "M\t.bashrc\n"

    second = _wrapagent(project, env)
    assert second.returncode == 0, second.stderr
    assert _without_new_untracked(state(home)) == before
    assert git(home, "log", "--format=%s").splitlines() == ["initial"]

    kept = sorted(p.name for p in root.iterdir() if p.name.startswith(".git.damaged-"))
    assert len(kept) == 1
    assert not [p for p in committed_paths(root) if p.startswith(".git.")]  # kept aside, not committed
    ids = [r["id"] for r in records(root)]
    assert len(ids) == 2
    tracked = committed_paths(root)
    assert {f"{sid}/session.json" for sid in ids} <= tracked
    assert sessions_status(root) == ""
    newest = max(records(root), key=lambda r: r["id"])
    assert any("damaged" in w for w in newest["warnings"]), newest["warnings"]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_commit_killed_half_way_blocks_nothing(tmp_path: Path) -> None:
    """SIGKILL during the session_complete commit leaves `index.lock` and a `finished` record
    with its running marker, uncommitted.

    Before: every later commit failed (`index.lock: File exists`), for good, and the sweep
    dropped the killed session's marker without committing it. After: the next session
    removes the stale lock (under wrapagent's commit lock, no git of ours alive), commits the
    killed session's record and its own. While a process still works in the sessions
    repository the lock is left alone; the session that could not commit then keeps its
    marker, and is committed by the next one.
    """
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env()
    assert _wrapagent(project, env).returncode == 0
    (root,) = sessions_roots(env)
    # What a SIGKILLed session_complete leaves behind.
    killed = "01KILLEDMIDCOMMIT000000000"
    (root / killed).mkdir()
    (root / killed / "session.json").write_text(json.dumps({
        "id": killed, "state": "finished", "exit_code": 0, "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T00:01:00+00:00", "pid": _dead_pid(), "pid_started_at": 1.0,
        "warnings": [], "hooks": []}))
    (root / ".running" / f"{killed}.lock").touch()
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")

    # A process still working in the sessions repository (a git of a wrapagent that is
    # still ending, the user looking around): the lock may be live, it stays.
    holder = subprocess.Popen(["sleep", "300"], cwd=root, start_new_session=True)
    try:
        blocked = _wrapagent(project, env)
        assert blocked.returncode == 0
        assert lock.exists()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()

    after = _wrapagent(project, env)
    assert after.returncode == 0, after.stderr
    assert after.stderr == ""
    assert not lock.exists()
    tracked = committed_paths(root)
    assert {f"{r['id']}/session.json" for r in records(root)} <= tracked
    assert f"{killed}/session.json" in tracked
    assert sessions_status(root) == ""
    assert not (root / ".running" / f"{killed}.lock").exists()


def test_a_commit_killed_while_moving_its_branch_blocks_nothing(tmp_path: Path) -> None:
    """SIGKILL while `git commit` moves the branch leaves `refs/heads/<branch>.lock` and
    `HEAD.lock` beside `index.lock`.

    Before: only `index.lock` was cleared, and every later session's commit failed for good
    (`cannot lock ref 'HEAD'`), its files left staged in the sessions repository."""
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env()
    assert _wrapagent(project, env).returncode == 0
    (root,) = sessions_roots(env)
    branch = git(root, "symbolic-ref", "HEAD").strip()
    locks = [root / ".git" / f"{branch}.lock", root / ".git" / "HEAD.lock", root / ".git" / "index.lock"]
    for lock in locks:
        lock.write_bytes(b"")

    after = _wrapagent(project, env)
    assert after.returncode == 0, after.stderr
    assert after.stderr == ""
    assert not [lock for lock in locks if lock.exists()]
    assert {f"{r['id']}/session.json" for r in records(root)} <= committed_paths(root)
    assert sessions_status(root) == ""


def test_an_unborn_sessions_repository_is_completed(tmp_path: Path) -> None:
    """`git init` done, its first commit never made (killed in between): repaired in place,
    nothing set aside. Before: `.git` existed, so nothing was checked, and each session's
    commit went on an unborn branch without the .gitignore (markers and locks committed)."""
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env()
    assert _wrapagent(project, env).returncode == 0
    (root,) = sessions_roots(env)
    import shutil

    shutil.rmtree(root / ".git")
    (root / ".gitignore").unlink()
    git(root, "init", "-q", str(root))
    assert _wrapagent(project, env).returncode == 0
    assert not [p for p in root.iterdir() if p.name.startswith(".git.damaged-")]
    assert (root / ".gitignore").read_text().splitlines()[:2] == ["*.lock", ".*.tmp"]
    log = git(root, "log", "--format=%s").splitlines()
    assert log[-1] == "sessions repository"
    assert {f"{r['id']}/session.json" for r in records(root)} <= committed_paths(root)
    assert sessions_status(root) == ""


def test_a_snapshot_killed_at_its_budget_removes_the_pack_it_was_writing(tmp_path: Path) -> None:
    """git streams a large untracked file into `objects/pack/tmp_pack_*`; SIGKILLed at the
    snapshot's budget it cannot remove it (70 MB per attempt in the issue). The killed git's
    own open temporary files go; another process's `tmp_pack_*` (a concurrent fetch) stays.

    Stands in for the large file: a git alias that opens a tmp_pack file and hangs."""
    from wrapagent.history import checkpoints

    repo = make_repo(tmp_path / "repo")
    pack_dir = repo / ".git" / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    ours = pack_dir / "tmp_pack_Ours01"
    theirs = pack_dir / "tmp_pack_Fetch1"
    theirs.write_bytes(b"PACK a concurrent fetch")
    git(repo, "config", "alias.slowadd",
        f"!sh -c 'exec 3>{ours}; echo PACK >&3; echo started > {tmp_path / 'started'}; sleep 300'")
    with pytest.raises(checkpoints.BudgetExceeded):
        checkpoints.git(str(repo), ["slowadd"], deadline=time.monotonic() + 2.0)
    assert (tmp_path / "started").exists()  # it did run and open its pack
    assert not ours.exists()
    assert theirs.exists()


def test_the_disk_check_agrees_with_git_on_a_healthy_repository(tmp_path: Path) -> None:
    """`looks_valid` (no fork, after every session) says yes only where git does too,
    packed refs included; anything else is left to git (`state`)."""
    from wrapagent.history import sessions_repo

    root = tmp_path / "sessions"
    assert not sessions_repo.looks_valid(root) and sessions_repo.state(root) == "missing"
    sessions_repo.ensure_repo(root)
    assert sessions_repo.looks_valid(root) and sessions_repo.state(root) == "ok"
    git(root, "pack-refs", "--all")
    assert not list((root / ".git" / "refs" / "heads").iterdir())
    assert sessions_repo.looks_valid(root) and sessions_repo.state(root) == "ok"
    _garbage_head(root / ".git")
    assert not sessions_repo.looks_valid(root) and sessions_repo.state(root) == "damaged"


def test_a_real_snapshot_over_budget_leaves_no_temporary_pack(tmp_path: Path) -> None:
    """The issue's case: a large untracked file (here 8 GB, sparse: no disk used) is streamed
    by `git add` into objects/pack/tmp_pack_*; the snapshot runs out of its budget while git
    writes it. Before: the file stayed (every attempt); after: it is removed with the kill."""
    import threading

    from wrapagent.history import checkpoints

    from wrapagent.history.store import store_path

    repo = make_repo(tmp_path / "repo")
    with open(repo / "dump.bin", "wb") as f:
        f.truncate(8 << 30)
    pack_dir = Path(store_path(str(repo))) / "objects" / "pack"  # the snapshot writes into wrapagent's store
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:  # proves the kill did hit git while it wrote its pack
        while not done.is_set():
            if pack_dir.is_dir():
                seen.extend(p.name for p in pack_dir.iterdir() if p.name.startswith("tmp_pack_"))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    info: dict = {"status": None}
    try:
        checkpoints.take(repo, "01TESTBUDGET", "before", info, budget=3.0)  # no size cap: git needs ~a minute
    finally:
        done.set()
        watcher.join()
    assert info["status"] == "skipped" and "budget" in info["note"], info
    assert seen, "git never started its temporary pack within the budget"
    assert not [p.name for p in pack_dir.iterdir() if p.name.startswith("tmp_")]


def test_a_huge_file_is_left_out_under_the_size_cap_and_the_rest_is_snapshotted(tmp_path: Path) -> None:
    """With the default cap the same 8 GB file costs nothing: left out, listed, the snapshot taken."""
    from wrapagent.history import checkpoints

    repo = make_repo(tmp_path / "repo")
    with open(repo / "dump.bin", "wb") as f:
        f.truncate(8 << 30)
    info: dict = {"status": None}
    checkpoints.take(repo, "01TESTCAP", "before", info, budget=30.0, max_file_bytes=10_000_000)
    assert info["status"] == "taken", info
    assert info["left_out_before"] == {"dump.bin": 8 << 30}
