"""Capping a built-in's text at its `max_bytes`.

Every body respects its own cap, cut at a line boundary with a
`… (truncated)` line, so one guard cannot crowd out the others in the 32 KB
block budget. Shared by the git and file built-ins and re-exported by the
package for the tests and the benchmark.
"""

from __future__ import annotations

TRUNCATED = "… (truncated)"


def cap_text(text: str, max_bytes: int) -> str:
    """`text` within `max_bytes` UTF-8 bytes, cut at a line boundary.

    The `… (truncated)` line counts against the cap, so the result never
    exceeds it (unless the cap is smaller than the marker itself).
    """
    text = text.rstrip("\n")
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    budget = max_bytes - len(TRUNCATED.encode("utf-8")) - 1
    if budget <= 0:
        return TRUNCATED
    cut = data[:budget]
    newline = cut.rfind(b"\n")
    if newline >= 0:
        cut = cut[:newline]
    kept = cut.decode("utf-8", "ignore").rstrip("\n")
    return f"{kept}\n{TRUNCATED}" if kept else TRUNCATED
