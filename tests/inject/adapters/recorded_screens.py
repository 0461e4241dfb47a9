"""The CLIs' recorded screens (tests/screens/<tool>/<release>/<state>-<name>.txt), read by the adapter tests."""

from __future__ import annotations

import re
from pathlib import Path

SCREENS = Path(__file__).resolve().parents[2] / "screens"


def screens(tool: str, name: str) -> list[tuple[str, str]]:
    """(release, text) of every recorded release's `<name>.txt` screen of `tool`."""
    return [(path.parent.name, path.read_text()) for path in sorted(SCREENS.glob(f"{tool}/*/{name}.txt"))]


def markers_show(patterns: tuple[str, ...], text: str) -> bool:
    """Every marker of an adapter's `ready_patterns` (or `reset_ready_patterns`) is on the screen."""
    return all(re.search(p, text) for p in patterns)
