"""In-process prompt guards ("built-ins"): git facts, environment, project files.

A `[[prompt_guard]]` entry with `builtin = "<name>"` runs one of these instead
of a shell command. Each returns the body of one `<prompt-guard>` block, or ""
when there is nothing worth telling the agent.

Design constraints, and why:

- Import-light: wrapagent is aliased to `codex`, so `subprocess`, `select`,
  `json`, ... are imported inside the functions that need them.
- Fast: built-ins run before the first user message is sent. Each one forks git
  at most a few times (`git status --porcelain=v2 --branch -z` carries branch,
  upstream, ahead/behind and the file status in one call) and reads small
  files such as `.git/MERGE_HEAD` directly instead of asking git.
- Never prompts, never raises for git problems: git runs in its own session
  (no controlling terminal, so no `/dev/tty` password prompt), with stdin from
  /dev/null, prompts disabled and a deadline; outside a repository, with git
  missing, or on a timeout, the git built-ins return "".
- Own caps: every body respects its `max_bytes`, cut at a line boundary with a
  `… (truncated)` line, so one guard cannot crowd out the others in the
  32 KB block budget.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from datetime import datetime

    from wrapagent.hooks.context import GuardContext

BUILTIN_NAMES: tuple[str, ...] = (
    "branch_protection",
    "dirty_tree",
    "git_status",
    "git_diff",
    "recent_commits",
    "environment",
    "date",
    "directory_listing",
    "prompt_files",
)

TRUNCATED = "… (truncated)"

# --------------------------------------------------------------------------- #
# Argument validation
# --------------------------------------------------------------------------- #

_REQUIRED = object()


class _Record:
    """A plain record: a NamedTuple class costs ~0.3 ms of import time each."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values):
            setattr(self, name, value)


class _Opt(_Record):
    __slots__ = ("kind", "default", "choices")
    kind: str  # "pos_int" | "bool" | "str_list" | "path_list" | "choice"
    default: object
    choices: tuple[str, ...]

    def __init__(self, kind: str, default: object, choices: tuple[str, ...] = ()) -> None:
        super().__init__(kind, default, choices)


_SCHEMA: dict[str, dict[str, _Opt]] = {
    "branch_protection": {
        "branches": _Opt("str_list", ("main", "master", "dev", "develop")),
    },
    "dirty_tree": {
        "always": _Opt("bool", False),
        "max_bytes": _Opt("pos_int", 4000),
    },
    "git_status": {
        "max_bytes": _Opt("pos_int", 4000),
    },
    "git_diff": {
        "mode": _Opt("choice", "stat", ("stat", "full")),
        "max_bytes": _Opt("pos_int", 8000),
    },
    "recent_commits": {
        "count": _Opt("pos_int", 10),
        "max_bytes": _Opt("pos_int", 4000),
    },
    "environment": {},
    "date": {},
    "directory_listing": {
        "depth": _Opt("pos_int", 2),
        "max_entries": _Opt("pos_int", 200),
    },
    "prompt_files": {
        "files": _Opt("path_list", _REQUIRED),
        "max_bytes": _Opt("pos_int", 16000),
    },
}


def _show(value: object) -> str:
    """A value as the user wrote it in TOML (strings quoted, booleans lower case)."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _check(key: str, opt: _Opt, value: object) -> object:
    """One option, converted to its canonical form; ValueError names the key."""
    where = f"args.{key}"
    if opt.kind == "pos_int":
        # bool is an int subclass; `max_bytes = true` is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{where}: expected a positive integer, got {_show(value)}")
        return value
    if opt.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {_show(value)}")
        return value
    if opt.kind == "choice":
        if value not in opt.choices:
            wanted = " or ".join(f'"{c}"' for c in opt.choices)
            raise ValueError(f"{where}: expected {wanted}, got {_show(value)}")
        return value
    # Lists of strings.
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{where}: expected a list of strings, got {_show(value)}")
    items: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ValueError(f"{where}[{i}]: expected a non-empty string, got {_show(item)}")
        if opt.kind == "path_list" and not _is_inside_path(item):
            raise ValueError(
                f"{where}[{i}]: expected a path relative to the project root "
                f"(no leading / and no ..), got {_show(item)}"
            )
        items.append(item)
    if opt.kind == "path_list" and not items:
        raise ValueError(f"{where}: expected at least one file name")
    return tuple(items)


def _is_inside_path(name: str) -> bool:
    """True for a relative path that cannot climb out of its base by itself."""
    if os.path.isabs(name) or name.startswith("~"):
        return False
    return ".." not in name.replace("\\", "/").split("/")


def validate_args(name: str, args: Mapping[str, object]) -> dict[str, object]:
    """Return args with defaults filled; raise ValueError naming the bad key.

    Called by the config loader so mistakes surface in `config check`, not in
    the middle of a session; `run_builtin` calls it again so it never works on
    unchecked input. Lists come back as tuples (the config is frozen).
    """
    schema = _SCHEMA.get(name)
    if schema is None:
        raise ValueError(f'unknown built-in guard "{name}"; known: {", ".join(BUILTIN_NAMES)}')
    if not isinstance(args, Mapping):
        raise ValueError(f"args: expected a table, got {_show(args)}")
    for key in args:
        if key not in schema:
            known = ", ".join(schema) if schema else "none"
            raise ValueError(f'args.{key}: unknown option for built-in "{name}"; known: {known}')
    result: dict[str, object] = {}
    for key, opt in schema.items():
        if key in args:
            result[key] = _check(key, opt, args[key])
        elif opt.default is _REQUIRED:
            raise ValueError(f'args.{key}: required by built-in "{name}"')
        else:
            result[key] = opt.default
    return result


# --------------------------------------------------------------------------- #
# Running commands
# --------------------------------------------------------------------------- #

# Variables that point git at another repository; inherited from a git hook or
# a parent tool they would make us describe the wrong tree.
_GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_NAMESPACE",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
)

_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",  # status must not rewrite the user's index
    "LC_ALL": "C",  # stable, untranslated output to parse
}

_GIT_FLAGS = (
    "-c", "core.quotepath=false",
    "-c", "color.ui=false",
    "-c", "log.showSignature=false",  # gpg would be slow and may prompt
    "--no-pager",
)


def _quiet_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env.update(_QUIET_ENV)
    return env


class _Out(_Record):
    __slots__ = ("code", "text", "truncated")
    code: int
    text: str
    truncated: bool  # output exceeded `limit` and the process was killed


def _run(
    argv: Sequence[str], cwd: Path, deadline: float, *, limit: int | None = None
) -> _Out | None:
    """Run argv without a terminal; None when it cannot run or misses the deadline.

    Reads at most `limit` bytes (then kills the process) so a huge diff costs
    what we keep, not what git could print. Its own session means no
    controlling terminal: nothing can prompt on /dev/tty or get our SIGINT.
    """
    import selectors
    import signal
    import subprocess
    import time

    if deadline - time.monotonic() <= 0:
        return None
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_quiet_env(),
            start_new_session=True,
        )
    except (OSError, ValueError):
        return None
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    size = 0
    truncated = False
    # A selector, not select.select: that fails on descriptors above 1023.
    selector = selectors.DefaultSelector()
    try:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not selector.select(remaining):
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if limit is not None and size > limit:
                truncated = True
                break
        if truncated:
            code = 0
        else:
            code = proc.wait(timeout=max(0.05, deadline - time.monotonic()))
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        selector.close()
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        proc.stdout.close()
    return _Out(code, b"".join(chunks).decode("utf-8", "replace"), truncated)


def _git(
    args: Sequence[str], root: Path, deadline: float, *, limit: int | None = None
) -> str | None:
    """Stdout of a successful git command, else None (not a repo, no git, timeout)."""
    out = _run(("git", *_GIT_FLAGS, *args), root, deadline, limit=limit)
    if out is None or out.code != 0:
        return None
    return out.text


# --------------------------------------------------------------------------- #
# Small shared helpers
# --------------------------------------------------------------------------- #


def cap_text(text: str, max_bytes: int) -> str:
    """`text` within `max_bytes` UTF-8 bytes, cut at a line boundary.

    The `… (truncated)` line counts against the cap, so the result never
    exceeds it (unless the cap is smaller than the marker itself).
    """
    text = text.rstrip("\n")
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    budget = max_bytes - len(TRUNCATED.encode("utf-8")) - 1
    if budget <= 0:
        return TRUNCATED
    cut = data[:budget]
    newline = cut.rfind(b"\n")
    if newline >= 0:
        cut = cut[:newline]
    kept = cut.decode("utf-8", "ignore").rstrip("\n")
    return f"{kept}\n{TRUNCATED}" if kept else TRUNCATED


def _find_dot_git(start: Path) -> Path | None:
    """`.git` (dir or worktree file) of the repository containing `start`."""
    for candidate in (start, *start.parents):
        dot_git = candidate / ".git"
        if dot_git.exists():
            return dot_git
    return None


def _git_dir(root: Path) -> Path | None:
    """The per-worktree git directory, read from disk (no fork)."""
    dot_git = _find_dot_git(root)
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


def _read_first_line(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return fh.readline().strip()
    except OSError:
        return ""


def _operation_in_progress(root: Path) -> str:
    """What to tell the agent about an unfinished merge/rebase/…, or ""."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return ""
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        if (git_dir / "rebase-apply" / "applying").exists():
            return (
                "A `git am` is in progress: resolve conflicts, `git add` them, "
                "then `git am --continue` (or `git am --abort`)."
            )
        return (
            "A rebase is in progress: resolve conflicts, `git add` them, "
            "then `git rebase --continue` (or `git rebase --abort`)."
        )
    for marker, verb in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if (git_dir / marker).exists():
            finish = "`git commit`" if verb == "merge" else f"`git {verb} --continue`"
            return (
                f"A {verb} is in progress: resolve conflicts, `git add` them, "
                f"then {finish} (or `git {verb} --abort`)."
            )
    if (git_dir / "BISECT_LOG").exists():
        return "A `git bisect` is in progress (`git bisect reset` ends it)."
    return ""


def _rebasing_branch(root: Path) -> str:
    """The branch being rebased (HEAD is detached meanwhile), or ""."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return ""
    for sub in ("rebase-merge", "rebase-apply"):
        ref = _read_first_line(git_dir / sub / "head-name")
        if ref.startswith("refs/heads/"):
            return ref[len("refs/heads/"):]
    return ""


def _is_jj_repo(root: Path) -> bool:
    for candidate in (root, *root.parents):
        if (candidate / ".jj").is_dir():
            return True
        if (candidate / ".git").exists():
            return False
    return False


# --------------------------------------------------------------------------- #
# git status --porcelain=v2 --branch -z
# --------------------------------------------------------------------------- #


class _Status(_Record):
    __slots__ = (
        "oid", "head", "upstream", "ahead", "behind",
        "lines", "staged", "unstaged", "untracked", "conflicted",
    )
    oid: str | None  # None: no commits yet
    head: str | None  # None: detached HEAD
    upstream: str | None
    ahead: int | None  # None: no upstream, or upstream gone
    behind: int | None
    lines: list[str]  # `git status --short` style lines
    staged: int
    unstaged: int
    untracked: int
    conflicted: int


def _parse_status(out: str) -> _Status:
    """Parse NUL-separated porcelain v2 (no quoting to undo, renames unambiguous)."""
    oid: str | None = None
    head: str | None = None
    upstream: str | None = None
    ahead = behind = None
    lines: list[str] = []
    staged = unstaged = untracked = conflicted = 0
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[0]
        if rec.startswith("# "):
            key, _, value = rec[2:].partition(" ")
            if key == "branch.oid":
                oid = None if value == "(initial)" else value
            elif key == "branch.head":
                head = None if value == "(detached)" else value
            elif key == "branch.upstream":
                upstream = value
            elif key == "branch.ab":
                a, _, b = value.partition(" ")
                try:
                    ahead, behind = int(a.lstrip("+")), int(b.lstrip("-"))
                except ValueError:
                    pass
        elif kind == "1":
            parts = rec.split(" ", 8)
            xy = parts[1]
            lines.append(f"{_short_xy(xy)} {parts[-1]}")
            staged += xy[0] != "."
            unstaged += xy[1] != "."
        elif kind == "2":
            parts = rec.split(" ", 9)
            xy = parts[1]
            orig = records[i] if i < len(records) else ""
            i += 1
            lines.append(f"{_short_xy(xy)} {orig} -> {parts[-1]}")
            staged += xy[0] != "."
            unstaged += xy[1] != "."
        elif kind == "u":
            parts = rec.split(" ", 10)
            lines.append(f"{parts[1]} {parts[-1]}")
            conflicted += 1
        elif kind == "?":
            lines.append(f"?? {rec[2:]}")
            untracked += 1
    return _Status(oid, head, upstream, ahead, behind, lines, staged, unstaged, untracked, conflicted)


def _short_xy(xy: str) -> str:
    return xy.replace(".", " ")


def _status(root: Path, deadline: float) -> _Status | None:
    out = _git(("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"), root, deadline)
    return None if out is None else _parse_status(out)


def _counts(st: _Status) -> str:
    parts = [
        f"{n} {label}"
        for n, label in (
            (st.conflicted, "conflicted"),
            (st.staged, "staged"),
            (st.unstaged, "unstaged"),
            (st.untracked, "untracked"),
        )
        if n
    ]
    return ", ".join(parts)


def _upstream_text(st: _Status) -> str:
    if st.upstream is None:
        return "none"
    if st.ahead is None:
        return f"{st.upstream} (gone: the remote branch no longer exists)"
    if not st.ahead and not st.behind:
        return f"{st.upstream} (up to date)"
    rel = []
    if st.ahead:
        rel.append(f"ahead {st.ahead}")
    if st.behind:
        rel.append(f"behind {st.behind}")
    return f"{st.upstream} ({', '.join(rel)})"


def _head_text(st: _Status, root: Path) -> str:
    if st.head is not None:
        suffix = " (no commits yet)" if st.oid is None else ""
        return f'Branch: "{st.head}"{suffix}'
    short = (st.oid or "")[:12]
    rebasing = _rebasing_branch(root)
    extra = f' (rebasing "{rebasing}")' if rebasing else ""
    return f"HEAD: detached at {short}{extra}"


# --------------------------------------------------------------------------- #
# The built-ins
# --------------------------------------------------------------------------- #


def _branch_protection(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Warn before the agent commits on a shared branch; one cheap git call."""
    from fnmatch import fnmatchcase

    if _find_dot_git(ctx.project_root) is None:
        return ""  # not a repository: no fork at all
    branch = _git(("symbolic-ref", "--quiet", "--short", "HEAD"), ctx.project_root, deadline)
    if not branch:
        return ""  # detached HEAD, not a repository, or no git
    branch = branch.strip()
    patterns = args["branches"]
    assert isinstance(patterns, tuple)
    if not any(fnmatchcase(branch, p) for p in patterns):
        return ""
    return (
        f'You are on branch "{branch}", which is protected. Do not commit to it: '
        "create a new branch first (git switch -c <name>) and commit there."
    )


def _dirty_tree(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """On resume, point at work left uncommitted or unpushed so it is not lost."""
    if not (ctx.is_resume or args["always"]):
        return ""
    root = ctx.project_root
    st = _status(root, deadline) if _find_dot_git(root) is not None else None
    if st is None:
        return ""
    sections: list[str] = []
    operation = _operation_in_progress(root)
    if operation:
        sections.append(operation)
    if st.lines:
        sections.append(f"Uncommitted changes ({_counts(st)}):\n" + "\n".join(st.lines))
    unpushed = _unpushed(st, root, deadline)
    if unpushed:
        sections.append(unpushed)
    if not sections:
        return ""
    if ctx.is_resume:
        intro = "This session resumes earlier work; the repository has work that is not saved yet."
    else:
        intro = "The repository has work that is not saved yet."
    advice = (
        "Check it before starting something new: do not discard it; commit it "
        "(on a feature branch) and push when it is ready."
    )
    max_bytes = args["max_bytes"]
    assert isinstance(max_bytes, int)
    text = "\n".join([intro, *sections])
    room = max_bytes - len(advice.encode()) - 1
    if room < 2 * len(intro.encode()):
        return cap_text(f"{text}\n{advice}", max_bytes)  # a tiny cap: no room to keep the advice
    return f"{cap_text(text, room)}\n{advice}"


def _unpushed(st: _Status, root: Path, deadline: float) -> str:
    """Commits that exist only here: ahead of upstream, or on no remote/branch."""
    fmt = "--format=%h %s"
    if st.oid is None:
        return ""
    if st.head is None:
        # Commits made on a detached HEAD are lost when the agent switches away.
        out = _git(("log", fmt, "-n", "11", "HEAD", "--not", "--branches", "--remotes"), root, deadline)
        if not out or not out.strip():
            return ""
        return (
            _commit_list("Commits on the detached HEAD that are on no branch", out)
            + "\nCreate a branch to keep them (git switch -c <name>)."
        )
    if st.upstream is not None:
        if not st.ahead:
            return ""
        out = _git(("log", fmt, "-n", "10", "@{upstream}..HEAD"), root, deadline) or ""
        head = f'Unpushed commits on "{st.head}" ({st.ahead} ahead of {st.upstream})'
        more = f"\n… ({st.ahead - 10} more)" if st.ahead > 10 else ""
        return head + (":\n" + out.rstrip("\n") + more if out.strip() else ".")
    remotes = _git(("remote",), root, deadline)
    if not remotes or not remotes.strip():
        return ""  # a local-only repository: everything is "unpushed", say nothing
    out = _git(("log", fmt, "-n", "11", "HEAD", "--not", "--remotes"), root, deadline)
    if not out or not out.strip():
        return ""
    return _commit_list(f'Commits on "{st.head}" (no upstream) that are on no remote', out)


def _commit_list(title: str, out: str, shown: int = 10) -> str:
    commits = out.rstrip("\n").split("\n")
    count = f"{shown}+" if len(commits) > shown else str(len(commits))
    return f"{title} ({count}):\n" + "\n".join(commits[:shown])


def _git_status(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Branch, upstream and short status from a single `git status` call."""
    root = ctx.project_root
    st = _status(root, deadline) if _find_dot_git(root) is not None else None
    if st is None:
        return _jj_status(root, deadline, args) if _is_jj_repo(root) else ""
    lines = [_head_text(st, root)]
    if st.head is not None:
        lines.append(f"Upstream: {_upstream_text(st)}")
    if _is_jj_repo(root):
        lines.append(
            "Version control: Jujutsu (jj), colocated with git; prefer jj commands "
            "(a detached git HEAD is normal here)."
        )
    operation = _operation_in_progress(root)
    if operation:
        lines.append(operation)
    if st.lines:
        lines.append(f"Changes ({_counts(st)}):")
        lines.extend(st.lines)
    else:
        lines.append("Working tree clean.")
    max_bytes = args["max_bytes"]
    assert isinstance(max_bytes, int)
    return cap_text("\n".join(lines), max_bytes)


def _jj_status(root: Path, deadline: float, args: Mapping[str, object]) -> str:
    """A Jujutsu repository without git: show `jj status` as-is (best effort)."""
    out = _run(("jj", "--no-pager", "--color", "never", "status"), root, deadline, limit=64 * 1024)
    if out is None or out.code != 0 or not out.text.strip():
        return ""
    max_bytes = args["max_bytes"]
    assert isinstance(max_bytes, int)
    return cap_text("Version control: Jujutsu (jj).\n" + out.text, max_bytes)


_EMPTY_TREE_ARGS = ("hash-object", "-t", "tree", "/dev/null")


def _git_diff(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Uncommitted changes to tracked files (staged and unstaged) against HEAD."""
    root = ctx.project_root
    max_bytes = args["max_bytes"]
    assert isinstance(max_bytes, int)
    if _find_dot_git(root) is None:
        return ""
    base = "HEAD"
    if _git(("rev-parse", "--verify", "--quiet", "HEAD"), root, deadline) is None:
        # No commits yet: diff against the empty tree instead.
        empty = _git(_EMPTY_TREE_ARGS, root, deadline)
        if not empty:
            return ""
        base = empty.strip()
    common = ("diff", "--no-ext-diff", "--no-textconv", "--submodule=short", base)
    if args["mode"] == "stat":
        out = _git((*common, "--stat=200,150", "--stat-graph-width=20", "--summary"), root, deadline, limit=max_bytes * 2)
        title = "Uncommitted changes to tracked files (diffstat against HEAD; untracked files not shown):"
    else:
        out = _git(common, root, deadline, limit=max_bytes * 2)
        title = "Uncommitted changes to tracked files (diff against HEAD; untracked files not shown):"
    if not out or not out.strip():
        return ""
    if base != "HEAD":
        title = title.replace("against HEAD", "against an empty tree: no commits yet")
    return cap_text(f"{title}\n{out}", max_bytes)


def _recent_commits(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """The last few commits with dates and refs, so the agent knows recent history."""
    count = args["count"]
    max_bytes = args["max_bytes"]
    assert isinstance(count, int) and isinstance(max_bytes, int)
    if _find_dot_git(ctx.project_root) is None:
        return ""
    out = _git(
        ("log", "-n", str(count), "--date=short", "--format=%h%x1f%ad%x1f%an%x1f%D%x1f%s", "HEAD"),
        ctx.project_root,
        deadline,
        limit=max(max_bytes * 2, 64 * 1024),
    )
    if not out or not out.strip():
        return ""
    lines = []
    for row in out.rstrip("\n").split("\n"):
        fields = row.split("\x1f", 4)
        if len(fields) != 5:
            continue
        short, date, author, refs, subject = fields
        refs_text = f" [{refs}]" if refs else ""
        lines.append(f"{short} {date} {subject} ({author}){refs_text}")
    if not lines:
        return ""
    title = f"Recent commits, newest first ({len(lines)}):"
    return cap_text("\n".join([title, *lines]), max_bytes)


def _now() -> datetime:
    """Local time; a function so tests can pin it."""
    from datetime import datetime

    return datetime.now().astimezone()


def _tz_name(now: datetime) -> str:
    """An IANA name (Europe/Paris) when known, else the abbreviation (CET)."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    if not tz:
        try:
            target = os.readlink("/etc/localtime")
        except OSError:
            target = ""
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    return now.tzname() or "unknown"


def _date_line(now: datetime, *, with_time: bool) -> str:
    offset = now.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    stamp = now.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")
    return f"{stamp} ({now.strftime('%A')}), time zone {_tz_name(now)} ({offset})"


def _date(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Models do not know today's date; one line fixes "latest version" guesses."""
    return f"Today's date: {_date_line(_now(), with_time=False)}."


def _os_text() -> str:
    """Kernel plus distribution (Linux) or macOS version; no `platform` import."""
    uname = os.uname()
    if uname.sysname == "Darwin":
        import platform

        version = platform.mac_ver()[0]
        return f"macOS {version}" if version else f"Darwin {uname.release}"
    pretty = ""
    try:
        with open("/etc/os-release", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    pretty = line.split("=", 1)[1].strip().strip('"')
                    break
    except OSError:
        pass
    base = f"{uname.sysname} {uname.release}"
    return f"{base} ({pretty})" if pretty else base


def _environment(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Where the agent runs: saves it a round of `uname`/`pwd`/`date` calls."""
    shell = os.environ.get("SHELL") or "unknown"
    lines = [
        f"OS: {_os_text()}",
        f"Architecture: {os.uname().machine}",
        f"Shell: {shell}",
        f"Working directory: {ctx.cwd}",
        f"Project root: {ctx.project_root}",
        f"Date: {_date_line(_now(), with_time=True)}",
    ]
    return "\n".join(lines)


# Directories never worth listing when walking a tree git does not describe.
_WALK_SKIP = frozenset({"node_modules", "__pycache__"})


def _project_files(root: Path, depth: int, deadline: float) -> tuple[list[str], bool] | None:
    """Relative file paths, and whether they are all the files (git) or a shallow walk."""
    if _find_dot_git(root) is not None:
        out = _git(("ls-files", "-z", "--cached", "--others", "--exclude-standard"), root, deadline)
        if out is not None:
            return [p for p in dict.fromkeys(out.split("\0")) if p], True
    return _walk(root, depth), False


def _walk(root: Path, depth: int) -> list[str]:
    """Files and directories down to `depth`, skipping dot-dirs and bulky dirs.

    Directories at the last level are returned as "dir/" entries: their
    contents are not walked, so a huge node_modules costs nothing.
    """
    found: list[str] = []

    def visit(path: Path, prefix: str, level: int) -> None:
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            rel = prefix + entry.name
            if is_dir:
                if entry.name.startswith(".") or entry.name in _WALK_SKIP:
                    continue
                if level < depth:
                    before = len(found)
                    visit(Path(entry.path), rel + "/", level + 1)
                    if len(found) == before:
                        found.append(rel + "/")
                else:
                    found.append(rel + "/")
            else:
                found.append(rel)

    visit(root, "", 1)
    return found


def _collapse(entries: Mapping[str, int], depth: int) -> dict[str, int]:
    """Collapse entries to what is shown at `depth`: "a/b/" → files below it, "a/x" → 1.

    `entries` maps a path to the number of files it stands for (1 for a file,
    0 for the bare "dir/" marker of a walk, n for an already collapsed "dir/").
    One bounded `str.split` per entry; reducing the depth later re-collapses
    the few hundred shown entries instead of every file of the repository.
    """
    shown: dict[str, int] = {}
    for path, weight in entries.items():
        parts = path.split("/", depth)
        key = "/".join(parts[:depth]) + "/" if len(parts) > depth else path
        shown[key] = shown.get(key, 0) + weight
    return shown


def _render_tree(shown: Mapping[str, int], counted: bool) -> list[str]:
    """Indented listing of collapsed entries; directories with nothing shown get a count."""
    tree: dict[str, dict | None] = {}
    counts: dict[tuple[str, ...], int] = {}
    for entry, count in shown.items():
        is_dir = entry.endswith("/")
        parts = [p for p in entry.split("/") if p]
        node = tree
        for level, part in enumerate(parts):
            if level == len(parts) - 1 and not is_dir:
                node.setdefault(part, None)  # a file at this level
                break
            child = node.get(part)
            if child is None:
                child = {}
                node[part] = child
            node = child
        if is_dir:
            counts[tuple(parts)] = count
    lines: list[str] = []

    def emit(node: dict, prefix: tuple[str, ...], indent: str) -> None:
        dirs = sorted(k for k, v in node.items() if v is not None)
        files = sorted(k for k, v in node.items() if v is None)
        for name in dirs:
            key = (*prefix, name)
            child = node[name]
            note = ""
            if counted and not child:
                n = counts.get(key, 0)
                note = f" ({n} file{'s' if n != 1 else ''})"
            lines.append(f"{indent}{name}/{note}")
            emit(child, key, indent + "  ")
        for name in files:
            lines.append(f"{indent}{name}")

    emit(tree, (), "")
    return lines


def _directory_listing(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """The top of the project tree, so the agent need not `ls` around first."""
    depth = args["depth"]
    max_entries = args["max_entries"]
    assert isinstance(depth, int) and isinstance(max_entries, int)
    root = ctx.project_root
    if not root.is_dir():
        return ""
    found = _project_files(root, depth, deadline)
    if found is None:
        return ""
    paths, from_git = found
    if not paths:
        return ""
    shown = depth
    entries = _collapse({p: 0 if p.endswith("/") else 1 for p in paths}, shown)
    lines = _render_tree(entries, from_git)
    # Prefer a complete shallower listing over a deep one cut off half-way.
    while len(lines) > max_entries and shown > 1:
        shown -= 1
        entries = _collapse(entries, shown)
        lines = _render_tree(entries, from_git)
    source = "files tracked or not ignored by git" if from_git else "dot-directories skipped"
    level_text = f"{shown} level{'s' if shown != 1 else ''}"
    if shown < depth:
        level_text += f", reduced from {depth} to fit {max_entries} entries"
    title = f"Project files under {root} ({level_text}; {source}):"
    if len(lines) > max_entries:
        more = len(lines) - max_entries
        lines = [*lines[:max_entries], f"… (truncated: {more} more entries)"]
    return "\n".join([title, *lines])


def _prompt_files(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Project instruction files, for tools that do not read them natively."""
    files = args["files"]
    max_bytes = args["max_bytes"]
    assert isinstance(files, tuple) and isinstance(max_bytes, int)
    try:
        root = ctx.project_root.resolve()
    except OSError:
        return ""
    parts: list[str] = []
    used = 0
    for name in files:
        text = _read_project_file(root, name, max_bytes + 1)
        if text is None:
            continue  # missing, unreadable, binary, or outside the root
        section = f"== {name} ==\n{text.rstrip()}"
        parts.append(section)
        used += len(section.encode()) + 2
        if used > max_bytes:
            break
    return cap_text("\n\n".join(parts), max_bytes) if parts else ""


def _read_project_file(root: Path, name: str, limit: int) -> str | None:
    """At most `limit` bytes of root/name, refusing anything resolving outside root."""
    if not _is_inside_path(name):
        return None
    try:
        path = (root / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None  # a symlink escaping the project, a directory, or missing
        with path.open("rb") as fh:
            data = fh.read(limit)
    except (OSError, ValueError):
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


_RUNNERS: dict[str, Callable[[Mapping[str, object], GuardContext, float], str]] = {
    "branch_protection": _branch_protection,
    "dirty_tree": _dirty_tree,
    "git_status": _git_status,
    "git_diff": _git_diff,
    "recent_commits": _recent_commits,
    "environment": _environment,
    "date": _date,
    "directory_listing": _directory_listing,
    "prompt_files": _prompt_files,
}


def run_builtin(name: str, args: Mapping[str, object], ctx: GuardContext, *, timeout: float = 5.0) -> str:
    """Text of the block body or "". Never raises for git problems, never prompts.

    `timeout` bounds the whole built-in (all its git calls together). Invalid
    `args` raise ValueError like `validate_args`: that is a configuration
    error, normally reported earlier by the config loader.
    """
    import time

    checked = validate_args(name, args)
    deadline = time.monotonic() + timeout
    try:
        return _RUNNERS[name](checked, ctx, deadline).strip("\n")
    except OSError:
        return ""  # the project root vanished, permissions, …: nothing to say
