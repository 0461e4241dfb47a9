"""Where wrapagent reads and writes: XDG directories, project root, sessions root.

All functions take the environment as a parameter (default `os.environ`) so
tests can point them at temporary trees. Each location has a `str` form,
which the launch path uses (a full session decides what runs before the
tool from these, and `pathlib` costs ~20 ms to import with the `re` and
`urllib` it pulls in), and a `Path` form for everything after.
"""

import os
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Mapping


def _env(env: "Mapping[str, str] | None") -> "Mapping[str, str]":
    return os.environ if env is None else env


def _xdg_str(env: "Mapping[str, str]", var: str, default: str) -> str:
    value = env.get(var, "")
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return os.path.normpath(value)
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(os.path.normpath(home), default)


def _path(value: str) -> "Path":
    from pathlib import Path

    return Path(value)


def config_dir_str(env: "Mapping[str, str] | None" = None) -> str:
    return os.path.join(_xdg_str(_env(env), "XDG_CONFIG_HOME", ".config"), "wrapagent")


def config_dir(env: "Mapping[str, str] | None" = None) -> "Path":
    """`$XDG_CONFIG_HOME/wrapagent` (default `~/.config/wrapagent`)."""
    return _path(config_dir_str(env))


def state_dir_str(env: "Mapping[str, str] | None" = None) -> str:
    return os.path.join(_xdg_str(_env(env), "XDG_STATE_HOME", ".local/state"), "wrapagent")


def state_dir(env: "Mapping[str, str] | None" = None) -> "Path":
    """`$XDG_STATE_HOME/wrapagent` (default `~/.local/state/wrapagent`)."""
    return _path(state_dir_str(env))


def data_dir(env: "Mapping[str, str] | None" = None) -> "Path":
    """`$XDG_DATA_HOME/wrapagent` (default `~/.local/share/wrapagent`)."""
    return _path(os.path.join(_xdg_str(_env(env), "XDG_DATA_HOME", ".local/share"), "wrapagent"))


def global_hooks_path(env: "Mapping[str, str] | None" = None) -> str:
    return os.path.join(config_dir_str(env), "hooks.toml")


def global_config_path(env: "Mapping[str, str] | None" = None) -> str:
    return os.path.join(config_dir_str(env), "config.toml")


def project_hooks_path(project_root: "str | Path") -> str:
    return os.path.join(os.fspath(project_root), ".wrapagent", "hooks.toml")


def global_hooks_file(env: "Mapping[str, str] | None" = None) -> "Path":
    return _path(global_hooks_path(env))


def project_hooks_file(project_root: "str | Path") -> "Path":
    return _path(project_hooks_path(project_root))


def project_root_of(cwd: str) -> str:
    """The git top-level containing `cwd` (symlinks resolved), else `cwd` itself.

    Walks up looking for `.git` (a directory, or a file for worktrees and
    submodules) instead of running `git rev-parse`: that costs a fork and
    ~5 ms on every start of an aliased `codex`. A `.git` at `$HOME` (a
    dotfiles repository) does not make `~` the project of every folder below.
    """
    cwd = os.path.realpath(cwd)
    home = os.path.realpath(os.environ.get("HOME") or os.path.expanduser("~"))
    candidate = cwd
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            # A dotfiles repository at $HOME is no project of the folders under it.
            return cwd if candidate == home and cwd != home else candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return cwd
        candidate = parent


def find_project_root(cwd: "str | Path") -> "Path":
    """`project_root_of` as a Path."""
    return _path(project_root_of(os.fspath(cwd)))


def sessions_root_str(project_root: "str | Path", env: "Mapping[str, str] | None" = None) -> str:
    """The per-project sessions repository.

    One git repository per project keeps projects apart (as CSA does) while
    all of them live under the state dir, never inside the user's repository.
    `WRAPAGENT_SESSIONS_ROOT` overrides it (tests, CI).
    """
    env = _env(env)
    override = env.get("WRAPAGENT_SESSIONS_ROOT")
    if override:
        return os.path.normpath(override)
    root = os.path.normpath(os.fspath(project_root))
    # The path's own bytes: a folder name that is not UTF-8 (Latin-1) comes
    # as surrogate escapes, which a strict `encode()` refuses.
    digest = _sha256_hex(os.fsencode(root))[:8]
    name = _plain_name(os.path.basename(root)) or "root"
    return os.path.join(state_dir_str(env), "projects", f"{name}-{digest}")


def _plain_name(name: str) -> str:
    """A project folder's name as part of a state folder name: printable UTF-8 only.

    The name is there for people (`ls`, `sessions path`); the hash tells
    projects apart. A byte that is not UTF-8, a control, bidi or zero-width
    character becomes `_`, so the state folder never carries them into a
    listing, a shell's `cd $(wrapagent sessions path)` or a git path.
    """
    if name.isascii() and name.isprintable():
        return name  # every usual name, without a look at each character
    from wrapagent.visible import visible

    return "".join(ch if visible(ch, keep="") == ch else "_" for ch in name)


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_session_id() -> str:
    """A session's id and the name of its record folder: a ULID, sortable by creation time, so
    `ls` and `git log` list sessions in order (also `history.ids.new_session_id`).

    48 bits of milliseconds + 80 random bits, Crockford base32, 26 characters
    (https://github.com/ulid/spec). Written here rather than imported:
    python-ulid pulls in importlib.metadata, ~70 ms on every aliased start.
    """
    import time

    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


SESSIONS_MARK = "wrapagent-sessions"
"""A file wrapagent writes into the `.git` of every sessions repository it creates: the proof,
for a damaged one, that wrapagent may set it aside (it never touches a `.git` of anybody else's)."""


def sessions_root_refusal(root: str, env: "Mapping[str, str] | None" = None) -> "str | None":
    """Why `root` may not be a sessions root, or None.

    `WRAPAGENT_SESSIONS_ROOT` must be absolute (`.` would make whatever
    folder the tool starts in the sessions repository), and no sessions
    root may be, or lie inside, a git work tree wrapagent did not create:
    wrapagent commits there, and would call a `.git` of the user's damaged.
    """
    override = _env(env).get("WRAPAGENT_SESSIONS_ROOT")
    if override is not None and override and not os.path.isabs(override):
        return f"WRAPAGENT_SESSIONS_ROOT must be an absolute path (it is {override!r})"
    folder = os.path.abspath(root)
    while True:
        dot_git = os.path.join(folder, ".git")
        if os.path.lexists(dot_git):
            if folder == os.path.abspath(root) and _made_by_wrapagent(dot_git):
                return None  # wrapagent's own sessions repository
            if folder == os.path.abspath(root) and _under_state(folder, env):
                return None  # one an earlier release made in wrapagent's state folder
            if override is None and _under_state(root, env):
                return None  # the state folder itself lies in a repository (dotfiles at home): its own .git
            return (f"the sessions folder {root} is {'' if folder == os.path.abspath(root) else 'inside '}"
                    f"a git repository wrapagent did not create ({folder}): not used")
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _made_by_wrapagent(dot_git: str) -> bool:
    """Its mark, or (a sessions repository of an earlier release) the identity wrapagent configures."""
    if os.path.isfile(os.path.join(dot_git, SESSIONS_MARK)):
        return True
    try:
        with open(os.path.join(dot_git, "config"), "rb") as f:
            config = f.read(65536)
    except OSError:
        return False
    return b"email = wrapagent@localhost" in config and b"hooksPath = /dev/null" in config


def _under_state(path: str, env: "Mapping[str, str] | None") -> bool:
    state = os.path.realpath(state_dir_str(env))
    return os.path.realpath(path).startswith(state + os.sep)


def make_private_dirs(path: str) -> None:
    """Create `path` and the parents missing, each 0700 (whatever the umask), never through a link.

    Folders that exist already are left as they are, except the last one,
    which must be a real folder of this user's (then made 0700 if it is not).
    """
    import stat

    missing: list[str] = []
    head = os.path.abspath(path)
    while not os.path.lexists(head):
        head, tail = os.path.split(head)
        missing.append(tail)
    for name in reversed(missing):
        head = os.path.join(head, name)
        try:
            os.mkdir(head, 0o700)
        except FileExistsError:
            pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(20, "not a folder (a link?)", path)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)


def sudo_refusal(path: str) -> "str | None":
    """Under `sudo` (euid 0 with SUDO_UID), why nothing may be written at `path`, or None.

    Files root creates in a folder the invoking user owns stay root-owned:
    the user's later sessions could not write there. The nearest existing
    folder decides.
    """
    if os.geteuid() != 0 or not os.environ.get("SUDO_UID"):
        return None
    folder = os.path.abspath(path)
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    try:
        owner = os.lstat(folder).st_uid
    except OSError:
        return None
    if owner != 0:
        return f"running as root (sudo) and {folder} belongs to another user: nothing written there"
    return None


def make_session_dir(root: "str | Path", session_id: str, env: "Mapping[str, str] | None" = None) -> str:
    """Create `<root>/<session_id>` (0700); a WrapagentError that says what to fix if it cannot be.

    Checked before the tool starts: an unwritable state folder, a sessions
    root inside somebody's repository, a relative WRAPAGENT_SESSIONS_ROOT
    are one line then (the tool runs without a record), not a traceback
    after the tool's screen is up.
    """
    root = os.fspath(root)
    path = os.path.join(root, session_id)
    refusal = sessions_root_refusal(root, env) or sudo_refusal(root)
    if refusal is not None:
        from wrapagent.errors import WrapagentError  # only to fail: not loaded on every start

        raise WrapagentError(f"{refusal} (set WRAPAGENT_SESSIONS_ROOT to an absolute folder of your own)")
    try:
        state = state_dir_str(env)
        if _under_state(root, env) or os.path.abspath(root).startswith(os.path.abspath(state) + os.sep):
            make_private_dirs(state)
        make_private_dirs(path)
    except OSError as exc:
        from wrapagent.errors import WrapagentError

        raise WrapagentError(
            f"cannot create the session record folder {path}: {exc.strerror or exc} (set "
            "WRAPAGENT_SESSIONS_ROOT or XDG_STATE_HOME to a writable folder)") from None
    return path


def sessions_root(project_root: "str | Path", env: "Mapping[str, str] | None" = None) -> "Path":
    """`sessions_root_str` as a Path."""
    return _path(sessions_root_str(project_root, env))


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


def all_sessions_roots(env: "Mapping[str, str] | None" = None) -> "list[Path]":
    """Every per-project sessions root that exists (for `sessions list`)."""
    env = _env(env)
    override = env.get("WRAPAGENT_SESSIONS_ROOT")
    if override:
        return [_path(override)]
    base = state_dir(env) / "projects"
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir())
