"""What wrapagent needs to know about one tool, as data.

A TUI release that moves a readiness marker or adds an option is a one-line
change in that tool's module; the machinery reading these fields lives in
`injection.py` (interactive delivery) and `runner.py` (argv and stdin).
"""

from __future__ import annotations

from wrapagent.values import Factory, Frozen
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Sequence

# Frozen values, not dataclasses: these are built before every wrapped tool
# starts, and `dataclasses` costs ~15 ms to import (see wrapagent/values.py).
# Each class lists its fields in `__slots__` (constructor order) and their
# defaults in `_defaults`; the annotated lines below document the fields.


class ArgvGrammar(Frozen):
    """Enough of a tool's command line to find the prompt argument.

    Anything not described here (an unknown option, a variadic option) makes
    the scan give up: wrapagent then leaves argv alone and injects into the
    first interactive message instead.
    """

    __slots__ = (
        "value_options",
        "flag_options",
        "prompt_options",
        "positional_prompt",
        "subcommands",
        "prompt_subcommands",
        "stdin_marker",
        "oneshot",
        "oneshot_flags",
        "quote_join_args",
    )
    _defaults = {
        "value_options": frozenset(),
        "flag_options": frozenset(),
        "prompt_options": frozenset(),
        "positional_prompt": True,
        "subcommands": frozenset(),
        "prompt_subcommands": Factory(dict),
        "stdin_marker": None,
        "oneshot": False,
        "oneshot_flags": frozenset(),
        "quote_join_args": False,
    }

    value_options: frozenset[str]
    """Options that take a value (`-m X`, `--model X`; `--model=X` is handled generically)."""
    flag_options: frozenset[str]
    """Options known to take no value."""
    prompt_options: frozenset[str]
    """Options whose value is the prompt (`gemini -p X`, `opencode --prompt X`)."""
    positional_prompt: bool
    """The first positional argument is the prompt."""
    subcommands: frozenset[str]
    """A first positional naming one of these is a subcommand: no prompt to find."""
    prompt_subcommands: Mapping[str, "ArgvGrammar"]
    """Subcommands that take a prompt, each with its own grammar (`codex exec`, `opencode run`)."""
    stdin_marker: str | None
    """A prompt argument meaning "read the prompt from stdin" (`codex exec -`)."""
    oneshot: bool
    """This (sub)command runs one turn and exits."""
    oneshot_flags: frozenset[str]
    """Flags that turn the command into a one-turn run (`claude -p`)."""
    quote_join_args: bool
    """The tool joins several message arguments itself, quoting those with spaces (`opencode run`)."""


class PromptPlan(Frozen):
    """Where the first message of this run comes from, as far as argv tells."""

    __slots__ = ("kind", "index", "oneshot", "args", "reason")
    _defaults = {"index": None, "oneshot": False, "args": (), "reason": ""}

    kind: str
    """"argv" (rewrite argv[index]), "stdin-args" (move message args to stdin),
    "stdin" (prompt comes on stdin), "interactive", or "none" (subcommand, unsure)."""
    index: int | None
    oneshot: bool
    args: tuple[int, ...]
    reason: str


class Adapter(Frozen):
    """Per-tool behaviour. Fields are data so tests and `doctor` can show them."""

    __slots__ = (
        "name",
        "aliases",
        "ready_patterns",
        "ready_quiet_secs",
        "fallback_quiet_secs",
        "requires_bracketed_paste",
        "delivery",
        "typed_chunk_bytes",
        "typed_gap_secs",
        "settle_secs",
        "settle_max_secs",
        "command_prefixes",
        "resume_flags",
        "resume_subcommands",
        "grammar",
        "stdin_before_arg",
        "piped_stdin_is_prompt",
        "env_for_child",
        "quit_keys",
        "reset_commands",
        "compact_commands",
        "reset_ready_patterns",
        "reset_quiet_secs",
        "wait_quiet_secs",
        "esc_clears_composer",
    )
    _defaults = {
        "aliases": (),
        "ready_patterns": (),
        "ready_quiet_secs": 0.05,
        "fallback_quiet_secs": 1.0,
        "requires_bracketed_paste": True,
        "delivery": "paste",
        "typed_chunk_bytes": 256,
        "typed_gap_secs": 0.03,
        "settle_secs": 0.05,
        "settle_max_secs": 1.5,
        "command_prefixes": ("/", "!"),
        "resume_flags": (),
        "resume_subcommands": (),
        "grammar": Factory(ArgvGrammar),
        "stdin_before_arg": False,
        "piped_stdin_is_prompt": False,
        "env_for_child": None,
        "quit_keys": (b"\x03\x03",),
        "reset_commands": ("/clear", "/new", "/reset"),
        "compact_commands": (),
        "reset_ready_patterns": (),
        "reset_quiet_secs": 0.3,
        "wait_quiet_secs": 3.0,
        "esc_clears_composer": False,
    }

    name: str
    aliases: tuple[str, ...]
    ready_patterns: tuple[str, ...]
    """Regexes that must all match the rendered screen for the composer to be ready."""
    ready_quiet_secs: float
    """Output must have been quiet this long after the markers showed."""
    fallback_quiet_secs: float | None
    """The generic rule's bound (`inject/readiness.py`): bracketed paste on, something drawn that
    is not a dialog, no marker, and output quiet this long = ready anyway (the tool's screen
    changed in a release). Longer than any quiet stretch the four CLIs have with bracketed
    paste on, something drawn, before their composer shows: 0.32 s, pinned and older releases
    (bench/ready_timeline.md; the long quiet stretches, up to 3.6 s in opencode, are on a blank
    screen, which never counts). None: markers only."""
    requires_bracketed_paste: bool
    """Readiness also needs `ESC[?2004h` to have been seen."""
    delivery: str
    """"paste": one bracketed paste; "typed": plain bytes in chunks (claude wraps big pastes)."""
    typed_chunk_bytes: int
    typed_gap_secs: float
    settle_secs: float
    """After delivery: output quiet this long means the composer took the block."""
    settle_max_secs: float
    command_prefixes: tuple[str, ...]
    """A first input starting with one of these is a command, not a message."""
    resume_flags: tuple[str, ...]
    resume_subcommands: tuple[str, ...]
    grammar: ArgvGrammar
    stdin_before_arg: bool
    """With both a prompt argument and piped stdin, the tool puts stdin FIRST (gemini)."""
    piped_stdin_is_prompt: bool
    """With no prompt argument, piped stdin is the prompt of a one-turn run (gemini)."""
    env_for_child: Callable[[Mapping[str, str]], dict[str, str]] | None
    """Adjust the child's environment (opencode: keep pastes verbatim)."""
    quit_keys: tuple[bytes, ...]
    """How `doctor --probe` quits the tool cleanly."""
    reset_commands: tuple[str, ...]
    """Commands that throw the conversation away: submitted in full, they re-arm injection."""
    compact_commands: tuple[str, ...]
    """Commands that replace the conversation with a summary (`/compact`, gemini's `/compress`),
    and with it the blocks: submitted on an empty composer (arguments allowed), the next message
    gets fresh blocks, as after a reset, in the same conversation."""
    reset_ready_patterns: tuple[str, ...]
    """After a reset, regexes that the tool's fresh drawing must show before the next message
    gets the blocks (codex may show a dialog first). Empty: output quiet `reset_quiet_secs`
    after the reset is enough (claude redraws only what changed, so no marker shows again)."""
    reset_quiet_secs: float
    wait_quiet_secs: float
    """Default `[waiting_for_input] quiet_secs`: output quiet this long after a turn = waiting.
    Above the longest gap of the tools' thinking animations (measured 1.15-1.40 s), with margin."""
    esc_clears_composer: bool
    """A lone Esc empties the composer. False (the default): what Esc did is unknown, so text
    typed after it is never taken for a reset command or a new message (a guess may miss a
    reset, never invent one). Set it only for a tool measured to clear on Esc."""

    # -- argv ----------------------------------------------------------------

    def is_resume(self, args: Sequence[str]) -> bool:
        """True when argv resumes an earlier conversation (guards get `is_resume`)."""
        positional = _first_positional(args, self.grammar)
        if positional is not None and args[positional] in self.resume_subcommands:
            return True
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            if name in self.resume_flags:
                return True
        return False

    def plan_prompt(self, args: Sequence[str], *, stdin_piped: bool) -> PromptPlan:
        return plan_prompt(self.grammar, args, stdin_piped=stdin_piped)

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        if self.env_for_child is None:
            return dict(env)
        return self.env_for_child(env)


def _first_positional(args: Sequence[str], grammar: ArgvGrammar) -> int | None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1 if i + 1 < len(args) else None
        if arg.startswith("-") and arg != "-":
            name = arg.split("=", 1)[0]
            if "=" not in arg and name in grammar.value_options | grammar.prompt_options:
                i += 2
                continue
            i += 1
            continue
        return i
    return None


def plan_prompt(grammar: ArgvGrammar, args: Sequence[str], *, stdin_piped: bool,
                offset: int = 0, oneshot: bool = False) -> PromptPlan:
    """Scan `args` (the tool's arguments, without argv[0]) for the prompt.

    Returns indexes relative to the full argv (argv[0] is the tool), hence
    `offset + 1`.
    """
    oneshot = oneshot or grammar.oneshot
    prompt_index: int | None = None
    positionals: list[int] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positionals.extend(range(i + 1, len(args)))
            break
        if arg.startswith("-") and arg != "-" and not positionals:
            name, eq, _ = arg.partition("=")
            if name in grammar.oneshot_flags:
                oneshot = True
            if name in grammar.prompt_options:
                if eq:
                    return PromptPlan("none", reason=f"{name}=… form left alone")
                if i + 1 >= len(args):
                    return PromptPlan("none", reason=f"{name} without a value")
                prompt_index = i + 1
                i += 2
                continue
            if name in grammar.value_options:
                i += 1 if eq else 2
                continue
            if name in grammar.flag_options or name in grammar.oneshot_flags:
                i += 1
                continue
            return PromptPlan("none", reason=f"unknown option {name}")
        if arg.startswith("-") and arg != "-" and positionals:
            # Options after the first positional: most CLIs accept them; we
            # still need to skip their values correctly.
            name, eq, _ = arg.partition("=")
            if name in grammar.value_options and not eq:
                i += 2
                continue
            if name in grammar.flag_options | grammar.value_options | grammar.oneshot_flags:
                if name in grammar.oneshot_flags:
                    oneshot = True
                i += 1
                continue
            return PromptPlan("none", reason=f"unknown option {name}")
        if not positionals and arg in grammar.prompt_subcommands:
            sub = grammar.prompt_subcommands[arg]
            return plan_prompt(sub, args[i + 1:], stdin_piped=stdin_piped,
                               offset=offset + i + 1, oneshot=oneshot)
        if not positionals and arg in grammar.subcommands:
            return PromptPlan("none", reason=f"subcommand {arg}")
        positionals.append(i)
        i += 1
    base = offset + 1
    if prompt_index is not None:
        if grammar.stdin_marker is not None and args[prompt_index] == grammar.stdin_marker:
            return PromptPlan("stdin" if stdin_piped else "none", oneshot=oneshot)
        return PromptPlan("argv", index=base + prompt_index, oneshot=oneshot)
    if grammar.positional_prompt and positionals:
        first = positionals[0]
        if grammar.stdin_marker is not None and args[first] == grammar.stdin_marker:
            return PromptPlan("stdin" if stdin_piped else "none", oneshot=oneshot)
        if grammar.quote_join_args:
            return PromptPlan("stdin-args", oneshot=oneshot,
                              args=tuple(base + p for p in positionals))
        return PromptPlan("argv", index=base + first, oneshot=oneshot)
    if oneshot:
        return PromptPlan("stdin" if stdin_piped else "none", oneshot=True)
    return PromptPlan("interactive")
