"""The project file built-ins: directory_listing and prompt_files.

The top of the project tree (so the agent need not `ls` around first) and
the project's instruction files (for tools that do not read them natively).
They read the disk under the project root only: the listing asks git for
the files it knows (one `ls-files`) or walks a few levels, and prompt_files
refuses names that resolve outside the root.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from wrapagent.hooks.builtins import gitrun
from wrapagent.hooks.builtins.schema import is_inside_path
from wrapagent.hooks.builtins.truncate import cap_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.hooks.context import GuardContext


# Directories never worth listing when walking a tree git does not describe.
_WALK_SKIP = frozenset({"node_modules", "__pycache__"})


def _project_files(root: Path, depth: int, deadline: float) -> tuple[list[str], bool] | None:
    """Relative file paths, and whether they are all the files (git) or a shallow walk."""
    if gitrun.find_dot_git(root) is not None:
        out = gitrun.git(("ls-files", "-z", "--cached", "--others", "--exclude-standard"), root, deadline)
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
    if not is_inside_path(name):
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


RUNNERS: dict[str, Callable[[Mapping[str, object], GuardContext, float], str]] = {
    "directory_listing": _directory_listing,
    "prompt_files": _prompt_files,
}
