"""The sessions repository: where each session's record is committed when it ends.

A git repository of wrapagent's own (`<sessions root>/.git`), so every git
call here names it explicitly (`--git-dir=<root>/.git --work-tree=<root>`,
through `wrapagent/gitcmd.py`): git never discovers a repository upward
from the sessions root, and a variable inherited from a git hook
(`GIT_DIR`, `GIT_INDEX_FILE`) never turns a commit of ours into one on the
user's branch. A `.git` that is damaged (garbage HEAD, an empty folder, a
half-finished `git init`) is repaired or set aside and recreated, never
deleted and never walked past.

Every call that writes here runs under `commit_lock`: sessions ending at
once, the sweep of abandoned sessions and the default session_complete
never race, and under the lock an `index.lock` that no live git of ours
can hold is known to be stale (a commit SIGKILLed half-way) and removed.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from wrapagent import gitcmd

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Iterator, Sequence

COMMIT_LOCK_NAME = ".commit.lock"
DAMAGED_PREFIX = ".git.damaged-"
GITIGNORE_LINES = ("*.lock", ".*.tmp", f"/{DAMAGED_PREFIX}*")
GIT_TIMEOUT = 30.0  # seconds, per git call; the default session_complete passes its own
REPO_CONFIG = (("user.name", "wrapagent"), ("user.email", "wrapagent@localhost"),
               ("commit.gpgsign", "false"), ("core.hooksPath", "/dev/null"), ("core.sharedRepository", "0600"))
"""Written into the sessions repository's own config, for a configured session_complete hook
that runs plain `git commit` there; wrapagent's own calls pass the same on each command."""
CALL_CONFIG = ("commit.gpgsign=false",)


def git(root: Path, args: Sequence[str], *, timeout: float | None = GIT_TIMEOUT,
        deadline: float | None = None, check: bool = False) -> gitcmd.Result:
    """One git command on the sessions repository at `root`, named explicitly."""
    return gitcmd.run(root, args, git_dir=root / ".git", work_tree=root, timeout=timeout,
                      deadline=deadline, check=check, identity=True, config=CALL_CONFIG)


@contextlib.contextmanager
def commit_lock(root: Path, timeout: float = 60.0) -> Iterator[None]:
    """Serialises writes to the sessions repository across wrapagent processes.

    A plain `flock(2)` on a file in the sessions root (released by the kernel
    if wrapagent dies). Not the `filelock` package here: importing it costs
    ~50 ms (it pulls in asyncio and typing), paid after every session while
    the user waits for their prompt; the trust store, off the hot path, uses it.
    """
    import fcntl

    fd = os.open(root / COMMIT_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{root / COMMIT_LOCK_NAME} is held by another session") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing the fd releases the lock


# --------------------------------------------------------------------------- validity and repair


def state(root: Path) -> str:
    """`ok`, `missing` (no `.git`), `unborn` (initialised, never committed) or `damaged`.

    Asked of git itself with the git dir named (`rev-parse`), so "valid"
    means what git will accept, not that a `.git` entry exists. A `.git`
    that is a file or a symlink (a pointer to some other repository) is
    damaged: the sessions repository is always a plain folder.
    """
    dot_git = root / ".git"
    if not os.path.lexists(dot_git):
        return "missing"
    if dot_git.is_symlink() or not dot_git.is_dir():
        return "damaged"
    if git(root, ["rev-parse", "-q", "--verify", "HEAD^{commit}"]).ok:
        return "ok"
    if git(root, ["symbolic-ref", "-q", "HEAD"]).ok and not _has_refs(root):
        return "unborn"  # `git init` done, the first commit never made (killed in between)
    return "damaged"


def _has_refs(root: Path) -> bool:
    res = git(root, ["for-each-ref", "--count=1", "--format=x"])
    return not res.ok or bool(res.stdout.strip())


def _is_ours(root: Path) -> bool:
    """A `.git` wrapagent made: its mark is there, or it lies in wrapagent's state folder."""
    from wrapagent import paths

    return (root / ".git" / paths.SESSIONS_MARK).is_file() or paths._under_state(str(root), None)


def _mark_ours(root: Path) -> None:
    """Mark the sessions repository as wrapagent's (see `paths.SESSIONS_MARK`), 0600."""
    from wrapagent import paths

    mark = root / ".git" / paths.SESSIONS_MARK
    if mark.is_file():
        return
    try:
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as f:
            f.write(b"a sessions repository of wrapagent's\n")
    except OSError:
        pass


def looks_valid(root: Path) -> bool:
    """What git itself checks before it accepts a git dir, read from disk (no fork).

    A plain `.git` folder with `objects/` and `refs/`, whose HEAD names a
    branch that exists (loose or packed). True does not prove the commit
    behind it readable: the default session_complete, which trusts this to
    spare a `rev-parse` after every session, asks git (`state`) when its
    commit fails. False always goes to `state`.
    """
    import stat

    dot_git = root / ".git"
    try:
        if not stat.S_ISDIR(os.lstat(dot_git).st_mode):
            return False
        head = (dot_git / "HEAD").read_bytes()
    except OSError:
        return False
    if not head.startswith(b"ref: refs/heads/") or not (dot_git / "objects").is_dir() \
            or not (dot_git / "refs").is_dir():
        return False
    ref = head[len(b"ref: "):].strip()
    if (dot_git / os.fsdecode(ref)).is_file():
        return True
    try:
        packed = (dot_git / "packed-refs").read_bytes()
    except OSError:
        return False
    return any(line.endswith(b" " + ref) for line in packed.splitlines())


def ensure_repo(root: Path, *, trust_disk: bool = False) -> str | None:
    """Make `root` a valid sessions repository; a note for the record when one had to be repaired.

    Call under `commit_lock`. A damaged `.git` is renamed aside
    (`.git.damaged-<time>`, kept for whoever wants its history) and a new
    repository made, whose first commit holds every record present (so
    does the first commit of one left unborn by a killed `git init`): a
    record is never deleted. A stale `index.lock` is removed.
    `trust_disk`: a repository that `looks_valid` is taken as valid
    without asking git (the caller asks `state` if a commit fails).
    """
    from wrapagent import paths

    refusal = paths.sessions_root_refusal(str(root))
    if refusal is not None:
        raise OSError(refusal)
    paths.make_private_dirs(str(root))
    found = "ok" if trust_disk and looks_valid(root) else state(root)
    note = None
    if found == "ok":
        _mark_ours(root)
        note = clear_stale_index_lock(root)
        return note
    if found == "damaged" and not _is_ours(root):
        raise OSError(f"{root / '.git'} is not a repository wrapagent made: not set aside, nothing committed")
    if found == "damaged":
        aside = root / f"{DAMAGED_PREFIX}{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        os.rename(root / ".git", aside)
        note = (f"the sessions repository's .git was damaged (git does not accept it): "
                f"kept as {aside.name}, a new one made with every record present")
    if found in ("missing", "damaged"):
        gitcmd.run(root, ["init", "-q", "--shared=0600", str(root)], check=True, timeout=GIT_TIMEOUT)
    _mark_ours(root)
    for key, value in REPO_CONFIG:
        git(root, ["config", key, value], check=True)
    _write_gitignore(root)
    if found in ("damaged", "unborn"):
        # Records written while the repository was broken: all of them, now.
        git(root, ["add", "-A", "--", "."], check=True)
        message = "sessions repository (recreated)" if found == "damaged" else "sessions repository"
        git(root, ["commit", "-q", "--allow-empty", "-m", message], check=True)
    else:
        # Only .gitignore: the repository starts clean, and each session's
        # commit holds that session's files.
        git(root, ["add", "--", ".gitignore"], check=True)
        git(root, ["commit", "-q", "--allow-empty", "-m", "sessions repository", "--", ".gitignore"],
            check=True)
    return note


def _write_gitignore(root: Path) -> None:
    path = root / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    missing = [line for line in GITIGNORE_LINES if line not in lines]
    if missing:
        path.write_text("".join(f"{line}\n" for line in (*lines, *missing)), encoding="utf-8")


LOCK_NAMES = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")
"""The lock files a `git commit` (or `config`) in the sessions repository takes, besides its branch's."""


def _lock_files(dot_git: Path) -> list[Path]:
    """The lock files present that a killed commit of ours can leave: the index, HEAD, the branch."""
    found = [dot_git / name for name in LOCK_NAMES if os.path.lexists(dot_git / name)]
    try:
        head = (dot_git / "HEAD").read_bytes()
    except OSError:
        return found
    if head.startswith(b"ref: refs/"):
        ref = os.fsdecode(head[len(b"ref: "):].strip())
        branch = dot_git / f"{ref}.lock"
        if ".." not in ref.split("/") and os.path.lexists(branch):
            found.append(branch)
    return found


def clear_stale_index_lock(root: Path) -> str | None:
    """Remove the lock files of a commit in `<root>/.git` when no git of ours can be writing them;
    a note when some were removed.

    Call under `commit_lock`: then no other wrapagent is committing here,
    and a lock file left behind is a commit that was SIGKILLed (OOM, a
    closed terminal's cgroup), which would otherwise fail every later
    commit: `index.lock` for most of the commit's time, the branch's
    `refs/heads/<name>.lock` (and HEAD's) while it moves the branch. Still,
    a git process that names the repository on its command line or works in
    the sessions root (a killed wrapagent's orphaned `git commit`, a
    configured session_complete hook, the user looking around) keeps them.
    """
    locks = _lock_files(root / ".git")
    if not locks:
        return None
    from wrapagent import portable

    names = {str(root), os.path.realpath(root)}  # as our argv spells it, as /proc/<pid>/cwd does
    if any(portable.processes_naming(name) for name in names):
        return None
    removed = []
    for lock in locks:
        try:
            lock.unlink()
        except OSError:
            continue
        removed.append(str(lock))
    if not removed:
        return None
    return f"removed stale {', '.join(removed)} (a commit there was killed half-way)"


# --------------------------------------------------------------------------- commits


def commit_session(root: Path, session_id: str, message: str, *, timeout: float = GIT_TIMEOUT) -> None:
    """The default session_complete: commit `<session_id>/` and nothing else (GitError on failure).

    `--allow-empty`: a session whose files were committed already (by a
    sweep) still gets its "complete" commit.
    """
    path = f"{session_id}/"
    deadline = time.monotonic() + timeout
    git(root, ["add", "--", path], deadline=deadline, check=True)
    git(root, ["commit", "-q", "--allow-empty", "-m", message, "--", path], deadline=deadline, check=True)


def amend_session_commit(root: Path, session_id: str) -> None:
    """Add the final record to the commit the default session_complete just made.

    Called under the commit lock right after that commit, so HEAD is this
    session's commit; `--amend -- <dir>` takes the session's files as they
    are now, in one git call (this runs after the tool exited, while the
    user waits for their prompt).
    """
    try:
        git(root, ["commit", "-q", "--amend", "--no-edit", "--", f"{session_id}/"])
    except gitcmd.GitError:
        pass  # the record on disk is complete; only its last save stays uncommitted


def commit_sessions(root: Path, session_ids: Sequence[str], message: str) -> None:
    """Commit exactly these session folders (not whatever else is staged); raises on a git failure.

    Call under `commit_lock`.
    """
    ensure_repo(root)
    dirs = [f"{sid}/" for sid in session_ids]
    git(root, ["add", "--", *dirs], check=True)
    git(root, ["commit", "-q", "-m", message, "--", *dirs])
    # "nothing to commit" (an earlier sweep committed, then died) is fine; anything left is not.
    left = git(root, ["status", "--porcelain", "--", *dirs], check=True).stdout
    if left.strip():
        raise RuntimeError(f"could not commit {', '.join(dirs)} in {root}")


def uncommitted(root: Path, session_ids: Sequence[str]) -> list[str]:
    """Which of these session folders hold changes not committed yet (one git call)."""
    if not session_ids or state(root) != "ok":
        return list(session_ids)
    res = git(root, ["status", "--porcelain", "-z", "--untracked-files=all", "--",
                     *(f"{sid}/" for sid in session_ids)])
    if not res.ok:
        return list(session_ids)
    dirty = {entry[3:].split("/", 1)[0] for entry in res.text().split("\0") if len(entry) > 3}
    return [sid for sid in session_ids if sid in dirty]


# --------------------------------------------------------------------------- the default hook


def is_default_command(command: str) -> bool:
    """Whether a session_complete command is the default (or the old default, copied into a config)."""
    from wrapagent.hooks.config_model import DEFAULT_SESSION_COMPLETE, LEGACY_DEFAULT_SESSION_COMPLETE

    return command in (DEFAULT_SESSION_COMPLETE, LEGACY_DEFAULT_SESSION_COMPLETE)


def run_default_session_complete(hook, ctx, *, log: Callable[[str], None],
                                 warn: Callable[[str], None] | None = None):
    """The default session_complete, run here instead of `sh -c`: its HookResult.

    The command text (`config_model.DEFAULT_SESSION_COMPLETE`) says what it
    does; running it in-process means no shell, and every git call through
    gitcmd, so nothing inherited from a git hook reaches it. The repository
    was checked on disk only (`ensure_repo(trust_disk=True)`): a commit that
    fails asks git whether the repository is damaged, repairs it and tries
    once more.
    """
    from wrapagent.hooks.config_model import DEFAULT_SESSION_COMPLETE
    from wrapagent.hooks.hook_runner import HookResult, hook_variables, substitute

    started = time.monotonic()
    root = Path(ctx.sessions_root)
    command = substitute(DEFAULT_SESSION_COMPLETE, hook_variables(ctx))
    message = f"session {ctx.session_id} complete"
    try:
        try:
            commit_session(root, ctx.session_id, message, timeout=hook.timeout_secs)
        except gitcmd.GitTimeout:
            raise
        except gitcmd.GitError:
            if state(root) == "ok":
                raise
            note = ensure_repo(root)
            if note and warn is not None:
                warn(note)
            commit_session(root, ctx.session_id, message,
                           timeout=max(1.0, hook.timeout_secs - (time.monotonic() - started)))
    except gitcmd.GitTimeout as exc:
        log(f"[session_complete] {exc}")
        return HookResult("session_complete", "lifecycle", command, None, time.monotonic() - started,
                          True, f"timed out after {hook.timeout_secs:g}s")
    except (gitcmd.GitError, OSError) as exc:
        log(f"[session_complete] {exc}")
        code = getattr(exc, "code", None)
        return HookResult("session_complete", "lifecycle", command, 1 if code is None else code,
                          time.monotonic() - started, False, str(exc),
                          stderr_head=getattr(exc, "stderr", b"")[:4096])
    return HookResult("session_complete", "lifecycle", command, 0, time.monotonic() - started, False, None)
