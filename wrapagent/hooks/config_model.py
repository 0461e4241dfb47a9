"""The configuration as typed, frozen values: lifecycle hooks, prompt guards, the pre_session hook,
the layers they came from and their problems.

Separate from the loader so the hook runner, the guards and `doctor` can name these types
without pulling in TOML parsing.
"""

from __future__ import annotations

from wrapagent.hooks import events
from wrapagent.values import Factory, Frozen
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping

EVENTS = events.names()
WAITING_FOR_INPUT = events.WAITING_FOR_INPUT
"""Fired (in its own thread) each time the agent goes quiet after a user submission."""
DEFAULT_SESSION_COMPLETE = (
    "cd {sessions_root} && git --git-dir=.git --work-tree=. add -- {session_id}/"
    " && git --git-dir=.git --work-tree=. commit -q --allow-empty -m 'session {session_id} complete' -- {session_id}/"
)
"""What the default session_complete does, as a command. wrapagent runs it in-process
(history/sessions_repo.py) through its git helper, so nothing inherited from a git hook
(`GIT_DIR`, `GIT_INDEX_FILE`) reaches it; as text it names the repository (`--git-dir`: no
upward discovery past a damaged `.git`) and commits only the session's folder."""
LEGACY_DEFAULT_SESSION_COMPLETE = (
    "cd {sessions_root} && git add {session_id}/ && git commit -m 'session {session_id} complete' -q --allow-empty"
)
"""The default before it named the repository; copied verbatim into a config it means the default."""
DEFAULT_LIFECYCLE_TIMEOUT = events.default_timeout(events.POST_RUN)
DEFAULT_WAITING_TIMEOUT = events.default_timeout(events.WAITING_FOR_INPUT)
DEFAULT_GUARD_TIMEOUT = 10.0
DEFAULT_PRE_SESSION_TIMEOUT = 10.0
DEFAULT_SOURCE = "<default>"

KNOWN_TOOLS = ("codex", "claude", "gemini", "opencode")
# CSA spells some transports differently; both spellings are accepted.
TOOL_ALIASES = {"claude-code": "claude", "gemini-cli": "gemini"}

LAYER_GLOBAL_HOOKS = "global-hooks"
LAYER_GLOBAL_CONFIG = "global-config"
LAYER_PROJECT_HOOKS = "project-hooks"

def normalize_tool(name: str) -> str:
    """Canonical transport name: lower case, CSA aliases mapped (`claude-code` → `claude`)."""
    name = name.strip().lower()
    return TOOL_ALIASES.get(name, name)


class Problem(Frozen):
    """One validation finding; `str()` is `path:line: key: message` (missing parts left out)."""

    __slots__ = ("path", "severity", "message", "line", "key")
    _defaults = {"line": None, "key": None}

    path: str
    severity: str  # "error" | "warning"
    message: str
    line: int | None
    key: str | None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class LifecycleHook(Frozen):
    """One lifecycle event's hook; `command` still holds its `{placeholders}`."""

    __slots__ = ("event", "command", "enabled", "timeout_secs", "source", "quiet_secs")
    _defaults = {"quiet_secs": None}

    event: str
    command: str
    enabled: bool
    timeout_secs: float
    source: str  # file path, or "<default>"
    quiet_secs: float | None
    """waiting_for_input only: output quiet this long means waiting (None: the tool's default)."""


class GuardSpec(Frozen):
    """One `[[prompt_guard]]`: exactly one of `command` / `builtin` is set."""

    __slots__ = ("name", "command", "builtin", "args", "timeout_secs", "source", "every_message")
    _defaults = {"every_message": False}

    name: str
    command: str | None
    builtin: str | None
    args: tuple[tuple[str, object], ...]
    timeout_secs: float
    source: str
    every_message: bool
    """Run again for every later message of a conversation (default: its first message only)."""


DEFAULT_STOP_CHECK_TIMEOUT = 300.0
DEFAULT_MAX_CONTINUES = 3
STOP_CHECK = "stop_check"


class StopCheckSpec(Frozen):
    """`[stop_check]`: run when the agent stops; exit 2 with stdout sends it on (a continuation)."""

    __slots__ = ("command", "enabled", "timeout_secs", "max_continues", "quiet_secs", "source")
    _defaults = {"enabled": True, "timeout_secs": DEFAULT_STOP_CHECK_TIMEOUT,
                 "max_continues": DEFAULT_MAX_CONTINUES, "quiet_secs": None, "source": DEFAULT_SOURCE}

    command: str
    enabled: bool
    timeout_secs: float
    max_continues: int
    """Continuations in a row; the count restarts when the user submits a message."""
    quiet_secs: float | None
    """Output quiet this long means the agent stopped (None: waiting_for_input's, else the tool's)."""
    source: str


class PreSessionHook(Frozen):
    """The global pre_session hook: its stdout becomes the `<system-reminder>` block."""

    __slots__ = ("command", "enabled", "transports", "timeout_seconds", "source")

    command: str
    enabled: bool
    transports: tuple[str, ...]  # canonical names; empty = every tool
    timeout_seconds: float
    source: str

    def applies_to(self, tool: str) -> bool:
        return not self.transports or normalize_tool(tool) in self.transports


class Layer(Frozen):
    """One file wrapagent looked at, and what came of it.

    `used` is True when the file exists, has no errors, and is not untrusted.
    `trusted` is None for global files (always trusted) and for a project
    file that was not read (missing, a link, not a regular file, too big).
    `trust` says why a project file is untrusted ("untrusted", or "changed"
    since it was trusted), decided on the bytes the loader read: nobody
    needs to read the file again to say so.
    """

    __slots__ = ("kind", "path", "exists", "used", "trusted", "problems", "trust", "stop_check", "send")
    _defaults = {"trust": None, "stop_check": None, "send": None}

    kind: str  # "global-hooks" | "global-config" | "project-hooks"
    path: str
    exists: bool
    used: bool
    trusted: bool | None
    problems: tuple[Problem, ...]
    trust: str | None  # "trusted" | "untrusted" | "changed" | None (not checked)
    stop_check: StopCheckSpec | bool | None
    """This file's own `[stop_check]` (also when the file is not used, for `doctor`): a StopCheckSpec,
    False (`enabled = false`), or None (not in it)."""
    send: bool | None
    """This file's own `[send] enabled` (None: not in it)."""


class CheckpointSettings(Frozen):
    """`[checkpoints]` in hooks.toml: work-tree snapshots and native transcripts of each session.

    A project file's keys override the global file's, key by key.
    """

    __slots__ = ("enabled", "budget_secs", "transcripts", "max_transcript_bytes", "keep_days", "max_file_mb",
                 "source")
    _defaults = {
        "enabled": True,
        "budget_secs": 2.0,
        "transcripts": True,
        "max_transcript_bytes": 16 * 1024 * 1024,
        "keep_days": 30.0,
        "max_file_mb": 10.0,
        "source": DEFAULT_SOURCE,
    }

    enabled: bool
    """Snapshot the work tree before and after the tool (git projects only)."""
    budget_secs: float
    """A snapshot taking longer is abandoned (huge repositories): no checkpoints, a note in the record."""
    transcripts: bool
    """Copy the tool's own transcripts into the session folder."""
    max_transcript_bytes: int
    """Size cap for all of one session's transcripts together."""
    keep_days: float
    """Checkpoints of sessions older than this are dropped at a later session's end (0 = never)."""
    max_file_mb: float
    """A file larger than this (MB) is left out of a snapshot and listed in the record (0 = no cap)."""
    source: str


DEFAULT_RECORD_MAX_BYTES = 64 * 1024 * 1024
"""A recording stops (with a note) past this many bytes of asciicast text.

Measured on the real CLIs against a mock model: a TUI session writes a few
MiB per hour (spinners and redraws included), gzip keeps about a tenth of
it; 64 MiB is many hours of a busy session, and a runaway tool printing a
build log forever stops costing disk there.
"""


class RecordSettings(Frozen):
    """`[record]` in hooks.toml: the asciicast recording of each interactive session.

    A project file's keys override the global file's, key by key.
    """

    __slots__ = ("enabled", "max_bytes", "source")
    _defaults = {"enabled": True, "max_bytes": DEFAULT_RECORD_MAX_BYTES, "source": DEFAULT_SOURCE}

    enabled: bool
    """Record what the tool shows (never the keys typed) into the state folder."""
    max_bytes: int
    """Size cap of one recording, uncompressed (0 = no cap)."""
    source: str


def _frozen_map(data: Mapping[str, LifecycleHook] | None = None) -> Mapping[str, LifecycleHook]:
    mapping_proxy = type(type.__dict__)  # types.MappingProxyType, without loading `types` before the tool starts
    return mapping_proxy(dict(data or {}))


class Config(Frozen):
    """The effective configuration for one project."""

    __slots__ = ("lifecycle", "guards", "pre_session", "layers", "checkpoints", "stop_check", "send", "agents",
                 "record")
    _defaults = {
        "lifecycle": Factory(_frozen_map),
        "guards": (),
        "pre_session": None,
        "layers": (),
        "checkpoints": Factory(CheckpointSettings),
        "stop_check": None,
        "send": False,
        "agents": (),
        "record": Factory(RecordSettings),
    }

    lifecycle: Mapping[str, LifecycleHook]
    guards: tuple[GuardSpec, ...]
    pre_session: PreSessionHook | None
    layers: tuple[Layer, ...]
    checkpoints: CheckpointSettings
    stop_check: StopCheckSpec | None
    """None when not configured or `enabled = false`."""
    send: bool
    """`[send] enabled = true`: the session takes messages from `wrapagent send`."""
    agents: tuple[str, ...]
    """`[agents] programs` (global hooks.toml only): programs wrapagent types into, beside
    the known agents (`inject/agents.py`)."""
    record: RecordSettings

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(p for layer in self.layers for p in layer.problems)

    @property
    def has_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems)

    def hook_for(self, event: str) -> LifecycleHook | None:
        """The hook to run for `event`, or None.

        A configured but disabled hook returns None (`enabled = false` also
        switches off the default session_complete). An unconfigured
        session_complete falls back to DEFAULT_SESSION_COMPLETE.
        """
        hook = self.lifecycle.get(event)
        if hook is None and event == "session_complete":
            return default_session_complete()
        if hook is None or not hook.enabled:
            return None
        return hook


def default_session_complete() -> LifecycleHook:
    return LifecycleHook("session_complete", DEFAULT_SESSION_COMPLETE, True, DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_SOURCE)
