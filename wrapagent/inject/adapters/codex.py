"""codex (@openai/codex 0.169): Responses-API TUI, native binary behind a node launcher.

Measured (docs/cli-behaviour.md, bench/ready_timeline.md): ready when the
composer's prompt glyph `›` shows with text after it (0.3-1.2 s): the placeholder
`Ask Codex to do anything` from 0.150 on, a rotating suggestion before (`Run /review
on my current changes`); a `›` on a numbered choice is a dialog. A bracketed paste arrives
verbatim; an Enter within 120 ms of fast typing becomes a newline, which is
why wrapagent never sends Enter itself.
"""

from __future__ import annotations

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar

_COMMON_VALUES = frozenset({
    "-c", "--config", "-m", "--model", "-p", "--profile", "-s", "--sandbox",
    "-a", "--ask-for-approval", "-C", "--cd", "--add-dir", "--enable", "--disable",
    "--local-provider", "--remote", "--remote-auth-token-env",
})
_COMMON_FLAGS = frozenset({
    "--oss", "--full-auto", "--dangerously-bypass-approvals-and-sandbox", "--search",
    "--no-alt-screen", "--no-daemon", "-h", "--help", "-V", "--version",
    "--strict-config", "--approve-for-me", "--dangerously-bypass-hook-trust", "--worktree",
})
# Option lists are from `codex --help` / `codex exec --help` of 0.169.0.
# -i/--image takes several files (clap num_args 1..): deliberately not listed,
# so a command line using it is "unsure" and left alone.

EXEC = ArgvGrammar(
    value_options=_COMMON_VALUES | {"--output-schema", "--color", "-o", "--output-last-message",
                                    "--thread-source", "--cyber-access-program"},
    flag_options=_COMMON_FLAGS | {"--skip-git-repo-check", "--json", "--ephemeral", "--trust",
                                  "--ignore-user-config", "--ignore-rules"},
    subcommands=frozenset({"resume", "review", "help"}),
    stdin_marker="-",
    oneshot=True,
)

# The prompt glyph outlives the placeholder text (which changed at 0.150 and rotates before).
COMPOSER = r"(?m)^[ \t]*› (?![ \t]*\d{1,2}[.)][ \t])\S"

# `codex resume [--last | SESSION_ID]`: the resumed conversation's composer gets the blocks on the
# first typed message (`is_resume` true). A prompt on the command line after the session
# (`resume --last PROMPT`, `resume ID PROMPT`) is not recognised: it goes as given, and the
# first typed message gets the blocks.
RESUME = ArgvGrammar(
    value_options=_COMMON_VALUES,
    flag_options=_COMMON_FLAGS | {"--last", "--all", "--include-non-interactive"},
    positional_prompt=False,
)

ADAPTER = Adapter(
    name="codex",
    ready_patterns=(COMPOSER,),
    delivery="paste",
    # `/` commands, `!` shell commands, `?` (on an empty composer) the shortcuts.
    command_prefixes=("/", "!", "?"),
    resume_subcommands=("resume",),
    grammar=ArgvGrammar(
        value_options=_COMMON_VALUES,
        flag_options=_COMMON_FLAGS,
        subcommands=frozenset({
            "agents", "review", "login", "logout", "mcp", "mcp-server", "plugin", "app-server",
            "app", "remote-control", "completion", "update", "doctor", "sandbox", "debug",
            "apply", "a", "queue", "archive", "delete", "migrate-rollouts",
            "migrate-nfs-db", "unarchive", "fork", "cloud", "exec-server", "features", "help",
            "responses-api-proxy", "stdio-to-uds",
        }),
        prompt_subcommands={"exec": EXEC, "e": EXEC, "resume": RESUME},
    ),
    quit_keys=(b"\x03",),
    compact_commands=("/compact",),
    reset_commands=("/new",),  # starts a fresh conversation (measured, docs/cli-behaviour.md)
    # In a git repository `/new` first asks where the new chat runs; the placeholder shows
    # again once the composer is back.
    reset_ready_patterns=(COMPOSER,),
)
