"""Trust for project hook files (`<project>/.wrapagent/hooks.toml`).

A project hooks file runs shell commands around every agent session, so a
freshly cloned repository must not get to run its file on the user's first
`codex`. The user reviews the file and trusts it with `wrapagent trust`.

What is trusted is exactly what was reviewed, where it was reviewed: the
store (`$XDG_STATE_HOME/wrapagent/trust.json`) keys an entry by
`<project root>/.wrapagent/hooks.toml` (the project root with its links
resolved, the two last parts as they are: the loader never follows a link
there, `config_read`) and pins the sha256 of the bytes shown. So any edit
needs trust again, and a repository whose `.wrapagent` (or `hooks.toml`) is a
link to a neighbour's trusted file (`../good/.wrapagent`, which survives
`git clone`) borrows nothing: the link is refused, and its own path was
never trusted anyway.

Entries written before (keyed by the hooks file's resolved path) are the same
key for an unlinked project file, so they keep working unchanged; an entry
that was reached through a link matches no file the loader will use.

Trust pins the TOML, not the scripts its commands call. Trusting needs the
user at a terminal (`wrapagent.commands.trust`); that refusal is a speed
bump, not a sandbox: anything running as the user can still write
`trust.json` itself, or the global config.

The store fails closed: a missing, unreadable or corrupt file means nothing
is trusted (with a warning), never an exception in the config loader.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wrapagent import paths
from wrapagent.values import Frozen

TYPE_CHECKING = False  # typing and dataclasses cost ~10-15 ms each: this runs before the tool starts
if TYPE_CHECKING:
    from typing import Callable, Mapping

STORE_VERSION = 1
TRUSTED, UNTRUSTED, CHANGED = "trusted", "untrusted", "changed"


class TrustEntry(Frozen):
    __slots__ = ("path", "sha256", "trusted_at")

    path: str  # <project root>/.wrapagent/hooks.toml (see trust_key)
    sha256: str  # of the exact bytes the user reviewed
    trusted_at: str  # ISO 8601, UTC


def trust_key(file: str | os.PathLike[str]) -> str:
    """The store key: `<project root, links resolved>/.wrapagent/hooks.toml`.

    Only the project root is resolved: `.wrapagent` and `hooks.toml` stay as
    written, so a link there cannot lead to another project's key. A path
    that is no project hooks file keeps the old key (its resolved path), so
    an old entry can still be revoked by its path.
    """
    from wrapagent.hooks.config_read import PROJECT_DIR, PROJECT_FILE, project_root_of_hooks_file

    root = project_root_of_hooks_file(os.fspath(file))
    if root is None:
        return os.path.realpath(file)
    return os.path.join(os.path.realpath(root), PROJECT_DIR, PROJECT_FILE)


def content_sha256(content: bytes) -> str:
    import hashlib

    return hashlib.sha256(content).hexdigest()


def _stderr_warning(message: str) -> None:
    print(message, file=sys.stderr)


class TrustStore:
    """The trusted (path, sha256) pairs, read fresh on every query.

    Callers pass the bytes they are about to use (`is_trusted(path, data)`
    with the same `data` they parse) so the check and the use cannot see
    different versions of the file.
    """

    def __init__(
        self,
        path: Path | None = None,
        env: Mapping[str, str] | None = None,
        *,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else paths.state_dir(env) / "trust.json"
        self.warnings: list[str] = []
        self._warn = warn or _stderr_warning

    # ------------------------------------------------------------------ reading

    def _load(self) -> tuple[dict[str, dict[str, str]], bool]:
        """(entries by path, whether the file on disk is corrupt)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}, False
        except OSError as exc:
            self._warning(f"cannot read ({exc.strerror or exc})")
            return {}, False
        import json

        try:
            data = json.loads(raw)
            files = data["files"]
            if not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
                for k, v in files.items()
            ):
                raise ValueError("unexpected structure")
        except (ValueError, KeyError, TypeError) as exc:
            self._warning(f"corrupt ({type(exc).__name__}: {exc})")
            return {}, True
        return files, False

    def _warning(self, reason: str) -> None:
        message = (
            f"wrapagent: ignoring trust store {self.path}: {reason}; "
            "project hooks stay untrusted until trusted again"
        )
        if message not in self.warnings:
            self.warnings.append(message)
            self._warn(message)

    def check(self, file: str | os.PathLike[str], content: bytes) -> str:
        """TRUSTED, CHANGED (trusted once, content differs now) or UNTRUSTED."""
        entry = self._load()[0].get(trust_key(file))
        if entry is None:
            return UNTRUSTED
        return TRUSTED if entry["sha256"] == content_sha256(content) else CHANGED

    def is_trusted(self, file: str | os.PathLike[str], content: bytes) -> bool:
        return self.check(file, content) == TRUSTED

    def trusted_before(self, file: str | os.PathLike[str]) -> tuple[bytes, str] | None:
        """(the bytes last trusted for `file`, when) if a copy was kept, else None.

        `wrapagent trust` shows what changed since then. The copy is named by
        its sha256 and checked against it, so a copy edited by hand is no copy.
        """
        entry = self._load()[0].get(trust_key(file))
        if entry is None:
            return None
        content = _read_copy(self._copies_dir(), entry["sha256"])
        return None if content is None else (content, str(entry.get("trusted_at", "")))

    def entries(self) -> list[TrustEntry]:
        files = self._load()[0]
        return [TrustEntry(path, e["sha256"], str(e.get("trusted_at", ""))) for path, e in sorted(files.items())]

    # ------------------------------------------------------------------ writing

    def trust(self, file: str | os.PathLike[str], content: bytes) -> None:
        """Pin `content` (the bytes the user reviewed) for `file`; replaces an older pin."""
        from datetime import datetime, timezone

        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        sha = content_sha256(content)

        def change(files: dict[str, dict[str, str]]) -> bool:
            files[trust_key(file)] = {"sha256": sha, "trusted_at": stamp}
            return True

        self._update(change)
        self._keep_copy(sha, content)

    def _copies_dir(self) -> Path:
        return self.path.parent / COPIES_DIR

    def _keep_copy(self, sha: str, content: bytes) -> None:
        """Keep the trusted bytes (for the next review's "what changed"); drop copies no entry pins.

        Best effort: without a copy the next review shows the whole file, as before.
        """
        folder = self._copies_dir()
        try:
            if folder.is_symlink():
                return  # never write through a link
            folder.mkdir(mode=0o700, exist_ok=True)
            _write_private(folder / sha, content)
        except OSError:
            return
        self._drop_unpinned_copies()

    def _drop_unpinned_copies(self) -> None:
        folder = self._copies_dir()
        try:
            if folder.is_symlink() or not folder.is_dir():
                return
            pinned = {e["sha256"] for e in self._load()[0].values()}
            for name in os.listdir(folder):
                if name not in pinned and not name.startswith("."):
                    os.unlink(folder / name)
        except OSError:
            pass

    def revoke(self, file: str | os.PathLike[str]) -> bool:
        """Forget `file`; False when it was not trusted."""
        key = trust_key(file)
        revoked = self._update(lambda files: files.pop(key, None) is not None)
        self._drop_unpinned_copies()
        return revoked

    def _update(self, change: Callable[[dict[str, dict[str, str]]], bool]) -> bool:
        """Read-modify-write under a lock, written atomically (temp file + rename)."""
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with FileLock(str(self.path) + ".lock", timeout=10):
            files, corrupt = self._load()
            changed = change(files)
            if changed:
                if corrupt:
                    # Keep the broken file for inspection rather than silently dropping it.
                    os.replace(self.path, str(self.path) + ".corrupt")
                self._write(files)
            return changed

    def _write(self, files: dict[str, dict[str, str]]) -> None:
        import json

        text = json.dumps({"version": STORE_VERSION, "files": files}, indent=2, sort_keys=True) + "\n"
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if tmp.exists():
                tmp.unlink()


COPIES_DIR = "trusted"
"""Beside trust.json: a copy of each pinned file's bytes, named by their sha256."""


def _write_private(path: Path, content: bytes) -> None:
    """Atomically, mode 0600, never through a link (a temp file, then rename over)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _read_copy(folder: Path, sha: str) -> bytes | None:
    """The copy named `sha`, when it is a regular file whose bytes still hash to its name."""
    if len(sha) != 64 or not all(ch in "0123456789abcdef" for ch in sha):
        return None  # a store edited by hand names no file
    try:
        fd = os.open(folder / sha, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        content = f.read(2 * 1024 * 1024)
    return content if content_sha256(content) == sha else None


# ---------------------------------------------------------------------- messages


def shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def untrusted_notice(file: Path, *, changed: bool = False) -> str:
    """ONE line for stderr when the loader skips a project hooks file."""
    if changed:
        what = f"skipping project hooks in {file}: changed since you trusted them"
        how = "review and trust again with"
    else:
        what = f"skipping untrusted project hooks in {file}"
        how = "review and trust with"
    return f"wrapagent: {what} — {how}: wrapagent trust {shell_word(str(file))}"
