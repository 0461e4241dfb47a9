"""What an installed release of a CLI needs beyond the pinned recipe in clienv.py.

clienv.SPECS and the `_setup_<tool>` methods are written for the pinned set
(integration/package.json). The older set (integration/older/package.json) is driven through
the same CliEnv; `adapt(env)` reads the installed version from the package's own
package.json and changes only what that release needs, each change with the reason found in
the release itself (its --help, its files, or a run against the mock). Keeping the per-version
knowledge here keeps clienv.py about the pinned set.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .clienv import CliEnv

PACKAGES = {
    "codex": "@openai/codex",
    "claude": "@anthropic-ai/claude-code",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
}


def installed_version(bin_dir: Path, tool: str) -> str:
    """The version in `<node_modules>/<package>/package.json` next to `bin_dir` ("" if unknown)."""
    try:
        meta = json.loads((Path(bin_dir).parent / PACKAGES[tool] / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError):
        return ""
    return str(meta.get("version") or "")


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("-")[0].split("."):
        parts.append(int(piece) if piece.isdigit() else 0)
    return tuple(parts)


def adapt(env: "CliEnv") -> None:
    """Set `env.version` and adjust env/spec for a release older than the pinned one."""
    env.version = installed_version(env.bin_dir, env.tool)
    if not env.version:
        return
    getattr(_Recipes, env.tool)(env, version_tuple(env.version))


def _respec(env: "CliEnv", **changes) -> None:
    env.spec_override = dataclasses.replace(env.spec, **changes)


class _Recipes:
    @staticmethod
    def codex(env: "CliEnv", v: tuple[int, ...]) -> None:
        if v < (0, 150):
            # 0.140.0: `--no-daemon` is an unknown argument (the TUI has no daemon to turn off),
            # and the empty composer shows rotating suggestions instead of `Ask Codex to do anything`.
            _respec(
                env,
                interactive_args=(),
                ready=r"›[\s\S]*mock-model",
                redrawn=r"MOCK-REPLY-1[\s\S]*›[\s\S]*mock-model",
            )

    @staticmethod
    def claude(env: "CliEnv", v: tuple[int, ...]) -> None:
        pass

    @staticmethod
    def gemini(env: "CliEnv", v: tuple[int, ...]) -> None:
        pass

    @staticmethod
    def opencode(env: "CliEnv", v: tuple[int, ...]) -> None:
        pass
