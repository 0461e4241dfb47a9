"""asciinema's own web player, where it is installed: a recording is played by its parser and driver.

Optional: the npm package `asciinema-player` (3.17.0 checked; asciicast v3 since 3.10) is not a
dependency. Point `WRAPAGENT_ASCIINEMA_PLAYER` at its folder, or install it where this looks:

    npm install --prefix integration/.cache/asciinema-player asciinema-player@3.17.0

Nothing is fetched at test time: without node or the package the tests that use it are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SCRIPT = HERE / "asciinema_play.mjs"
DEFAULT = HERE.parent.parent / "integration" / ".cache" / "asciinema-player" / "node_modules" / "asciinema-player"


def player_dir() -> Path | None:
    """The installed `asciinema-player` package, or None."""
    named = os.environ.get("WRAPAGENT_ASCIINEMA_PLAYER")
    folder = Path(named) if named else DEFAULT
    return folder if (folder / "package.json").is_file() and (folder / "dist").is_dir() else None


def play(cast: Path) -> dict:
    """What asciinema-player dispatched playing `cast` (at 1000x): output, markers, resizes, ended.

    Skips the calling test when node or the player is not installed.
    """
    node, folder = shutil.which("node"), player_dir()
    if node is None or folder is None:
        pytest.skip("asciinema-player is not installed (see tests/history/asciinema_player.py)")
    done = subprocess.run([node, str(SCRIPT), str(folder), str(cast)], capture_output=True, timeout=120,
                          check=True)
    return json.loads(done.stdout.decode("utf-8").splitlines()[-1])
