"""The built-in demo agent (`wrapagent demo`), also the fast stand-in for real CLIs in tests."""

from __future__ import annotations

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar

ADAPTER = Adapter(
    name="demo",
    ready_patterns=(r"(?m)^demo>",),
    ready_quiet_secs=0.02,
    delivery="paste",
    settle_secs=0.03,
    command_prefixes=("/", "!"),
    resume_flags=("--resume",),
    grammar=ArgvGrammar(
        value_options=frozenset({"--log", "--think-secs"}),
        flag_options=frozenset({"--resume", "--no-paste", "--typed"}),
        oneshot_flags=frozenset({"-p", "--print"}),
    ),
    quit_keys=(b"\x04",),
    reset_commands=("/clear", "/new"),
    compact_commands=("/compact",),
    reset_ready_patterns=(r"(?m)^demo>",),
    wait_quiet_secs=2.0,  # its thinking spinner ticks every 0.1 s
)
