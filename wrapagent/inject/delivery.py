"""Delivery: how the blocks are written into the tool's empty composer.

Per adapter, measured on the real CLIs (docs/cli-behaviour.md): one
bracketed paste (codex, gemini, opencode), or typed chunks without paste
markers, a gap apart (claude wraps a large paste in `<pasted_content>`).
Pure functions of the text and the clock, so the injector's timing is testable.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from wrapagent.inject.adapters.base import Adapter

PASTE_BEGIN = b"\x1b[200~"
PASTE_FINISH = b"\x1b[201~"


TYPED_TAB_SPACES = 4
"""Tabs in typed delivery become spaces (to the next multiple of this column)."""


def delivered_text(adapter: Adapter, prefix: str) -> str:
    """The text as it reaches the composer: typed delivery sends keys, and a Tab key is not a
    tab character (claude completes on it), so tabs are expanded; a paste keeps them."""
    if adapter.delivery == "typed":
        return prefix.expandtabs(TYPED_TAB_SPACES)
    return prefix


def delivery_chunks(adapter: Adapter, prefix: str, now: float) -> list[tuple[float, bytes]]:
    """(due time, bytes) pairs that write `prefix` into the composer the way `adapter` needs."""
    data = delivered_text(adapter, prefix).encode()
    if adapter.delivery == "typed":
        size = adapter.typed_chunk_bytes
        gap = adapter.typed_gap_secs
        return [(now + k * gap, piece) for k, piece in enumerate(split_utf8(data, size))]
    return [(now, PASTE_BEGIN + data + PASTE_FINISH)]


def split_utf8(data: bytes, size: int) -> list[bytes]:
    """Chunks of at most `size` bytes that never split a UTF-8 character."""
    out = []
    i = 0
    while i < len(data):
        j = min(i + size, len(data))
        while j < len(data) and j > i and (data[j] & 0xC0) == 0x80:
            j -= 1
        out.append(data[i:j])
        i = j
    return out


def now_iso() -> str:
    """Wall-clock time for the session record (UTC, ISO 8601, like the record's other times)."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat()
