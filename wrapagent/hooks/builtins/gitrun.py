"""Running git for the built-ins: quietly, without a terminal, within a deadline.

Built-ins run before the first user message is sent, on the user's
repository, so a git call must never prompt, never hang and never describe
the wrong tree:

- git runs through wrapagent/gitcmd.py: its own session (no controlling
  terminal, so no `/dev/tty` password prompt and no share of our SIGINT),
  stdin from /dev/null, prompts disabled, variables such as GIT_DIR
  removed, none of the user's hooks, and a deadline; `run()` does the same
  for other programs (`jj`);
- a failure (no repository, no git, a timeout) is None, never an exception;
- repository discovery (`.git`, the per-worktree git directory, `.jj`) reads
  the disk instead of forking git.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class Record:
    """A plain record: a NamedTuple class costs ~0.3 ms of import time each."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values):
            setattr(self, name, value)


_GIT_CONFIG = (
    "core.quotepath=false",
    "color.ui=false",
    "log.showSignature=false",  # gpg would be slow and may prompt
)


def quiet_env() -> dict[str, str]:
    """Our environment without git's location variables, with prompts and pagers off (wrapagent/gitcmd.py)."""
    from wrapagent import gitcmd

    return gitcmd.env()


class Out(Record):
    __slots__ = ("code", "text", "truncated")
    code: int
    text: str
    truncated: bool  # output exceeded `limit` and the process was killed


def run(
    argv: Sequence[str], cwd: Path, deadline: float, *, limit: int | None = None
) -> Out | None:
    """Run a program other than git (`jj`) without a terminal; None when it cannot run or misses the deadline.

    Reads at most `limit` bytes (then kills the process) so a huge diff costs
    what we keep, not what git could print. Its own session means no
    controlling terminal: nothing can prompt on /dev/tty or get our SIGINT.
    """
    import time

    from wrapagent import child_process

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        done = child_process.run(argv, timeout=remaining, cwd=cwd, env=quiet_env(), limit=limit)
    except (OSError, ValueError):  # cannot start, or the deadline (ChildTimeout is an OSError)
        return None
    return Out(0 if done.truncated else done.code, done.stdout.decode("utf-8", "replace"), done.truncated)


def git(
    args: Sequence[str], root: Path, deadline: float, *, limit: int | None = None
) -> str | None:
    """Stdout of a successful git command, else None (not a repo, no git, timeout).

    Through wrapagent/gitcmd.py like every git call: discovery from `root`
    with GIT_DIR & co. removed, none of the user's hooks, no prompt, and
    at most `limit` bytes read (then git is killed).
    """
    from wrapagent import gitcmd

    try:
        out = gitcmd.run(root, args, deadline=deadline, limit=limit, config=_GIT_CONFIG)
    except gitcmd.GitError:  # includes the timeout
        return None
    if out.code != 0:
        return None
    return out.stdout.decode("utf-8", "replace")


def find_dot_git(start: Path) -> Path | None:
    """`.git` (dir or worktree file) of the repository containing `start`."""
    for candidate in (start, *start.parents):
        dot_git = candidate / ".git"
        if dot_git.exists():
            return dot_git
    return None


def git_dir(root: Path) -> Path | None:
    """The per-worktree git directory, read from disk (no fork)."""
    dot_git = find_dot_git(root)
    if dot_git is None:
        return None
    if dot_git.is_dir():
        return dot_git
    try:
        line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = Path(line[len("gitdir:"):].strip())
    return target if target.is_absolute() else (dot_git.parent / target)


def is_jj_repo(root: Path) -> bool:
    """True inside a Jujutsu repository (a `.jj` directory before any `.git`)."""
    for candidate in (root, *root.parents):
        if (candidate / ".jj").is_dir():
            return True
        if (candidate / ".git").exists():
            return False
    return False
