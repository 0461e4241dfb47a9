"""Trust for project hook files (`<project>/.wrapagent/hooks.toml`).

A project hooks file runs shell commands around every agent session, so a
freshly cloned repository must not get to run its file on the user's first
`codex`. The user reviews the file and trusts it with `wrapagent trust`; the
store (`$XDG_STATE_HOME/wrapagent/trust.json`) pins the file's resolved
absolute path and the sha256 of its content, so any edit needs trust again.

Trusting needs the user at a terminal: `cmd_trust` refuses when stdin or
stdout is not a terminal or when it runs inside a wrapped agent session, so
an agent executing commands cannot trust a file for the user. This is a
speed bump, not a sandbox: anything running as the user can still write
`trust.json` itself.

The store fails closed: a missing, unreadable or corrupt file means nothing
is trusted (with a warning), never an exception in the config loader.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Mapping

from wrapagent import paths
from wrapagent.session.resolve import nested_depth

STORE_VERSION = 1
TRUSTED, UNTRUSTED, CHANGED = "trusted", "untrusted", "changed"
EVENTS = ("pre_run", "post_run", "session_complete")


@dataclass(frozen=True)
class TrustEntry:
    path: str  # resolved absolute path of the hooks file
    sha256: str  # of the exact bytes the user reviewed
    trusted_at: str  # ISO 8601, UTC


def trust_key(file: str | os.PathLike[str]) -> str:
    """The store key: absolute, symlinks resolved, so one file has one entry."""
    return os.path.realpath(file)


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

    def revoke(self, file: str | os.PathLike[str]) -> bool:
        """Forget `file`; False when it was not trusted."""
        key = trust_key(file)
        return self._update(lambda files: files.pop(key, None) is not None)

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


# ---------------------------------------------------------------------- messages


def _shell_word(text: str) -> str:
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
    return f"wrapagent: {what} — {how}: wrapagent trust {_shell_word(str(file))}"


_INVISIBLE = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def visible(text: str) -> str:
    """`text` with control, bidi and zero-width characters escaped.

    The review must show what would run: a hooks file could otherwise hide
    a command behind escape sequences (erase line, move cursor) or
    right-to-left overrides.
    """
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t" or (code >= 0x20 and code != 0x7F and not 0x80 <= code < 0xA0 and code not in _INVISIBLE):
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _block(label: str, text: str) -> list[str]:
    """`label: first line`, continuation lines indented under it."""
    lines = visible(text).split("\n")
    pad = " " * (len(label) + 2)
    return [f"  {label}: {lines[0]}", *(f"  {pad}{line}" for line in lines[1:])]


def _describe_event(event: str, table: Any) -> list[str]:
    if not isinstance(table, dict):
        return [f"  {event}: invalid (not a table); the file will not be used"]
    enabled = table.get("enabled", True) is not False
    command = table.get("command")
    if not enabled:
        suffix = f" (command: {visible(str(command))})" if command is not None else ""
        return [f"  {event}: disabled{suffix}"]
    if command is None:
        if event == "session_complete":
            return [f"  {event}: wrapagent's default (commit the session record)"]
        return [f"  {event}: no command"]
    return _block(f"{event}: sh -c", str(command))


def _describe_guard(index: int, guard: Any) -> list[str]:
    if not isinstance(guard, dict):
        return [f"  prompt_guard[{index}]: invalid (not a table); the file will not be used"]
    name = visible(str(guard.get("name", f"#{index + 1}")))
    lines = []
    if "command" in guard:
        lines.extend(_block(f"prompt guard {name!r}: sh -c", str(guard["command"])))
    if "builtin" in guard:
        args = guard.get("args")
        suffix = f" with args {visible(repr(args))}" if args else ""
        lines.append(f"  prompt guard {name!r}: built-in {visible(str(guard['builtin']))}{suffix}")
    return lines or [f"  prompt guard {name!r}: no command"]


def describe_content(file: Path, content: bytes) -> str:
    """What `content` (as `file`) would make wrapagent run, per event, for review."""
    header = [f"{file}", f"  sha256 {content_sha256(content)}"]
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        body = [
            f"Does not parse ({visible(str(exc))}): wrapagent will not use it while it is invalid.",
            "Its text:",
            *(f"  | {line}" for line in visible(content.decode("utf-8", "replace")).split("\n")),
        ]
        return "\n".join([*header, "", *body]) + "\n"

    lines: list[str] = []
    for event in EVENTS:
        if event in data:
            lines.extend(_describe_event(event, data[event]))
    guards = data.get("prompt_guard")
    if guards is not None:
        if not isinstance(guards, list):
            lines.append("  prompt_guard: invalid (not [[prompt_guard]] tables); the file will not be used")
        elif not guards:
            lines.append("  prompt_guard: empty list (turns off the global prompt guards)")
        else:
            for index, guard in enumerate(guards):
                lines.extend(_describe_guard(index, guard))
    ignored = [k for k in data if k not in (*EVENTS, "prompt_guard")]
    body = ["Commands it would run (sh -c, in the project, around every wrapped agent session):"]
    body.extend(lines or ["  nothing"])
    if ignored:
        body.append("Ignored keys (wrapagent does not run them): " + ", ".join(visible(k) for k in ignored))
    return "\n".join([*header, "", *body]) + "\n"


def describe_file(file: Path) -> str:
    """`describe_content` of the file as it is on disk now."""
    return describe_content(file, Path(file).read_bytes())


# ---------------------------------------------------------------------- command


def _target(path: str | None, cwd: Path) -> Path:
    """PATH as given (a folder means its project hooks file), else the cwd's project's."""
    if path is None:
        return paths.project_hooks_file(paths.find_project_root(cwd))
    target = Path(path) if os.path.isabs(path) else cwd / path
    if target.is_dir():
        target = paths.project_hooks_file(target)
    return Path(os.path.abspath(target))


def _refusal(stdin: IO[str], stdout: IO[str], env: Mapping[str, str]) -> str | None:
    """Why we may not ask, or None when a person is at the terminal (as far as we can tell)."""
    if env.get("WRAPAGENT_SESSION_ID") or nested_depth(env) > 0:
        return "refusing to trust from inside a wrapped agent session; run it in your own terminal"
    if not (_isatty(stdin) and _isatty(stdout)):
        return "refusing to trust without a terminal (an agent must not trust hooks for you); run it in your own terminal"
    return None


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _list(store: TrustStore, stdout: IO[str]) -> int:
    entries = store.entries()
    if not entries:
        print("no trusted project hooks files", file=stdout)
    for entry in entries:
        try:
            state = "ok" if content_sha256(Path(entry.path).read_bytes()) == entry.sha256 else "changed since trusted"
        except OSError:
            state = "missing"
        print(f"{entry.path}  sha256 {entry.sha256[:12]}  trusted {entry.trusted_at}  ({state})", file=stdout)
    return 0


def cmd_trust(
    path: str | None,
    *,
    revoke: bool,
    list_: bool,
    stdin: IO[str],
    stdout: IO[str],
    stderr: IO[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> int:
    """`wrapagent trust [PATH] [--revoke | --list]`; returns the exit code."""
    env = os.environ if env is None else env
    store = TrustStore(env=env, warn=lambda message: print(message, file=stderr))
    if list_:
        return _list(store, stdout)
    file = _target(path, Path(cwd) if cwd is not None else Path.cwd())
    if revoke:
        if store.revoke(file):
            print(f"revoked trust for {file}", file=stdout)
        else:
            print(f"{file} was not trusted; nothing to revoke", file=stdout)
        return 0
    try:
        content = file.read_bytes()
    except OSError as exc:
        print(f"wrapagent: cannot read {file}: {exc.strerror or exc}", file=stderr)
        return 1
    if store.check(file, content) == TRUSTED:
        print(f"{file} is already trusted (this exact content)", file=stdout)
        return 0
    reason = _refusal(stdin, stdout, env)
    if reason is not None:
        print(f"wrapagent: {reason}: wrapagent trust {_shell_word(str(file))}", file=stderr)
        return 1
    stdout.write(describe_content(file, content) + "\n")
    stdout.write("Trust this file? [y/N] ")
    stdout.flush()
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        print(f"not trusted: {file}", file=stdout)
        return 1
    store.trust(file, content)  # the bytes shown above, even if the file changed meanwhile
    print(f"trusted {file}; any edit to it needs `wrapagent trust` again", file=stdout)
    return 0
