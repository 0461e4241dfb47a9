"""Session ids as people type them: the shortest unique prefix, and `last~N`.

ULIDs begin with their timestamp, so sessions of the same minutes share
their first 6-8 characters; `sessions list` shows each id cut to the
shortest prefix that no other recorded session shares (at least
`MIN_PREFIX`, like git's abbreviated hashes), which `sessions show`,
`diff`, `undo` and `resume` accept as they are. `last~N` names the N-th
session before the newest (`last~0` = `last`), as `HEAD~N` does in git.
"""

from __future__ import annotations

import re
from typing import Iterable

MIN_PREFIX = 7
_RELATIVE = re.compile(r"(?:last|latest)~(\d+)", re.IGNORECASE)


def unique_prefixes(ids: Iterable[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """id -> its shortest prefix (case-insensitively) shared by no other id; at least `minimum` long."""
    ordered = sorted({i for i in ids if i}, key=str.upper)
    keys = [i.upper() for i in ordered]
    out: dict[str, str] = {}
    for n, ident in enumerate(ordered):
        need = minimum
        for other in (keys[n - 1] if n else None, keys[n + 1] if n + 1 < len(keys) else None):
            if other is not None:
                need = max(need, _common(keys[n], other) + 1)
        out[ident] = ident[:need]
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def relative_index(ref: str) -> int | None:
    """N for `last~N` / `latest~N` (0 = the newest), else None."""
    match = _RELATIVE.fullmatch(ref.strip())
    return int(match.group(1)) if match else None
