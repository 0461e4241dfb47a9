"""gemini (@google/gemini-cli 0.61): node, relaunches itself (two processes, one group).

Measured (docs/cli-behaviour.md): ready when `Type your message
or @path/to/file` shows, together with `ESC[?2004h` (4-6 s); input typed
before that is lost. A bracketed paste arrives byte-exact. With piped stdin
and a prompt argument the message is stdin + "\\n\\n" + argument, so the
blocks go on stdin then.
"""

from __future__ import annotations

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar

ADAPTER = Adapter(
    name="gemini",
    aliases=("gemini-cli",),
    ready_patterns=(r"Type your message or @path/to/file",),
    ready_quiet_secs=0.1,
    delivery="paste",
    settle_secs=0.06,
    # `/` commands, `!` shell mode. (`@path` is part of a message: it gets the blocks.)
    command_prefixes=("/", "!"),
    resume_flags=("-r", "--resume"),
    stdin_before_arg=True,
    piped_stdin_is_prompt=True,
    grammar=ArgvGrammar(
        # From `gemini --help` of 0.61.0. -w/--worktree takes an optional
        # value and the [array] options are variadic: left unknown (unsure).
        value_options=frozenset({"-m", "--model", "--approval-mode", "-o", "--output-format",
                                 "--delete-session", "-r", "--resume", "--session-file",
                                 "--session-id"}),
        flag_options=frozenset({"-d", "--debug", "-y", "--yolo", "-s", "--sandbox",
                                "--screen-reader", "-l", "--list-extensions", "--list-sessions",
                                "--experimental-acp", "-v", "--version", "-h", "--help",
                                "--raw-output", "--accept-raw-output-risk", "--skip-trust",
                                "--acp"}),
        prompt_options=frozenset({"-p", "--prompt", "-i", "--prompt-interactive"}),
        oneshot_flags=frozenset(),
        subcommands=frozenset({"mcp", "extensions", "extension", "skills", "skill", "hooks",
                                "hook", "gemma"}),
    ),
    quit_keys=(b"\x03", b"\x03"),
    compact_commands=("/compress",),
    reset_commands=("/clear",),  # starts a fresh conversation (measured, docs/cli-behaviour.md)
)
