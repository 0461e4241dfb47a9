"""The git built-ins: branch_protection, dirty_tree, git_status, git_diff, recent_commits.

What the agent should know about the repository before it starts: the
branch and whether it is protected, work left uncommitted or unpushed, an
unfinished merge or rebase, the diff, recent history. Each one forks git at
most a few times (`git status --porcelain=v2 --branch -z` carries branch,
upstream, ahead/behind and the file status in one call) and reads small
files such as `.git/MERGE_HEAD` directly instead of asking git. Outside a
repository, with git missing, or on a timeout, they return "".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from wrapagent.hooks.builtins import gitrun
from wrapagent.hooks.builtins.truncate import cap_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.hooks.context import GuardContext


# --------------------------------------------------------------------------- #
# Unfinished operations, read from the git directory (no fork)
# --------------------------------------------------------------------------- #


def _read_first_line(path: Path) -> str:
    """The first line of a small file, "" when it cannot be read."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return fh.readline().strip()
    except OSError:
        return ""


def _operation_in_progress(root: Path) -> str:
    """What to tell the agent about an unfinished merge/rebase/…, or ""."""
    git_dir = gitrun.git_dir(root)
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
    git_dir = gitrun.git_dir(root)
    if git_dir is None:
        return ""
    for sub in ("rebase-merge", "rebase-apply"):
        ref = _read_first_line(git_dir / sub / "head-name")
        if ref.startswith("refs/heads/"):
            return ref[len("refs/heads/"):]
    return ""


# --------------------------------------------------------------------------- #
# git status --porcelain=v2 --branch -z
# --------------------------------------------------------------------------- #


class _Status(gitrun.Record):
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
    out = gitrun.git(("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"), root, deadline)
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

    if gitrun.find_dot_git(ctx.project_root) is None:
        return ""  # not a repository: no fork at all
    branch = gitrun.git(("symbolic-ref", "--quiet", "--short", "HEAD"), ctx.project_root, deadline)
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
    st = _status(root, deadline) if gitrun.find_dot_git(root) is not None else None
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
        out = gitrun.git(("log", fmt, "-n", "11", "HEAD", "--not", "--branches", "--remotes"), root, deadline)
        if not out or not out.strip():
            return ""
        return (
            _commit_list("Commits on the detached HEAD that are on no branch", out)
            + "\nCreate a branch to keep them (git switch -c <name>)."
        )
    if st.upstream is not None:
        if not st.ahead:
            return ""
        out = gitrun.git(("log", fmt, "-n", "10", "@{upstream}..HEAD"), root, deadline) or ""
        head = f'Unpushed commits on "{st.head}" ({st.ahead} ahead of {st.upstream})'
        more = f"\n… ({st.ahead - 10} more)" if st.ahead > 10 else ""
        return head + (":\n" + out.rstrip("\n") + more if out.strip() else ".")
    remotes = gitrun.git(("remote",), root, deadline)
    if not remotes or not remotes.strip():
        return ""  # a local-only repository: everything is "unpushed", say nothing
    out = gitrun.git(("log", fmt, "-n", "11", "HEAD", "--not", "--remotes"), root, deadline)
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
    st = _status(root, deadline) if gitrun.find_dot_git(root) is not None else None
    if st is None:
        return _jj_status(root, deadline, args) if gitrun.is_jj_repo(root) else ""
    lines = [_head_text(st, root)]
    if st.head is not None:
        lines.append(f"Upstream: {_upstream_text(st)}")
    if gitrun.is_jj_repo(root):
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
    out = gitrun.run(("jj", "--no-pager", "--color", "never", "status"), root, deadline, limit=64 * 1024)
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
    if gitrun.find_dot_git(root) is None:
        return ""
    base = "HEAD"
    if gitrun.git(("rev-parse", "--verify", "--quiet", "HEAD"), root, deadline) is None:
        # No commits yet: diff against the empty tree instead.
        empty = gitrun.git(_EMPTY_TREE_ARGS, root, deadline)
        if not empty:
            return ""
        base = empty.strip()
    common = ("diff", "--no-ext-diff", "--no-textconv", "--submodule=short", base)
    if args["mode"] == "stat":
        out = gitrun.git((*common, "--stat=200,150", "--stat-graph-width=20", "--summary"), root, deadline, limit=max_bytes * 2)
        title = "Uncommitted changes to tracked files (diffstat against HEAD; untracked files not shown):"
    else:
        out = gitrun.git(common, root, deadline, limit=max_bytes * 2)
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
    if gitrun.find_dot_git(ctx.project_root) is None:
        return ""
    out = gitrun.git(
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


RUNNERS: dict[str, Callable[[Mapping[str, object], GuardContext, float], str]] = {
    "branch_protection": _branch_protection,
    "dirty_tree": _dirty_tree,
    "git_status": _git_status,
    "git_diff": _git_diff,
    "recent_commits": _recent_commits,
}
