"""The one way wrapagent runs git: the repository named, git's location variables gone, no hooks.

wrapagent is often started *by* git (a `pre-commit` or `prepare-commit-msg`
hook calling a wrapped `claude -p`, `git rebase -x`, a linked worktree, a
dotfiles manager). git then exports variables such as `GIT_DIR` and
`GIT_INDEX_FILE` that point every git process below it at the *user's*
repository and index. A git call that inherits them writes wrapagent's
files into the user's index and commits onto the user's branch. So every
git process wrapagent starts goes through `run()`, which:

- removes git's location and per-invocation variables (`LOCATION_VARS`;
  `git rev-parse --local-env-vars` lists git's own, a test keeps us a
  superset of it) and the identity/date variables a commit would take;
- names its repository: `--git-dir`/`--work-tree` when the caller knows them
  (the sessions repository), else `-C <folder>` with discovery starting
  there and nothing inherited to override it;
- never runs the user's hooks: `-c core.hooksPath=/dev/null -c core.fsmonitor=false` on
  the command line of each call (nothing is written into any config file);
- never prompts: stdin is /dev/null, `GIT_TERMINAL_PROMPT=0`, no askpass,
  its own session (no controlling terminal to open), an editor that does nothing;
- with a timeout, kills git's whole process group (a clean filter, a
  credential helper, `git gc --auto`) when time is up.

Import-light on purpose (only `os` at import time): it is loaded at the
session's end, never before the tool starts.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping, Sequence

LOCATION_VARS = frozenset((
    # `git rev-parse --local-env-vars` (git 2.39): what makes git act on another repository
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
    # set by git for hooks and sub-commands, or naming another repository's parts
    "GIT_NAMESPACE", "GIT_QUARANTINE_PATH", "GIT_INDEX_VERSION", "GIT_REFLOG_ACTION",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
    # a commit takes its identity and dates from these before any config
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
))
"""Variables removed from every git call's environment.

Not removed: GIT_CONFIG_GLOBAL / GIT_CONFIG_SYSTEM / GIT_CONFIG_NOSYSTEM
(the user's choice of config files, like HOME; git never sets them for a
hook), GIT_CEILING_DIRECTORIES (the user's own limit on discovery), GIT_EXEC_PATH (which
git installation runs), GIT_TRACE*.
"""
LOCATION_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_PUSH_OPTION_")
"""`git -c` passed down as GIT_CONFIG_COUNT + KEY_n/VALUE_n; a pre-receive hook's push options."""

NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
"""Every call: `<hooksPath>/<name>` never exists, so no hook of the user's runs (not even
`post-index-change` or `reference-transaction` during a snapshot); nor the fsmonitor hook,
a command a repository's own `.git/config` names (`core.fsmonitor = "…"`, in a project that
came as an archive rather than a clone), which `git status` and a snapshot's `git add` would
run on every start. (Clean filters still run: LFS needs them; see docs/security.md, trust.)"""

IDENTITY = {"GIT_AUTHOR_NAME": "wrapagent", "GIT_AUTHOR_EMAIL": "wrapagent@localhost",
            "GIT_COMMITTER_NAME": "wrapagent", "GIT_COMMITTER_EMAIL": "wrapagent@localhost"}
"""Who wrapagent's own commits (sessions repository, checkpoints) are by: no global identity needed."""

_QUIET = {
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_OPTIONAL_LOCKS": "0",  # `status` must not rewrite the user's index
    "LC_ALL": "C",  # untranslated output to parse
}


class GitError(Exception):
    """git could not run, or (with `check`) exited non-zero; the message is for the user."""

    def __init__(self, message: str, *, code: int | None = None, stderr: bytes = b"") -> None:
        super().__init__(message)
        self.code = code
        self.stderr = stderr


class GitTimeout(GitError, TimeoutError):
    """git did not finish in time; its process group was killed.

    `started` is False when no time was left to start it at all; `removed`
    lists the temporary files the killed git left and that were removed.
    """

    def __init__(self, message: str, *, started: bool = True, removed: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.started = started
        self.removed = list(removed)


class Result:
    """What one git call produced (a plain class: NamedTuple costs import time)."""

    __slots__ = ("argv", "code", "stdout", "stderr", "truncated")

    def __init__(self, argv: list[str], code: int, stdout: bytes, stderr: bytes, truncated: bool) -> None:
        self.argv = argv
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.truncated = truncated  # stdout went over `limit`; git was killed there

    @property
    def returncode(self) -> int:  # the subprocess.CompletedProcess spelling
        return self.code

    @property
    def ok(self) -> bool:
        return self.code == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    def last_error_line(self) -> str:
        """The line that says why: git's last `fatal:`/`error:` line (a hint such as "remove the
        file manually to continue." may follow it), else its last line."""
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        said = [line for line in lines if line.startswith(("fatal: ", "error: "))]
        return said[-1] if said else lines[-1] if lines else f"exit {self.code}"


def is_location_var(name: str) -> bool:
    return name in LOCATION_VARS or name.startswith(LOCATION_PREFIXES)


def env(base: Mapping[str, str] | None = None, *, index: str | os.PathLike | None = None,
        identity: bool = False, interactive: bool = False,
        extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git call: `base` (default: ours) without git's location variables.

    `index` is the one way to give git another index (a private one for
    snapshots). `identity` sets wrapagent's author and committer.
    `interactive` keeps the user's pager, editor-less but locale intact, for
    a git that shows the user something on their terminal.
    """
    out = {k: v for k, v in (os.environ if base is None else base).items() if not is_location_var(k)}
    if interactive:
        out.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR=":", GIT_OPTIONAL_LOCKS="0")
    else:
        out.update(_QUIET)
    if identity:
        out.update(IDENTITY)
    if index is not None:
        out["GIT_INDEX_FILE"] = os.fspath(index)
    if extra:
        out.update(extra)
    return out


def argv(repo: str | os.PathLike, args: Sequence[str], *, git_dir: str | os.PathLike | None = None,
         work_tree: str | os.PathLike | None = None, config: Sequence[str] = ()) -> list[str]:
    """`git -C repo [--git-dir … --work-tree …] -c core.hooksPath=/dev/null [-c …] args…`.

    `config` holds extra `key=value` settings for this one call.
    """
    out = ["git", "-C", os.fspath(repo)]
    if git_dir is not None:
        out.append(f"--git-dir={os.fspath(git_dir)}")
        # With --git-dir and no --work-tree git takes the current folder as
        # the work tree: name it, so it is never a guess.
        out.append(f"--work-tree={os.fspath(repo if work_tree is None else work_tree)}")
    elif work_tree is not None:
        out.append(f"--work-tree={os.fspath(work_tree)}")
    out += NO_HOOKS
    for setting in config:
        out += ("-c", setting)
    out += args
    return out


def run(repo: str | os.PathLike, args: Sequence[str], *, git_dir: str | os.PathLike | None = None,
        work_tree: str | os.PathLike | None = None, index: str | os.PathLike | None = None,
        timeout: float | None = None, deadline: float | None = None, check: bool = False,
        input: bytes | None = None, limit: int | None = None, identity: bool = False,
        config: Sequence[str] = (), base_env: Mapping[str, str] | None = None,
        interactive: bool = False) -> Result:
    """Run one git command on `repo` (a folder: `-C`; plus `git_dir`/`work_tree` when known).

    `timeout` seconds or `deadline` (time.monotonic()) bound it: past that,
    git's process group is killed and GitTimeout raised. `check` raises
    GitError on a non-zero exit. `limit` keeps at most that many bytes of
    stdout (then kills git; `Result.truncated`). A git that cannot start is
    a GitError with `code` None. `interactive` runs git on the user's
    terminal (stdout/stderr inherited, same session, their pager): nothing
    captured.
    """
    import time

    if deadline is not None:
        left = deadline - time.monotonic()
        timeout = left if timeout is None else min(timeout, left)
    if timeout is not None and timeout <= 0:
        raise GitTimeout(f"`git {_name(args)}`: no time left", started=False)
    cmd = argv(repo, args, git_dir=git_dir, work_tree=work_tree, config=config)
    environ = env(base_env, index=index, identity=identity, interactive=interactive)
    label = f"git {_name(args)}"
    if interactive:
        return _run_interactive(cmd, environ, timeout, label)
    result = _run_captured(cmd, environ, timeout, input, limit, label)
    if check and result.code != 0:
        raise GitError(f"`git {_name(args)}` failed: {result.last_error_line()}", code=result.code,
                       stderr=result.stderr)
    return result


def _name(args: Sequence[str]) -> str:
    """The sub-command's name for messages (skipping `-c x=y` and other global options)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return " ".join(args[:1])


TEMP_PREFIXES = ("tmp_pack_", "tmp_idx_", "tmp_rev_", "tmp_obj_")


def _stop_and_list_temp_files(proc) -> list[str]:
    """Stop git's group at its time limit and list the temporary files it was writing.

    git removes its `tmp_pack_*` (a large untracked file is streamed into
    one: tens of MB per attempt) and `*.lock` files when it exits, but not
    when SIGKILLed. The group is stopped first, then the files it holds open
    are listed (exactly its own: never a name or a time guess, which could
    hit a concurrent `git fetch` of the user's); child_process kills it next,
    and `_remove` deletes them once it is gone.
    """
    import signal

    from wrapagent import child_process

    child_process.signal_group(proc.pid, signal.SIGSTOP)
    try:
        from wrapagent import portable

        return [path for path in portable.group_open_files(proc.pid)
                if os.path.basename(path).startswith(TEMP_PREFIXES) or path.endswith(".lock")]
    except Exception:  # best effort: the kill matters more
        return []


def _remove(paths: list[str]) -> list[str]:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass
    return paths


def _start(cmd: list[str], environ: dict[str, str], *, stdin, stdout, stderr, new_session: bool):
    import subprocess

    from wrapagent.child_process import EmptySignalMask

    try:
        with EmptySignalMask():  # git starts with no signal blocked, whichever thread starts it
            return subprocess.Popen(cmd, env=environ, stdin=stdin, stdout=stdout, stderr=stderr,
                                    start_new_session=new_session, close_fds=True)
    except (OSError, ValueError) as exc:
        raise GitError(f"cannot run git: {exc}") from None


def _run_captured(cmd: list[str], environ: dict[str, str], timeout: float | None,
                  input: bytes | None, limit: int | None, label: str) -> Result:
    """git in its own group (child_process.run): past `limit` bytes of stdout it is stopped and
    the result `truncated`; at the timeout its group is stopped, its temporary files listed, then
    it is killed and they are removed."""
    from wrapagent import child_process

    doomed: list[str] = []
    try:
        done = child_process.run(cmd, timeout=timeout, input=input, env=environ, limit=limit,
                                 before_kill=lambda proc: doomed.extend(_stop_and_list_temp_files(proc)))
    except child_process.ChildTimeout:
        removed = _remove(doomed)
        raise GitTimeout(f"`{label}` took longer than {timeout:.1f} s"
                         + (f"; removed {len(removed)} temporary file(s) it left" if removed else ""),
                         removed=removed) from None
    except (OSError, ValueError) as exc:
        raise GitError(f"cannot run git: {exc}") from None
    if done.truncated:
        return Result(cmd, 0, done.stdout, done.stderr, True)
    return Result(cmd, done.code, done.stdout, done.stderr, False)


def _run_interactive(cmd: list[str], environ: dict[str, str], timeout: float | None, label: str) -> Result:
    import subprocess

    proc = _start(cmd, environ, stdin=subprocess.DEVNULL, stdout=None, stderr=None, new_session=False)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise GitTimeout(f"`{label}` took longer than {timeout:.1f} s") from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return Result(cmd, code, b"", b"", False)
