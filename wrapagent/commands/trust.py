"""`wrapagent trust`: show what a project hooks file would run, and trust it, at a terminal only.

The store itself (`wrapagent.hooks.trust`) is what the config loader consults;
this is the command around it. Trusting needs the user at a terminal: the
command refuses when stdin or stdout is not a terminal or when it runs inside
a wrapped agent session, so an agent executing commands cannot trust a file
for the user.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any, Mapping

from wrapagent import paths
from wrapagent.hooks.trust import EVENTS, TRUSTED, TrustStore, shell_word, content_sha256
from wrapagent.session.resolve import nested_depth
from wrapagent.visible import field, visible  # one helper for all output (issue 20 §5)


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
        from wrapagent.hooks.tomlvalue import toml_value  # TOML, pasteable back into the file

        suffix = f" with args = {visible(toml_value(args))}" if args else ""
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
        print(f"{field(entry.path)}  sha256 {field(entry.sha256[:12])}  trusted {field(entry.trusted_at)}  ({state})",
              file=stdout)
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
        print(f"wrapagent: {reason}: wrapagent trust {shell_word(str(file))}", file=stderr)
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
