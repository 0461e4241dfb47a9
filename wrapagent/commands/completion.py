"""Shell completion: `wrapagent completion bash|zsh|fish` and the hidden `wrapagent _complete`.

The shell scripts are thin: on Tab they pass the words typed so far to
`wrapagent _complete SHELL -- WORD…` and offer what it prints. Everything
else (which subcommand, which action, whether the previous word wants a
value) is decided here, once, in Python, so the three shells complete the
same things and a test can check them without a shell. Session ids come
from the sessions folders' names (ULIDs, newest first): no record is read.

Output of `_complete`: one candidate per line, already filtered by the word
being completed; `:files` / `:dirs` ask the shell for its own path
completion. fish gets `candidate<TAB>description`, zsh `candidate:description`
(for `_describe`), bash the bare candidate.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import IO, Mapping, Sequence

from wrapagent import paths

TOOLS = ("codex", "claude", "gemini", "opencode")
SHELLS = ("bash", "zsh", "fish")
FILES, DIRS = ":files", ":dirs"
MAX_IDS = 500
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


@dataclass(frozen=True)
class Command:
    """What may follow a (sub)command: options (each with its value's kind), positionals, actions."""

    help: str = ""
    options: Mapping[str, str | None] = field(default_factory=dict)  # option -> kind of its value
    positionals: tuple[str, ...] = ()  # kinds in order; the last one repeats when `repeat`
    repeat: bool = False
    actions: Mapping[str, "Command"] = field(default_factory=dict)


_HELP = {"-h": None, "--help": None}
_ID = ("ids",)

SPEC: dict[str, Command] = {
    "demo": Command("the built-in demo agent, with your config", {**_HELP, "-p": None}),
    "config": Command("validate or create the configuration", dict(_HELP), actions={
        "check": Command("validate every layer, show the merged result", {**_HELP, "--json": None}),
        "init": Command("write a commented starter hooks.toml", {**_HELP, "--project": None, "--force": None}),
    }),
    "doctor": Command("why didn't my guard show up?",
                      {**_HELP, "--json": None, "--probe": "tools", "--timeout": "value"}),
    "shims": Command("shims so `codex` means `wrapagent codex`", {**_HELP, "--dir": "dirs"}, actions={
        name: Command(text, {**_HELP, "--dir": "dirs", **({"--json": None} if name == "status" else {})},
                      ("tools",), repeat=True)
        for name, text in (("install", "write a shim per tool"), ("uninstall", "remove the shims"),
                           ("status", "which shims exist and what each runs"))
    }),
    "init": Command("alias lines for your shell rc", dict(_HELP), ("shells",)),
    "completion": Command("shell completion script", dict(_HELP), ("shells",)),
    "sessions": Command("recorded sessions", dict(_HELP), actions={
        "list": Command("sessions, newest first", {**_HELP, "--project": "dirs", "--tool": "tools",
                                                   "--limit": "value", "--json": None}),
        "show": Command("one session", {**_HELP, "--json": None}, _ID),
        "path": Command("the project's sessions repository", {**_HELP, "--project": "dirs"}),
        "diff": Command("what the session changed", {**_HELP, "--stat": None, "--turn": "value"}, _ID),
        "undo": Command("put the files it changed back", {**_HELP, "--dry-run": None, "--force": None,
                                                                  "--turn": "value"}, _ID),
        "prune": Command("drop old checkpoint refs", {**_HELP, "--older-than": "value", "--project": "dirs",
                                                     "--dry-run": None, "--yes": None}),
        "resume": Command("continue the session's conversation", dict(_HELP), _ID),
        "replay": Command("play the session's recording", {**_HELP, "--speed": "value", "--idle-limit": "value"},
                          _ID),
        "export": Command("the recording or the conversation",
                          {**_HELP, "--format": "formats", "-o": "files", "--output": "files"}, _ID),
        "search": Command("sessions whose messages or replies hold TEXT",
                          {**_HELP, "--tool": "tools", "--project": "dirs", "--all": None}, ("text",)),
    }),
    "trust": Command("review and trust a project's hooks file",
                     {**_HELP, "--revoke": None, "--list": None, "--json": None}, ("files",)),
    "uninstall": Command("remove what wrapagent created",
                         {**_HELP, "--yes": None, "-y": None, "--dry-run": None, "--config": None,
                          "--dir": "dirs"}),
    "send": Command("the next message of a running session",
                    {**_HELP, "--session": "ids", "--guard": "value", "--wait": None, "--timeout": "value"}),
    "undo": Command("undo the newest turn of the newest session here",
                    {**_HELP, "--dry-run": None, "--force": None, "--quiet": None}),
    "redo": Command("put back what the last undo took",
                    {**_HELP, "--dry-run": None, "--force": None, "--quiet": None}),
    "help": Command("the usage"),
}
TOP = Command("", {"--no-hooks": None, "--strict": None, "--shim-dir": "dirs", "-h": None, "--help": None,
                   "-V": None, "--version": None, "--": None})


def session_ids(env: Mapping[str, str] | None = None) -> list[str]:
    """Every recorded session's id, newest first (ULIDs sort by time), at most MAX_IDS."""
    ids: set[str] = set()
    for root in paths.all_sessions_roots(env):
        try:
            ids.update(name for name in os.listdir(root) if _ULID.fullmatch(name))
        except OSError:
            continue
    return sorted(ids, reverse=True)[:MAX_IDS]


def _ulid_date(session_id: str) -> str:
    from wrapagent.history.ids import ulid_seconds

    stamp = ulid_seconds(session_id)
    if stamp is None:
        return ""
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _kind(kind: str | None, env: Mapping[str, str] | None) -> list[tuple[str, str]]:
    if kind == "tools":
        return [(t, "tool") for t in TOOLS]
    if kind == "shells":
        return [(s, "shell") for s in SHELLS]
    if kind == "ids":
        return [("last", "the newest session"), *((i, _ulid_date(i)) for i in session_ids(env))]
    if kind == "formats":
        return [("cast", "asciicast v3"), ("md", "the conversation as Markdown"), ("json", "the same as data")]
    if kind == "files":
        return [(FILES, "")]
    if kind == "dirs":
        return [(DIRS, "")]
    return []  # a free value (a number, a prompt): nothing to offer


def _complete_command(cmd: Command, rest: list[str], cur: str,
                      env: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """Candidates for `cur` after `rest`, the words that followed `cmd`'s name."""
    positionals: list[str] = []
    after_dashdash = False
    i = 0
    while i < len(rest):
        word = rest[i]
        if after_dashdash:
            positionals.append(word)
        elif word == "--":
            after_dashdash = True
        elif word.startswith("-"):
            if cmd.options.get(word.split("=", 1)[0]) is not None and "=" not in word:
                if i + 1 == len(rest):
                    return _kind(cmd.options[word], env)  # cur is this option's value
                i += 1
        elif cmd.actions and not positionals:
            action = cmd.actions.get(word)
            if action is None:
                return []
            return _complete_command(action, rest[i + 1:], cur, env)
        else:
            positionals.append(word)
        i += 1
    if after_dashdash and cmd is SPEC["sessions"].actions["resume"]:
        return [(FILES, "")]  # the tool's own arguments
    if cur.startswith("-") and not after_dashdash:
        return [(o, "") for o in cmd.options if o != "--"]
    if cmd.actions:
        return [(name, a.help) for name, a in cmd.actions.items()]
    if len(positionals) < len(cmd.positionals):
        return _kind(cmd.positionals[len(positionals)], env)
    if cmd.positionals and cmd.repeat:
        return [c for c in _kind(cmd.positionals[-1], env) if c[0] not in positionals]
    return []


def candidates(words: Sequence[str], env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(candidate, description) pairs for the last of `words` (the words after `wrapagent`)."""
    *before, cur = list(words) or [""]
    i = 0
    while i < len(before):
        word = before[i]
        if word == "--":
            if i + 1 == len(before):
                return _filter(_kind("tools", env), cur)
            return [(FILES, "")]  # TOOL's own arguments
        if word == "--shim-dir":
            if i + 1 == len(before):
                return [(DIRS, "")]
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        break
    else:
        if cur.startswith("-"):
            return _filter([(o, "") for o in TOP.options], cur)
        subs = [(name, c.help) for name, c in SPEC.items()]
        return _filter(subs + _kind("tools", env), cur)
    sub = SPEC.get(before[i])
    if sub is None:
        return [(FILES, "")]  # a tool: what follows is its own
    return _filter(_complete_command(sub, before[i + 1:], cur, env), cur)


def _filter(pairs: list[tuple[str, str]], cur: str) -> list[tuple[str, str]]:
    """Keep the candidates starting with `cur` (ids case-insensitively, as `sessions show` takes them)."""
    seen: dict[str, str] = {}
    for name, text in pairs:
        if name in (FILES, DIRS) or name.startswith(cur) or (_ULID.fullmatch(name) and name.startswith(cur.upper())):
            seen.setdefault(name, text)
    return list(seen.items())


def render(pairs: list[tuple[str, str]], shell: str) -> str:
    lines = []
    for name, text in pairs:
        text = " ".join(text.split())
        if shell == "fish" and text and name not in (FILES, DIRS):
            lines.append(f"{name}\t{text}")
        elif shell == "zsh" and name not in (FILES, DIRS):
            lines.append(name.replace(":", "\\:") + (f":{text}" if text else ""))
        else:
            lines.append(name)
    return "".join(f"{line}\n" for line in lines)


def cmd_complete(args: Sequence[str], out: IO[str], env: Mapping[str, str] | None = None) -> int:
    """`wrapagent _complete SHELL -- WORD…` (hidden): what the shell scripts call on Tab."""
    args = list(args)
    shell = args.pop(0) if args and args[0] in SHELLS else "bash"
    if args[:1] == ["--"]:
        args = args[1:]
    out.write(render(candidates(args, env), shell))
    return 0


BASH = r"""# wrapagent completion for bash. Load it from ~/.bashrc:
#   eval "$(wrapagent completion bash)"
_wrapagent() {
    local IFS=$'\n' line cur="${COMP_WORDS[COMP_CWORD]}"
    local -a found
    found=($(command wrapagent _complete bash -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
    COMPREPLY=()
    for line in "${found[@]}"; do
        case "$line" in
            :files) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
            :dirs) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
            *) COMPREPLY+=("$line") ;;
        esac
    done
}
complete -F _wrapagent wrapagent
"""

ZSH = r"""#compdef wrapagent
# wrapagent completion for zsh. Load it from ~/.zshrc, after compinit:
#   autoload -Uz compinit && compinit
#   eval "$(wrapagent completion zsh)"
_wrapagent() {
    local line
    local -a found described
    found=("${(@f)$(command wrapagent _complete zsh -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    for line in "${found[@]}"; do
        case "$line" in
            '') ;;
            :files) _files ;;
            :dirs) _files -/ ;;
            *) described+=("$line") ;;
        esac
    done
    (( ${#described} )) && _describe -t wrapagent wrapagent described
    return 0
}
if (( $+functions[compdef] )); then
    compdef _wrapagent wrapagent
else
    print -u2 "wrapagent completion: load it after 'autoload -Uz compinit && compinit'"
fi
"""

FISH = r"""# wrapagent completion for fish. Load it from ~/.config/fish/config.fish:
#   wrapagent completion fish | source
# (or save it as ~/.config/fish/completions/wrapagent.fish)
function __wrapagent_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l cur (commandline -ct)
    for line in (command wrapagent _complete fish -- $words $cur 2>/dev/null)
        switch $line
            case :files
                __fish_complete_path $cur
            case :dirs
                __fish_complete_directories $cur
            case '*'
                echo $line
        end
    end
end
complete -c wrapagent -f -a '(__wrapagent_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def cmd_completion(shell: str, out: IO[str]) -> int:
    """`wrapagent completion bash|zsh|fish`: print the script to load."""
    out.write(SCRIPTS[shell])
    return 0
