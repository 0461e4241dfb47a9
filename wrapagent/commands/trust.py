"""`wrapagent trust`: show what a project hooks file would run, and trust it, at a terminal only.

The store itself (`wrapagent.hooks.trust`) is what the config loader consults;
this is the command around it. The file is read once, the loader's way
(`config_read`: never through a link, a regular file of at most 1 MiB), and
parsed by the loader's own `parse_hooks_bytes`: what the review shows, what
is pinned and what the loader will run are the same bytes, read the same way.

Trusting needs the user at a terminal: the command refuses when stdin or
stdout is not a terminal or when it runs inside a wrapped agent session. A
speed bump, not a sandbox (an agent running as the user can edit the global
config or the store); the review says so, and that trust pins the TOML, not
the scripts its commands call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any, Mapping

from wrapagent import paths
from wrapagent.hooks.trust import TRUSTED, TrustStore, shell_word, content_sha256
from wrapagent.session.resolve import nested_depth
from wrapagent.visible import field, visible  # one helper for all output (docs/security.md)


def _block(label: str, text: str) -> list[str]:
    """`label: first line`, continuation lines indented under it."""
    lines = visible(text).split("\n")
    pad = " " * (len(label) + 2)
    return [f"  {label}: {lines[0]}", *(f"  {pad}{line}" for line in lines[1:])]


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _describe_hook(hook: Any) -> list[str]:
    from wrapagent.hooks import events
    from wrapagent.hooks.config_loader import DEFAULT_SESSION_COMPLETE

    event = hook.event
    if not hook.enabled:
        suffix = f" (command: {visible(hook.command)})" if hook.command else ""
        return [f"  {event}: disabled{suffix}; your global {event} hook does not run here either"]
    if event == "session_complete" and hook.command == DEFAULT_SESSION_COMPLETE:
        lines = [f"  {event}: wrapagent's default (commit the session record)"]
    else:
        lines = _block(f"{event}: sh -c", hook.command)
    default = events.default_timeout(event)
    extra = [events.get(event).review]
    if hook.timeout_secs != default:
        extra.append(f"timeout {_seconds(hook.timeout_secs)}")
    if hook.quiet_secs is not None:
        extra.append(f"after {_seconds(hook.quiet_secs)} of quiet")
    if extra:
        lines.append(f"    ({', '.join(extra)})")
    return lines


def _describe_guard(guard: Any) -> list[str]:
    from wrapagent.hooks.config_loader import DEFAULT_GUARD_TIMEOUT

    name = visible(guard.name)
    if guard.builtin is not None:
        args = dict(guard.args)
        from wrapagent.hooks.tomlvalue import toml_value  # TOML, pasteable back into the file

        suffix = f" with args = {visible(toml_value(args))}" if args else ""
        lines = [f"  prompt guard {name!r}: built-in {visible(guard.builtin)}{suffix}"]
    else:
        lines = _block(f"prompt guard {name!r}: sh -c", guard.command or "")
    if guard.timeout_secs != DEFAULT_GUARD_TIMEOUT:
        lines.append(f"    (timeout {_seconds(guard.timeout_secs)})")
    return lines


def _describe_stop_check(spec: Any) -> list[str]:
    """`[stop_check]`: a command run each time the agent stops; exit 2 sends its stdout to the agent."""
    from wrapagent.hooks.config_model import DEFAULT_MAX_CONTINUES, DEFAULT_STOP_CHECK_TIMEOUT

    if spec is False:
        return ["  stop_check: disabled; your global stop check does not run here either"]
    lines = _block("stop_check (each time the agent stops; exit 2 sends its output to the agent): sh -c",
                   spec.command)
    extra = [f"timeout {_seconds(spec.timeout_secs)}"] if spec.timeout_secs != DEFAULT_STOP_CHECK_TIMEOUT else []
    if spec.max_continues != DEFAULT_MAX_CONTINUES:
        extra.append(f"at most {spec.max_continues} continuations in a row")
    if spec.quiet_secs is not None:
        extra.append(f"after {_seconds(spec.quiet_secs)} of quiet")
    if extra:
        lines.append(f"    ({', '.join(extra)})")
    return lines


_CHECKPOINT_EFFECTS = {
    ("enabled", False): "no work-tree checkpoints: `wrapagent sessions diff` and `undo` have nothing for sessions here",
    ("transcripts", False): "the tools' own transcripts are not copied into the session records",
    ("max_transcript_bytes", 0): "no transcript is copied (a limit of 0 bytes)",
}


def _describe_settings(hooks: Any) -> list[str]:
    """Every non-command setting the file makes take effect (over the user's global ones)."""
    lines = []
    extend = getattr(hooks, "extend_guards", False)
    if extend:
        lines.append("  extend.prompt_guard = true: the guards above come after your global prompt guards "
                     "(one named as a global guard takes its place)")
    elif hooks.guards == ():
        lines.append("  prompt_guard = []: no prompt guards in this project (your global ones are turned off)")
    elif hooks.guards:
        lines.append("  [[prompt_guard]]: the guards above replace your global prompt guards here")
    send = getattr(hooks, "send", None)
    if send is not None:
        lines.append("  send.enabled = true: any program running as you can type messages into sessions here "
                     "(`wrapagent send`)" if send else
                     "  send.enabled = false: `wrapagent send` cannot reach sessions here")
    for key, value in hooks.checkpoints.items():
        if key == "source":
            continue
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        effect = _CHECKPOINT_EFFECTS.get((key, value))
        lines.append(f"  checkpoints.{key} = {shown}" + (f": {effect}" if effect else ""))
    return lines


_NOTES = (
    "Trust pins this file's text, not the scripts or programs its commands call: a trusted",
    "`command = \"./scripts/check.sh\"` runs whatever check.sh contains when it runs.",
    "Refusing to trust without a terminal or inside a wrapped session is a speed bump, not a sandbox:",
    "an agent running as you can still edit your global config or wrapagent's trust store.",
)


def describe_content(file: Path, content: bytes) -> str:
    """What `content` (as `file`) would make wrapagent run and change, for review.

    Parsed by the loader's own `parse_hooks_bytes`, so the review and the
    loader cannot disagree (BOM, keys taken, errors).
    """
    from wrapagent.hooks.config_loader import parse_hooks_bytes

    header = [f"{visible(str(file))}", f"  sha256 {content_sha256(content)}"]
    hooks, problems = parse_hooks_bytes(file, content, is_project=True)
    errors = [p for p in problems if p.severity == "error"]
    if hooks is None:
        text = content.decode("utf-8-sig", "replace")
        body = [
            f"Does not parse ({visible(errors[0].message)}): wrapagent will not use it while it is invalid.",
            "Its text:",
            *(f"  | {line}" for line in visible(text).split("\n")),
        ]
        return "\n".join([*header, "", *body]) + "\n"

    body = _errors(errors)
    body.append("Commands it would run (sh -c, in the project, around every wrapped agent session;"
                " each replaces your global one for that event):")
    body.extend([line for _, lines in _command_items(hooks) for line in lines] or ["  nothing"])
    settings = _describe_settings(hooks)
    if settings:
        body.append("Settings it changes for sessions in this project:")
        body.extend(settings)
    body += _ignored(problems)
    return "\n".join([*header, "", *body, "", *_NOTES]) + "\n"


def _errors(errors: list[Any]) -> list[str]:
    if not errors:
        return []
    return ["It has errors, so wrapagent will not use any of it while they remain:",
            *(f"  {_problem(p)}" for p in errors)]


def _ignored(problems: list[Any]) -> list[str]:
    ignored = [p for p in problems if p.severity != "error"]
    if not ignored:
        return []
    return ["Ignored (wrapagent does not use these):", *(f"  {_problem(p)}" for p in ignored)]


def _command_items(hooks: Any) -> list[tuple[str, list[str]]]:
    """(what, its review lines) for every command the file runs, in review order."""
    items = [(hook.event, _describe_hook(hook)) for hook in hooks.lifecycle.values()]
    items += [(f"prompt guard {visible(guard.name)!r}", _describe_guard(guard)) for guard in hooks.guards or ()]
    if getattr(hooks, "stop_check", None) is not None:
        items.append(("stop_check", _describe_stop_check(hooks.stop_check)))
    return items


def _review_items(hooks: Any) -> list[tuple[str, list[str]]]:
    """Every command and setting as (name, review lines): what a re-review compares."""
    settings = [(line.strip().split(":")[0].split(" = ")[0], [line]) for line in _describe_settings(hooks)]
    return _command_items(hooks) + settings


def describe_changes(file: Path, content: bytes, before: bytes, trusted_at: str) -> str | None:
    """What changed in the file since it was trusted (added, removed, changed), the rest folded.

    None when either version does not parse: then the whole file is reviewed
    (`describe_content`), as on the first trust.
    """
    from wrapagent.hooks.config_loader import parse_hooks_bytes

    hooks, problems = parse_hooks_bytes(file, content, is_project=True)
    old_hooks, _ = parse_hooks_bytes(file, before, is_project=True)
    if hooks is None or old_hooks is None:
        return None
    new_items, old_items = dict(_review_items(hooks)), dict(_review_items(old_hooks))
    added = [name for name in new_items if name not in old_items]
    removed = [name for name in old_items if name not in new_items]
    changed = [name for name in new_items if name in old_items and new_items[name] != old_items[name]]
    same = [name for name in new_items if name in old_items and name not in changed]
    header = [f"{visible(str(file))}", f"  sha256 {content_sha256(content)}"]
    body = _errors([p for p in problems if p.severity == "error"])
    body.append(f"Changed since you trusted it ({visible(trusted_at) or 'earlier'}):")
    if not (added or removed or changed):
        body.append("  no command or setting: only comments, order or formatting")
    body += _section("added", [line for name in added for line in new_items[name]])
    body += _section("changed", [line for name in changed for line in
                                 [*new_items[name], *(f"    was {line.strip()}" for line in old_items[name])]])
    body += _section("removed (your global ones apply again)",
                     [line for name in removed for line in old_items[name]])
    if same:
        body.append(f"Unchanged ({len(same)}, as you trusted them): {', '.join(same)}")
    body += _ignored(problems)
    return "\n".join([*header, "", *body, "", *_NOTES]) + "\n"


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"  {title}:", *(f"  {line}" for line in lines)] if lines else []


def _problem(problem: Any) -> str:
    where = f"line {problem.line}: " if problem.line is not None else ""
    key = f"{problem.key}: " if problem.key else ""
    return visible(f"{where}{key}{problem.message}")


def describe_file(file: Path) -> str:
    """`describe_content` of the project hooks file as it is on disk now (read as the loader does)."""
    content = _read_hooks(Path(file))
    return describe_content(file, content)


def _read_hooks(file: Path) -> bytes:
    """The bytes of a project hooks file, read the loader's way; OSError saying why not."""
    from wrapagent.hooks.config_read import project_root_of_hooks_file, read_project_hooks

    root = project_root_of_hooks_file(str(file))
    if root is None:
        raise OSError("not a project hooks file (<project>/.wrapagent/hooks.toml)")
    exists, data, error = read_project_hooks(root)
    if not exists:
        raise FileNotFoundError("No such file or directory")
    if data is None:
        raise OSError(error)
    return data


# ---------------------------------------------------------------------- command


def _target(path: str | None, cwd: Path) -> Path:
    """The project hooks file meant: PATH as given (a folder means its project's
    `.wrapagent/hooks.toml`, `.wrapagent` itself its parent's), else the cwd's project's.
    Lexical, never resolved: a link in `.wrapagent` is for the reader to refuse."""
    if path is None:
        return paths.project_hooks_file(paths.find_project_root(cwd))
    target = Path(os.path.abspath(path if os.path.isabs(path) else cwd / path))
    if target.name == ".wrapagent" and target.is_dir():
        target = target.parent
    if target.is_dir():
        target = paths.project_hooks_file(target)
    return target


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
            state = "ok" if content_sha256(_read_hooks(Path(entry.path))) == entry.sha256 else "changed since trusted"
        except FileNotFoundError:
            state = "missing"
        except OSError as exc:
            state = f"not used: {exc}"
        print(f"{field(entry.path)}  sha256 {field(entry.sha256[:12])}  trusted {field(entry.trusted_at)}  "
              f"({field(state)})", file=stdout)
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
    shown = field(str(file))  # a folder name may hold escape sequences: printed inert, every time
    if revoke:
        if store.revoke(file):
            print(f"revoked trust for {shown}", file=stdout)
        else:
            print(f"{shown} was not trusted; nothing to revoke", file=stdout)
        return 0
    try:
        content = _read_hooks(file)  # once; the review, the check and the pin all use these bytes
    except OSError as exc:
        print(visible(f"wrapagent: cannot read {file}: {exc.strerror or exc}"), file=stderr)
        return 1
    if store.check(file, content) == TRUSTED:
        print(f"{shown} is already trusted (this exact content)", file=stdout)
        return 0
    reason = _refusal(stdin, stdout, env)
    if reason is not None:
        print(f"wrapagent: {reason}: wrapagent trust {field(shell_word(str(file)))}", file=stderr)
        return 1
    before = store.trusted_before(file)
    review = describe_changes(file, content, *before) if before is not None else None
    stdout.write((review or describe_content(file, content)) + "\n")
    stdout.write("Trust this file? [y/N] ")
    stdout.flush()
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        print(f"not trusted: {shown}", file=stdout)
        return 1
    store.trust(file, content)  # the bytes shown above, even if the file changed meanwhile
    print(f"trusted {shown}; any edit to it needs `wrapagent trust` again", file=stdout)
    return 0
