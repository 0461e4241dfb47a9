"""Finding the real agent binary on PATH without ever finding wrapagent itself.

Users put wrapagent in front of `codex` with an alias or with shims first on
PATH, so a plain PATH lookup of `codex` from inside wrapagent may return
wrapagent's own shim, a symlink to it, or the `wrapagent` console script:
exec'ing that would loop. `find_real_tool` walks PATH like a shell but skips:

- empty and relative PATH entries (see `find_real_tool` for why),
- shim folders: the default one, any named in `GUARD_ENV` (inherited from
  an outer wrapagent) and any passed by the caller (the shim's `--shim-dir`),
- candidates whose real path is a wrapagent shim (marker line) or a
  wrapagent entry point (console script content or known location),
- folders already seen (duplicates, also through symlinks),
- non-executable files (as a shell does).

`WRAPAGENT_DEPTH` is the nesting guard for agents that start agents.

On the start-up path of every aliased `codex`: imports only `os`, `stat`,
`sys`, and `wrapagent.errors` only to raise one (not `pathlib`, ~15 ms with the `re` and
`urllib` it pulls in, nor `wrapagent.paths`; `default_shim_dir` mirrors it
and a test keeps the two equal). The launch path uses the `str` functions
(`find_real_executable`); the `Path` ones are for callers that already
have `pathlib` loaded.
"""

import os
import stat
import sys
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Iterable, Mapping

# `wrapagent.errors` is imported where an error is raised: the launch path
# raises none on a good start, and every start saves the import.

GUARD_ENV = "WRAPAGENT_ACTIVE_SHIMS"
"""os.pathsep-separated shim folders seen by outer wrapagents; inherited by children."""

DEPTH_ENV = "WRAPAGENT_DEPTH"
"""How many wrapagents are running above this process (0 = none)."""

MAX_DEPTH = 4
"""From this depth on, wrapagent execs the real tool directly instead of wrapping it."""

RUNAWAY_DEPTH = 16
"""A depth nobody reaches by nesting agents: something on PATH calls wrapagent back."""

SHIM_MARKER = b"# wrapagent-shim"
"""First bytes of line 2 of every generated shim (see `shims/shim.sh.in`)."""

ENTRY_POINT_MARKER = b"wrapagent.__main__"
"""Appears in every pip/pipx-generated `wrapagent` console script."""

_SNIFF_BYTES = 1024


def default_shim_dir(env: "Mapping[str, str] | None" = None) -> "Path":
    """`$XDG_DATA_HOME/wrapagent/shims` — same as `paths.data_dir(env) / "shims"`."""
    from pathlib import Path

    return Path(_default_shim_dir(env))


def _default_shim_dir(env: "Mapping[str, str] | None" = None) -> str:
    """`default_shim_dir` as a string, normalised the way `Path` would print it."""
    env = os.environ if env is None else env
    value = env.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        base = value
    else:
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local/share")
    return _pure(os.path.join(base, "wrapagent", "shims"))


def _pure(path: str) -> str:
    """`str(PurePosixPath(path))` without importing pathlib.

    Drops empty and `.` components and any trailing slash, keeps `..` (it
    may cross a symlink) and POSIX's special leading `//`, so the path
    given to exec is the one `Path` used to give.
    """
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not path.startswith("/"):
        return "/".join(parts) or "."
    root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return root + "/".join(parts)


def nested_depth(env: "Mapping[str, str] | None" = None) -> int:
    """`WRAPAGENT_DEPTH` as an int; garbage or negative values count as 0."""
    env = os.environ if env is None else env
    try:
        return max(0, int(env.get(DEPTH_ENV, "0") or "0"))
    except ValueError:
        return 0


def check_depth(env: "Mapping[str, str] | None" = None) -> bool:
    """True when wrapagent must exec the real tool directly (depth >= MAX_DEPTH).

    Raises WrapagentError at RUNAWAY_DEPTH: depth only grows that far when
    something wrapagent runs calls wrapagent back (e.g. a user's own
    `~/bin/codex` containing `exec wrapagent codex`), which direct exec
    cannot stop because the "real" tool is that script.
    """
    depth = nested_depth(env)
    if depth >= RUNAWAY_DEPTH:
        from wrapagent.errors import WrapagentError

        raise WrapagentError(
            f"{DEPTH_ENV}={depth}: wrapagent keeps starting itself; "
            "a program on PATH under the tool's name probably calls wrapagent back",
            126,
        )
    return depth >= MAX_DEPTH


def guard_dirs(env: "Mapping[str, str] | None" = None) -> "list[str]":
    """The shim folders recorded in `GUARD_ENV` (absolute entries only)."""
    env = os.environ if env is None else env
    return [d for d in env.get(GUARD_ENV, "").split(os.pathsep) if d and os.path.isabs(d)]


def child_env_additions(
    shim_dirs: "Iterable[str | os.PathLike[str]]" = (),
    *,
    env: "Mapping[str, str] | None" = None,
) -> "dict[str, str]":
    """Variables to set in the wrapped tool's environment.

    `WRAPAGENT_DEPTH` is incremented here (callers must not increment it
    again), also when the tool is exec'd directly at MAX_DEPTH, so a
    runaway loop reaches RUNAWAY_DEPTH. `GUARD_ENV` accumulates the shim
    folders seen so that nested wrapagents skip them too.
    """
    env = os.environ if env is None else env
    additions = {DEPTH_ENV: str(nested_depth(env) + 1)}
    dirs: list[str] = []
    for d in [*guard_dirs(env), *(os.fspath(s) for s in shim_dirs)]:
        d = os.path.abspath(d)
        if d not in dirs:
            dirs.append(d)
    if dirs:
        additions[GUARD_ENV] = os.pathsep.join(dirs)
    return additions


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(_SNIFF_BYTES)
    except OSError:
        return b""


def is_wrapagent_shim(path: "str | os.PathLike[str]") -> bool:
    """True when the file (symlinks followed) is a shim generated by wrapagent."""
    return _is_shim_head(_head(os.path.realpath(path)))


def _is_shim_head(head: bytes) -> bool:
    return head.startswith(b"#!") and SHIM_MARKER in head


def _is_entry_point_head(head: bytes) -> bool:
    return head.startswith(b"#!") and ENTRY_POINT_MARKER in head


def _entry_point_candidates() -> "list[str]":
    """Where the wrapagent that is running now may live (they may not exist)."""
    candidates = [os.path.join(os.path.dirname(sys.executable), "wrapagent")]
    if sys.argv and os.path.basename(sys.argv[0]) == "wrapagent":
        candidates.append(sys.argv[0])
    return [c for c in candidates if c]


def _entry_point_paths() -> "set[str]":
    """Real paths of the wrapagent that is running now."""
    return {os.path.realpath(c) for c in _entry_point_candidates() if os.path.isfile(c)}


def _stat(path: str) -> "os.stat_result | None":
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(path: str) -> "tuple[int, int] | None":
    """(device, inode) of what `path` names, links followed; None if nothing."""
    st = _stat(path)
    return None if st is None else (st.st_dev, st.st_ino)


def is_wrapagent_entry_point(path: "str | os.PathLike[str]", _known: "set[str] | None" = None) -> bool:
    """True when the file (symlinks followed) is the `wrapagent` program itself.

    Known locations are checked by real path; any other console script is
    recognised by its `from wrapagent.__main__ import main` line, which
    catches other virtualenvs' copies and `ln -s $(which wrapagent) ~/bin/codex`.
    """
    real = os.path.realpath(path)
    known = _entry_point_paths() if _known is None else _known
    return real in known or _is_entry_point_head(_head(real))


def _explicit_path(
    tool: str,
    cwd: "str | os.PathLike[str] | None",
    env: "Mapping[str, str]",
    extra_skip_dirs: "Iterable[str | os.PathLike[str]]",
) -> str:
    """`tool` contains a slash: use it as is, with a shell's 127/126 errors."""
    path = _pure(tool if os.path.isabs(tool) else os.path.join(os.fspath(cwd or os.getcwd()), tool))
    try:
        st = os.stat(path)
    except OSError:
        problem = "No such file or directory"
    else:
        problem = ("Is a directory" if stat.S_ISDIR(st.st_mode)
                   else None if os.access(path, os.X_OK) else "Permission denied")
    if problem is None and is_wrapagent_shim(path):
        # Wrapping a shim means wrapping the tool it stands for (its file name, links followed).
        real = os.path.realpath(path)
        skip = [*extra_skip_dirs, os.path.dirname(path), os.path.dirname(real)]
        return find_real_executable(os.path.basename(real), env=env, cwd=cwd, extra_skip_dirs=skip)
    if problem is None and is_wrapagent_entry_point(path):
        problem = "is wrapagent itself; name the agent to wrap, e.g. `wrapagent codex`"
    if problem is not None:
        from wrapagent.errors import ToolNotExecutable, ToolNotFound

        error = ToolNotFound if problem.startswith("No such") else ToolNotExecutable
        raise error(f"{tool}: {problem}")
    return path


def find_real_tool(
    tool: str,
    *,
    env: "Mapping[str, str] | None" = None,
    cwd: "str | os.PathLike[str] | None" = None,
    extra_skip_dirs: "Iterable[str | os.PathLike[str]]" = (),
) -> "Path":
    """`find_real_executable` as a `Path`."""
    from pathlib import Path

    return Path(find_real_executable(tool, env=env, cwd=cwd, extra_skip_dirs=extra_skip_dirs))


def find_real_executable(
    tool: str,
    *,
    env: "Mapping[str, str] | None" = None,
    cwd: "str | os.PathLike[str] | None" = None,
    extra_skip_dirs: "Iterable[str | os.PathLike[str]]" = (),
) -> str:
    """The absolute path of the real `tool`, never wrapagent or one of its shims.

    A `tool` containing `/` is used as is (relative to `cwd`); a shim given
    by path resolves to the tool it stands for. A name is searched on
    `env["PATH"]` (`os.defpath` when unset), first match wins, and the path
    is returned as found on PATH (symlinks not resolved: some launchers look
    at argv[0]).

    Relative PATH entries (`.`, `bin`, `~/bin` — execvp does not expand `~`)
    are skipped, not resolved against `cwd`: wrapagent runs agents in freshly
    cloned repositories, and a planted `./codex` must not be what runs. The
    not-found message names the entries skipped so the user sees why.

    Raises ToolNotFound (127) or ToolNotExecutable (126) with a one-line message.
    """
    env = os.environ if env is None else env
    if not tool:
        from wrapagent.errors import ToolNotFound

        raise ToolNotFound("empty tool name")
    if "/" in tool:
        return _explicit_path(tool, cwd, env, extra_skip_dirs)
    if tool == "wrapagent":
        from wrapagent.errors import ToolNotExecutable

        raise ToolNotExecutable("refusing to wrap wrapagent itself; name the agent to wrap, e.g. `wrapagent codex`")

    search = env.get("PATH", os.defpath)
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    # Folders and files are compared by identity (device, inode), which is
    # what comparing real paths meant, without realpath's walk of every
    # component (Python code and an lstat each, on every start).
    skip_dirs = {
        _identity(os.path.join(base, d))  # join keeps absolute ones as they are
        for d in [_default_shim_dir(env), *guard_dirs(env), *extra_skip_dirs]
    }
    skip_dirs.discard(None)  # folders that do not exist hold nothing to skip
    known_entry_points = {_identity(p) for p in _entry_point_candidates()}
    known_entry_points.discard(None)
    seen_dirs: set = set()
    skipped: list[str] = []
    relative: list[str] = []
    not_executable: list[str] = []

    for entry in search.split(os.pathsep):
        if not entry:
            continue
        if not os.path.isabs(entry):
            if entry not in relative:
                relative.append(entry)
            continue
        candidate = os.path.join(entry, tool)
        if not os.path.lexists(candidate):
            continue
        dir_id = _identity(entry)
        if dir_id in seen_dirs:
            continue
        seen_dirs.add(dir_id)
        if dir_id in skip_dirs:
            skipped.append(f"wrapagent shims in {entry}")
            continue
        st = _stat(candidate)
        if st is None or not stat.S_ISREG(st.st_mode) or not os.access(candidate, os.X_OK):
            if st is not None and not stat.S_ISDIR(st.st_mode):
                not_executable.append(candidate)
            continue
        head = _head(candidate)  # one read (links followed) for both checks
        if _is_shim_head(head):
            skipped.append(f"wrapagent shim {candidate}")
            continue
        if (st.st_dev, st.st_ino) in known_entry_points or _is_entry_point_head(head):
            skipped.append(f"wrapagent itself at {candidate}")
            continue
        return _pure(candidate)  # as `Path(candidate)` spelled it: no `.` or doubled `/`

    from wrapagent.errors import ToolNotFound

    raise ToolNotFound(_not_found_message(tool, search, skipped, relative, not_executable),
                       searched_path=True)


def _not_found_message(
    tool: str, search: str, skipped: "list[str]", relative: "list[str]", not_executable: "list[str]"
) -> str:
    """One line: what was searched and what was passed over, so the fix is obvious."""
    notes = [f"searched PATH: {search}"]
    if skipped:
        notes.append("skipped " + ", ".join(skipped))
    if relative:
        notes.append("ignored relative PATH entries: " + ", ".join(repr(r) for r in relative))
    if not_executable:
        notes.append("not executable: " + ", ".join(not_executable))
    return f"{tool}: command not found ({'; '.join(notes)})"
