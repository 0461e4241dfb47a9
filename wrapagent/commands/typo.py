"""`wrapagent sesions list`: the command the user meant, when the first word is a typo.

Any word after `wrapagent` that is not a subcommand names a program to wrap,
so a misspelt subcommand used to be looked up on PATH and fail with a line
listing the whole PATH. This is asked only then, after the lookup failed: a
real program whose name is close to a subcommand (`patch`, `shim`) always
runs, and the start of a wrapped tool pays nothing for it. Nothing is
recorded either way: the lookup fails before a session exists.

The candidates come from completion's table (the one list of subcommands and
their actions): a misspelt subcommand (and its action: `sessions lsit`), a
`sessions` action typed without `sessions` (`wrapagent undo last`), and a
misspelt agent (`cluade`).
"""

from __future__ import annotations

from typing import Sequence

CUTOFF = 0.75
"""difflib's similarity (0..1): `sesions`→`sessions` is 0.93, `confg`→`config` 0.91, `foo`→`doctor` 0.44."""


def _close(word: str, names: Sequence[str]) -> str | None:
    from difflib import get_close_matches

    if word in names:
        return word
    found = get_close_matches(word, list(names), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def _shown(words: Sequence[str]) -> str:
    """The words as a command to paste: quoted where the shell needs it (`last~2` needs not)."""
    import re
    from shlex import quote

    return " ".join(w if re.fullmatch(r"[\w@%+=:,./-][\w@%+=:,./~-]*", w) else quote(w) for w in words)


def suggestion(word: str, rest: Sequence[str]) -> str | None:
    """`wrapagent …` as the user probably meant it, or None when nothing is close enough."""
    from wrapagent.commands.completion import SPEC, TOOLS

    if not word or word.startswith("-") or "/" in word:
        return None
    subcommands = [name for name in SPEC if not name.startswith("_")]
    sub = _close(word, subcommands) if word not in subcommands else None
    if sub is not None:
        actions = SPEC[sub].actions
        args = list(rest)
        if actions and args and not args[0].startswith("-"):
            args[0] = _close(args[0], list(actions)) or args[0]
        return _shown(["wrapagent", sub, *args])
    action = _close(word, list(SPEC["sessions"].actions))
    if action is not None:
        return _shown(["wrapagent", "sessions", action, *rest])
    tool = _close(word, TOOLS)
    if tool is not None and tool != word:
        return _shown(["wrapagent", tool, *rest])
    return None


def not_found_message(word: str, rest: Sequence[str]) -> str | None:
    """The one line for a first word that is neither a subcommand nor a program, when a fix is close."""
    meant = suggestion(word, rest)
    if meant is None:
        return None
    return f"{word}: no such subcommand, and no program of that name on PATH; did you mean: {meant}?"


def session_hint(word: str, rest: Sequence[str]) -> str | None:
    """`wrapagent diff last`: the program `diff` runs, and one line says what names the session's diff.

    A program on PATH always runs (the user may mean it); only a session
    reference as its first argument (`last`, `last~1`) makes the mix-up likely.
    """
    import re

    if not rest or not re.fullmatch(r"(?:last|latest)(?:~\d+)?", rest[0], flags=re.IGNORECASE):
        return None
    meant = _shown(["wrapagent", "sessions", word, *rest])
    return f"wrapagent: running the program {word!r}; did you mean: {meant}?"
