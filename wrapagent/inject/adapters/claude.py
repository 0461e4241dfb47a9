"""claude (@anthropic-ai/claude-code 2.1.330): native Bun binary, fullscreen renderer.

Measured (docs/cli-behaviour.md): ready when the `❯` prompt sits
between its rules with the footer below (0.9-2.1 s). A bracketed paste of 4+
lines or ~800+ chars reaches the model wrapped in `<pasted_content>`, so the
block is *typed*: no paste markers, `\\n` newlines, <=256-byte chunks ~30 ms
apart (5 ms apart is detected as a paste again).
"""

from __future__ import annotations

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar

ADAPTER = Adapter(
    name="claude",
    aliases=("claude-code",),
    # The footer's key hint, not the mode's name: claude's first frame shows the composer and
    # the mode alone (`⏵⏵ accept edits on`, `⏸ plan mode on`), then runs its start-up checks,
    # which may put a dialog over the composer (on a fresh profile with a non-auto default mode:
    # "Make auto mode your default permission mode?"), and only then draws the full footer
    # (`? for shortcuts` in manual mode, `(shift+tab to cycle)` in the others). Keys written
    # into that first frame went into the dialog (measured on 2.1.330 in every permission mode).
    ready_patterns=(r"❯", r"\? for shortcuts|shift\+tab to cycle"),
    # The generic rule's bound: longer than the quiet stretch between that first frame and the
    # start-up question (up to 1.26 s measured on a loaded 2-core machine; at 1 s the blocks
    # went into the question).
    fallback_quiet_secs=3.0,
    delivery="typed",
    typed_chunk_bytes=256,
    typed_gap_secs=0.03,
    # claude echoes typed input ~100 ms late (it batches input to detect
    # pastes); once the echo came, the block is one closed input event and
    # the held keys can follow almost at once (measured: 223-byte block,
    # echo after 94-163 ms).
    settle_secs=0.02,
    # `/` commands, `!` bash mode, `#` memory mode, `?` (on an empty composer)
    # the shortcuts panel.
    command_prefixes=("/", "!", "#", "?"),
    resume_flags=("-c", "--continue", "-r", "--resume"),
    grammar=ArgvGrammar(
        value_options=frozenset({
            "--output-format", "--input-format", "--json-schema", "--max-budget-usd",
            "--max-turns", "--system-prompt", "--system-prompt-file", "--append-system-prompt",
            "--append-system-prompt-file", "--permission-mode", "--model", "--agent",
            "--agents", "--fallback-model", "--settings", "--session-id", "--setting-sources",
            "--permission-prompt-tool", "--autocompact", "--debug-file", "--effort",
            "--environment", "-n", "--name", "--permission-prompts",
            "--remote-control-session-name-prefix", "--system-prompt-snapshot",
        }),
        flag_options=frozenset({
            "--verbose", "--include-partial-messages", "--replay-user-messages",
            "--dangerously-skip-permissions", "--allow-dangerously-skip-permissions",
            "--mcp-debug", "-c", "--continue", "--fork-session", "--ide",
            "--strict-mcp-config", "--disable-slash-commands", "-h", "--help", "-v",
            "--version", "--bare", "--chrome", "--no-chrome", "--ax-screen-reader", "--bg",
            "--background", "--brief", "--desktop", "--exclude-dynamic-system-prompt-sections",
            "--forward-subagent-text", "--include-hook-events", "--no-session-persistence",
            "--restricted", "--safe-mode", "--tmux",
        }),
        # From `claude --help` of 2.1.330. -d/--debug, -r/--resume, -w,
        # --cloud, --from-pr, --teleport… take an OPTIONAL value; --add-dir,
        # --allowedTools, --mcp-config, --file… are variadic: all left
        # unknown, so a command line using them is "unsure" and argv is left
        # alone (the first typed message gets the blocks instead).
        oneshot_flags=frozenset({"-p", "--print"}),
        subcommands=frozenset({
            "config", "mcp", "plugin", "plugins", "migrate-installer", "setup-token",
            "doctor", "update", "upgrade", "install", "agents", "auth", "remote-control",
            "attach", "auto-mode", "gateway", "import", "logs", "purge", "respawn", "rm",
            "stop", "kill", "ultrareview",
        }),
    ),
    quit_keys=(b"\x03", b"\x03"),
    compact_commands=("/compact",),
    reset_commands=("/clear",),  # starts a fresh conversation (measured, docs/cli-behaviour.md)
)
