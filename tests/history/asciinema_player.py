"""asciinema's own web player, where it is installed: a recording is played by its parser and driver.

The npm package `asciinema-player` (asciicast v3 since 3.10) is pinned in `tests/history/player/`
and `./run-tests` installs it into `integration/.cache/asciinema-player` (then a missing player
fails these tests). Elsewhere, point `WRAPAGENT_ASCIINEMA_PLAYER` at its folder, or install it with

    cd integration/.cache/asciinema-player && cp ../../../tests/history/player/package*.json . && npm ci

Nothing is fetched at test time: without node or the package (and outside `./run-tests`) the tests
that use it are skipped.
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
        why = "asciinema-player is not installed (see tests/history/asciinema_player.py)"
        if os.environ.get("WRAPAGENT_REQUIRE_PLAYER") == "1":  # ./run-tests installs it
            pytest.fail(why)
        pytest.skip(why)
    done = subprocess.run([node, str(SCRIPT), str(folder), str(cast)], capture_output=True, timeout=120,
                          check=True)
    return json.loads(done.stdout.decode("utf-8").splitlines()[-1])
