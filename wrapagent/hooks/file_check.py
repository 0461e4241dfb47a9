"""The problems found in one config file, collected in time linear in the file.

A cloned repository's untrusted `.wrapagent/hooks.toml` is parsed on every
start (to report its problems), so its author picks how many problems there
are: 60,000 unknown keys or empty `[[prompt_guard]]` entries in 1 MiB. Each
problem's line is found by scanning the text (`toml_lines`), and checking
"has errors" compared every problem with every skipped entry's: both grew
with the square of the count and kept the start waiting for minutes. So
only the first `MAX_PROBLEMS` are kept (with their lines), the rest are
counted into one closing problem, and the error counts are kept as numbers.

Also here: the lexical guard against keys tomllib parses in quadratic time.
"""

from __future__ import annotations

TYPE_CHECKING = False  # this runs before the tool starts: no typing import
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping

from wrapagent.hooks.config_model import Problem

MAX_PROBLEMS = 50
"""Problems reported per file; more are counted in one line (a real file has a handful)."""

MAX_KEY_PARTS = 32
"""The most dotted parts in one key or table name (`a.b.c` has 3). tomllib's
time grows with the square of a key's parts (each part re-walks the path), and
with a header's parts times the keys under it: a project file of 1 MiB made of
one long dotted key kept every start waiting for hours. No real config nests
more than a few levels."""


class FileCheck:
    """Collects problems for one file; knows its text to find lines for keys.

    `in_entry` is set while one `[[prompt_guard]]` entry is parsed: an error
    there skips only that entry, not the file.
    """

    def __init__(self, path: str | Path, text: str = "") -> None:
        self.path = path
        self.text = text
        self.problems: list[Problem] = []
        self.errors = 0  # every error, kept or only counted
        self.file_errors = 0  # errors that make the whole file unusable
        self.in_entry = False
        self._not_kept = {"error": 0, "warning": 0}
        self._lines: list[str] | None = None

    @property
    def has_errors(self) -> bool:
        """Errors that make the whole file unusable (an invalid guard entry is not one)."""
        return self.file_errors > 0

    def error(self, key: str | None, message: str, parts: tuple = (), line: int | None = None) -> None:
        self._add("error", key, message, parts, line)

    def warning(self, key: str | None, message: str, parts: tuple = (), line: int | None = None) -> None:
        self._add("warning", key, message, parts, line)

    def _add(self, severity: str, key: str | None, message: str, parts: tuple, line: int | None) -> None:
        if severity == "error":
            self.errors += 1
            if not self.in_entry:
                self.file_errors += 1
        if len(self.problems) >= MAX_PROBLEMS:
            self._not_kept[severity] = self._not_kept.get(severity, 0) + 1
            return
        if line is None and parts:
            from wrapagent.hooks.toml_lines import find_line

            if self._lines is None:
                self._lines = self.text.splitlines()
            line = find_line(self.text, parts, lines=self._lines)
        self.problems.append(Problem(str(self.path), severity, message, line, key))

    def reported(self) -> list[Problem]:
        """The kept problems, and one more saying how many were only counted."""
        errors, warnings = self._not_kept["error"], self._not_kept["warning"]
        if not errors and not warnings:
            return list(self.problems)
        counts = " and ".join(f"{n} {what}{'s' if n != 1 else ''}"
                              for n, what in ((errors, "error"), (warnings, "warning")) if n)
        closing = Problem(str(self.path), "error" if errors else "warning",
                          f"{counts} more, not listed (only the first {MAX_PROBLEMS} problems are)", None, None)
        return [*self.problems, closing]

    def unknown_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str, parts: tuple) -> None:
        for key in table:
            if key not in allowed:
                hint = self.did_you_mean(key, allowed)
                self.warning(f"{prefix}{key}", f"unknown key, ignored{hint}", (*parts, key))

    def did_you_mean(self, key: str, allowed: tuple[str, ...]) -> str:
        """` (did you mean 'x'?)` for a problem that will be listed; nothing for one only counted."""
        if len(self.problems) >= MAX_PROBLEMS:
            return ""
        import difflib

        close = difflib.get_close_matches(key, allowed, n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""


def too_many_key_parts(text: str) -> int | None:
    """The line of the first dotted chain of more than MAX_KEY_PARTS parts, else None.

    Lexical and conservative: a chain is found anywhere, inside a string too
    (a string holding 33 dot-separated words is no real hooks command). Each
    start is at a word boundary, so the scan stays linear on any text.
    """
    if text.count(".") < MAX_KEY_PARTS:  # more than MAX_KEY_PARTS parts need at least that many dots
        return None  # every usual file: no regex import
    import re

    part = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""
    chain = re.compile(rf"""(?<![A-Za-z0-9_"'-]){part}(?:[ \t]*\.[ \t]*{part}){{{MAX_KEY_PARTS},}}""")
    found = chain.search(text)
    return None if found is None else text.count("\n", 0, found.start()) + 1
