"""The lifecycle hook events: the one list every other part is built from.

Each event says when it fires, which `{placeholders}` its command gets, what
JSON its stdin carries, its default timeout and how the trust review describes
it. Config checking (the tables a hooks.toml may have, their default timeouts),
`config check`, the trust review, the starter hooks.toml, shell completion and
the reference table in docs/hooks.md all read this module, so adding an event
here is enough for all of them (tests/hooks/test_events.py checks that);
the architecture test fails when a list of event names appears elsewhere.

No imports beyond the frozen-value base: the config loader imports this before
the tool starts.
"""

from __future__ import annotations

from wrapagent.values import Frozen


class Placeholder(Frozen):
    """A `{name}` a hook command may use, and the environment variable with the same value."""

    __slots__ = ("name", "meaning", "env")
    _defaults = {"env": None}

    name: str
    meaning: str
    env: str | None


class StdinField(Frozen):
    """One key of the JSON object an event's hook reads on stdin."""

    __slots__ = ("name", "meaning")

    name: str
    meaning: str


class HookEvent(Frozen):
    """One lifecycle event: a `[name]` table in hooks.toml."""

    __slots__ = ("name", "fires", "placeholders", "stdin_fields", "default_timeout", "review", "extra_keys")
    _defaults = {"stdin_fields": (), "extra_keys": ()}

    name: str
    fires: str
    """When it fires, one line (starter config, docs, `config check`)."""
    placeholders: tuple[str, ...]
    """Names from PLACEHOLDERS with a value in this event; the others are empty."""
    stdin_fields: tuple[StdinField, ...]
    """The JSON fields on the hook's stdin; none: stdin is /dev/null."""
    default_timeout: float
    review: str
    """What `wrapagent trust` says the hook does, before showing its command."""
    extra_keys: tuple[str, ...]
    """Keys of its table beyond enabled/command/timeout_secs."""


PLACEHOLDERS: tuple[Placeholder, ...] = (
    Placeholder("session_id", "this session's id (a ULID)", "WRAPAGENT_SESSION_ID"),
    Placeholder("session_dir", "its record directory (session.json, session.log)", "WRAPAGENT_SESSION_DIR"),
    Placeholder("sessions_root", "the project's sessions repository"),
    Placeholder("tool", "codex, claude, gemini, opencode, ...", "WRAPAGENT_TOOL"),
    Placeholder("project_root", "the git top-level (else the working directory)", "WRAPAGENT_PROJECT_ROOT"),
    Placeholder("cwd", "the working directory", "WRAPAGENT_WORKING_DIR"),
    Placeholder("exit_code", "the tool's exit code"),
    Placeholder("turn", "user submissions so far (1, 2, ...)", "WRAPAGENT_TURN"),
    Placeholder("reason", "why the agent waits: idle (its turn ended) or dialog (an approval or "
                "question is up)", "WRAPAGENT_REASON"),
)

_SESSION = ("session_id", "session_dir", "sessions_root", "tool", "project_root", "cwd")

_WAITING_STDIN = (
    StdinField("session_id", "this session's id"),
    StdinField("tool", "the wrapped tool"),
    StdinField("turn", "user submissions so far (a number)"),
    StdinField("reason", '"idle" or "dialog", as `{reason}`'),
)

PRE_RUN, POST_RUN, SESSION_COMPLETE, WAITING_FOR_INPUT = (
    "pre_run", "post_run", "session_complete", "waiting_for_input")

REGISTRY: list[HookEvent] = [
    HookEvent(PRE_RUN, "before the tool starts; exit 2 refuses the launch", _SESSION,
              default_timeout=30.0,
              review="runs before the tool starts, and can refuse to start it (exit 2)"),
    HookEvent(POST_RUN, "after the tool exits and the session record is saved", (*_SESSION, "exit_code"),
              default_timeout=30.0, review="runs after the tool exits"),
    HookEvent(SESSION_COMPLETE, "after post_run; by default commits the session record",
              (*_SESSION, "exit_code"), default_timeout=30.0,
              review="runs when the session is over, instead of committing its record"),
    HookEvent(WAITING_FOR_INPUT, "each time the agent goes quiet after one of your submissions, "
              "or puts up an approval or a question",
              (*_SESSION, "turn", "reason"), stdin_fields=_WAITING_STDIN, default_timeout=10.0,
              review="runs each time the agent waits for you", extra_keys=("quiet_secs",)),
]
"""pre_run, post_run and session_complete in the order they fire; waiting_for_input any number of
times in between. This order is the order of `config check` and of the JSON outputs."""


def names() -> tuple[str, ...]:
    """Every event's name, in the registry's order."""
    return tuple(event.name for event in REGISTRY)


def get(name: str) -> HookEvent:
    """The event called `name` (KeyError: not an event)."""
    for event in REGISTRY:
        if event.name == name:
            return event
    raise KeyError(name)


def default_timeout(name: str) -> float:
    """Seconds an event's hook may run when its table sets no timeout_secs."""
    return get(name).default_timeout


def placeholder_names() -> tuple[str, ...]:
    return tuple(p.name for p in PLACEHOLDERS)


def events_with(placeholder: str) -> tuple[str, ...]:
    """The events in which `{placeholder}` has a value."""
    return tuple(event.name for event in REGISTRY if placeholder in event.placeholders)


def _where(placeholder: str) -> str:
    having = events_with(placeholder)
    if len(having) == len(REGISTRY):
        return ""
    return f" ({', '.join(having)}; empty elsewhere)"


def placeholder_comment() -> str:
    """The starter hooks.toml's commented list of placeholders and their variables."""
    width = max(len(p.name) for p in PLACEHOLDERS) + 2
    lines = ["# Placeholders, substituted already shell-quoted (do not add quotes):"]
    lines += [f"#   {{{p.name}}}".ljust(width + 6) + f" {p.meaning}{_where(p.name)}" for p in PLACEHOLDERS]
    line = "# The same values are in the environment:"
    for p in PLACEHOLDERS:
        if p.env is None:
            continue
        if len(line) + len(p.env) + 2 > 88:
            lines.append(line)
            line = "#"
        line += f" {p.env}" + ("," if p is not _last_with_env() else ".")
    lines.append(line)
    return "\n".join(lines) + "\n"


def _last_with_env() -> Placeholder:
    return [p for p in PLACEHOLDERS if p.env][-1]


def reference_table() -> str:
    """The Markdown table of events in docs/hooks.md (a test keeps the page equal to this)."""
    rows = ["| event | fires | placeholders with a value | stdin | default timeout |",
            "|---|---|---|---|---|"]
    for event in REGISTRY:
        holders = ", ".join(f"`{{{name}}}`" for name in event.placeholders)
        stdin = (", ".join(f"`{field.name}`: {field.meaning}" for field in event.stdin_fields)
                 or "/dev/null")
        rows.append(f"| `[{event.name}]` | {event.fires} | {holders} | {stdin} | {event.default_timeout:g} s |")
    return "\n".join(rows) + "\n"
