"""Where wrapagent reads and writes: XDG directories, project root, sessions root.

All functions take the environment as a parameter (default `os.environ`) so
tests can point them at temporary trees.
"""

from __future__ import annotations

import os
from pathlib import Path
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping


def _xdg(env: Mapping[str, str], var: str, default: str) -> Path:
    value = env.get(var, "")
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / default


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/wrapagent` (default `~/.config/wrapagent`)."""
    return _xdg(os.environ if env is None else env, "XDG_CONFIG_HOME", ".config") / "wrapagent"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/wrapagent` (default `~/.local/state/wrapagent`)."""
    return _xdg(os.environ if env is None else env, "XDG_STATE_HOME", ".local/state") / "wrapagent"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/wrapagent` (default `~/.local/share/wrapagent`)."""
    return _xdg(os.environ if env is None else env, "XDG_DATA_HOME", ".local/share") / "wrapagent"


def global_hooks_file(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "hooks.toml"


def global_config_file(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "config.toml"


def project_hooks_file(project_root: Path) -> Path:
    return project_root / ".wrapagent" / "hooks.toml"


def find_project_root(cwd: Path) -> Path:
    """The git top-level containing `cwd`, else `cwd` itself.

    Walks up looking for `.git` (a directory, or a file for worktrees and
    submodules) instead of running `git rev-parse`: that costs a fork and
    ~5 ms on every start of an aliased `codex`.
    """
    cwd = cwd.resolve()
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            return candidate
    return cwd


def sessions_root(project_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """The per-project sessions repository.

    One git repository per project keeps projects apart (as CSA does) while
    all of them live under the state dir, never inside the user's repository.
    `WRAPAGENT_SESSIONS_ROOT` overrides it (tests, CI).
    """
    env = os.environ if env is None else env
    override = env.get("WRAPAGENT_SESSIONS_ROOT")
    if override:
        return Path(override)
    digest = _sha256_hex(str(project_root).encode())[:8]
    name = project_root.name or "root"
    return state_dir(env) / "projects" / f"{name}-{digest}"


def _sha256_hex(data: bytes) -> str:
    """SHA-256 from CPython's built-in module: `hashlib` loads OpenSSL (~4-8 ms).

    `sessions_root` runs before every wrapped tool starts. The digest is the
    same whichever implementation computes it; `hashlib` is the fallback
    where the built-in module is missing (it was `_sha256` up to 3.11,
    `_sha2` since 3.12).
    """
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef]
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def all_sessions_roots(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every per-project sessions root that exists (for `sessions list`)."""
    env = os.environ if env is None else env
    override = env.get("WRAPAGENT_SESSIONS_ROOT")
    if override:
        return [Path(override)]
    base = state_dir(env) / "projects"
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir())
