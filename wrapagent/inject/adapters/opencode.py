"""opencode (opencode-ai 1.18.33): bun-compiled TUI on the alternate screen.

Measured (docs/cli-behaviour.md): ready only when `Ask anything`
shows (9-24 s; `ESC[?2004h` comes seconds earlier and does not mean ready).
Pastes of 3+ lines are trimmed and space-joined unless
`experimental.disable_paste_summary` is set, which wrapagent sets in the
child's `OPENCODE_CONFIG_CONTENT`, merged into any value the user has.
`opencode run` wraps each message argument containing a space in quotes, so
its message arguments are moved to stdin, quoted exactly as opencode would.
"""

from __future__ import annotations

import json
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar


def _child_env(env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    try:
        current = json.loads(env.get("OPENCODE_CONFIG_CONTENT") or "{}")
    except ValueError:
        return out  # the user's value is not JSON: leave it to opencode to complain
    if not isinstance(current, dict):
        return out
    experimental = current.setdefault("experimental", {})
    if isinstance(experimental, dict):
        experimental.setdefault("disable_paste_summary", True)
    out["OPENCODE_CONFIG_CONTENT"] = json.dumps(current)
    return out


def quote_join(args: list[str]) -> str:
    """opencode run's own join: `a.includes(" ") ? '"' + a.replace(/"/g, '\\\\"') + '"' : a`."""
    return " ".join('"' + a.replace('"', '\\"') + '"' if " " in a else a for a in args)


# From `opencode --help` / `opencode run --help` of 1.18.33. --title and
# --port of `run` take an optional value, -f/--file and --cors are arrays:
# left unknown (unsure).
RUN = ArgvGrammar(
    value_options=frozenset({"-m", "--model", "--agent", "-s", "--session", "--format",
                             "--attach", "--command", "--variant", "--log-level", "-p",
                             "--password", "-u", "--username", "--dir"}),
    flag_options=frozenset({"-c", "--continue", "--share", "--print-logs", "--fork",
                            "--thinking", "-h", "--help", "-v", "--version", "--pure",
                            "-i", "--interactive", "--auto"}),
    oneshot=True,
    quote_join_args=True,
)

ADAPTER = Adapter(
    name="opencode",
    ready_patterns=(r"Ask anything",),
    ready_quiet_secs=0.1,
    delivery="paste",
    # Its paste handling is asynchronous, but the frame showing the inserted
    # block arrives in one burst 35-50 ms after the paste (measured); 50 ms
    # of quiet after it is enough.
    settle_secs=0.05,
    command_prefixes=("/", "!"),
    resume_flags=("-c", "--continue", "-s", "--session"),
    env_for_child=_child_env,
    grammar=ArgvGrammar(
        value_options=frozenset({"-m", "--model", "-s", "--session", "--agent", "--port",
                                 "--hostname", "--log-level", "--mdns-domain", "--replay-limit"}),
        flag_options=frozenset({"-c", "--continue", "--print-logs", "-h", "--help", "-v",
                                "--version", "--fork", "--pure", "--mdns", "--auto", "--mini",
                                "--no-replay"}),
        prompt_options=frozenset({"--prompt"}),
        positional_prompt=False,
        subcommands=frozenset({"auth", "providers", "plug", "agent", "upgrade", "uninstall", "serve", "web",
                               "models", "stats", "export", "import", "github", "pr", "mcp",
                               "acp", "debug", "session", "attach", "completion", "generate",
                               "plugin", "db"}),
        prompt_subcommands={"run": RUN},
    ),
    quit_keys=(b"\x03",),
    compact_commands=("/compact", "/summarize"),
    reset_commands=("/new",),  # starts a fresh conversation (measured, docs/cli-behaviour.md)
)
