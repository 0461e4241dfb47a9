"""wrapagent's own checkpoint store: one git directory per project, under wrapagent's state folder.

The user's repository is only ever read. Checkpoints of a project live in

    $XDG_STATE_HOME/wrapagent/stores/<name>-<hash8>/      (0700, files 0600)

a git directory of wrapagent's own whose work tree is the project (as
opencode keeps its snapshots). Nothing of wrapagent's goes under the user's
`.git`: no ref, object, index, marker file or config, so a link planted
there, a root-owned `.git`, a moved project or `git log --all` cannot
involve wrapagent's files.

The store *borrows* the user's objects (`objects/info/alternates` names the
user's object folder, read-only) and its first index is a copy of the
user's index, so the first snapshot of a 100,000-file project hashes only
the files that differ from what git already knows, instead of all of them
(bench/bench_checkpoints.py measures both). New content (untracked files,
edits) is written into the store's own objects. A blob the store borrowed
and the user's `git gc` later removed is named by undo as "cannot be
restored", never half-restored.

Exact bytes: the store's `info/attributes` (which overrides every
`.gitattributes` and the user's global attributes file) unsets `text`,
`eol`, `filter`, `ident` and `working-tree-encoding` for every path, and
each call sets `core.autocrlf=false`: the store holds what was on disk and
undo writes exactly that back; no clean or smudge filter ever runs. A path
whose attributes in the user's repository convert it (`text=auto`,
`autocrlf=input`, an LFS filter) is not taken from the user's index: its
blob there is the converted one.
"""

from __future__ import annotations

import os
import stat

from wrapagent import gitcmd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Sequence

STORES_DIR = "stores"
ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"
"""Every path as bytes: no eol conversion, no filter, no `$Id$`, no re-encoding."""

CONFIG = ("core.autocrlf=false", "core.safecrlf=false", "core.bigFileThreshold=1m", "gc.auto=0",
          "core.quotepath=off", "core.fsmonitor=false", "core.untrackedCache=false",
          "core.splitIndex=false", "index.sparse=false", "core.sparseCheckout=false")
"""Given on the command line of every store call, so the user's global config cannot turn a
conversion back on (`core.autocrlf=input` in ~/.gitconfig) or make git gc the store mid-snapshot."""

_STORE_FILES = {
    "config": (b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tautocrlf = false\n"
               b"\tsharedRepository = 0600\n\tlogAllRefUpdates = false\n[gc]\n\tauto = 0\n"),
    "HEAD": b"ref: refs/heads/unused\n",
    "description": b"wrapagent's checkpoints of one project (see wrapagent's README, History)\n",
    "info/attributes": ATTRIBUTES,
}
FILE_MODE = 0o600
DIR_MODE = 0o700


class StoreError(Exception):
    """The store cannot be used (not ours, a link, not writable); the message is for the user."""


def stores_dir(env: Mapping[str, str] | None = None) -> str:
    from wrapagent.paths import state_dir_str

    return os.path.join(state_dir_str(env), STORES_DIR)


def store_name(top: str) -> str:
    """`<name>-<hash8>` of a work tree, from its real path: one store per project folder."""
    from wrapagent.paths import _plain_name, _sha256_hex

    real = os.path.realpath(top)
    return f"{_plain_name(os.path.basename(real) or 'root')}-{_sha256_hex(os.fsencode(real))[:8]}"


def store_path(top: str, env: Mapping[str, str] | None = None) -> str:
    return os.path.join(stores_dir(env), store_name(top))


def is_store(path: str) -> bool:
    """A folder that is a store of ours: a real folder (not a link) holding our attributes file."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        with open(os.path.join(path, "info", "attributes"), "rb") as f:
            return f.read(len(ATTRIBUTES) + 1) == ATTRIBUTES
    except OSError:
        return False


def write_private(path: str, data: bytes) -> None:
    """Write `path` 0600 through a new file renamed into place: never through a link, never half-written."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _init(final: str, env: Mapping[str, str] | None = None) -> None:
    """Create the store at `final`: built beside it, then renamed into place (two sessions may race)."""
    import shutil

    from wrapagent.paths import make_private_dirs, state_dir_str

    parent = os.path.dirname(final)
    state = state_dir_str(env)
    if parent.startswith(state + os.sep):
        make_private_dirs(state)  # the state folder itself 0700
    make_private_dirs(parent)
    tmp = os.path.join(parent, f".{os.path.basename(final)}.{os.getpid()}-{os.urandom(4).hex()}.new")
    os.mkdir(tmp, DIR_MODE)
    try:
        for sub in ("objects", "objects/info", "objects/pack", "refs", "refs/heads", "refs/tags", "info"):
            os.mkdir(os.path.join(tmp, sub), DIR_MODE)
        for name, data in _STORE_FILES.items():
            write_private(os.path.join(tmp, name), data)
        try:
            os.rename(tmp, final)
        except OSError:
            if not is_store(final):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Store:
    """One project's store: its git directory, and the user's repository it reads from."""

    def __init__(self, path: str, top: str, user_git_dir: str, env: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.top = top
        self.user_git_dir = user_git_dir
        self.env = env

    @classmethod
    def open(cls, top: str, user_git_dir: str, user_objects: str | None,
             env: Mapping[str, str] | None = None, *, create: bool = True) -> "Store":
        """The store of the work tree `top`, created when missing (with `create`)."""
        from wrapagent.paths import sudo_refusal

        path = store_path(top, env)
        refusal = sudo_refusal(path)
        if refusal is not None:
            raise StoreError(refusal)
        if not is_store(path):
            if not create:
                raise StoreError(f"no checkpoint store for {top}")
            if os.path.lexists(path):
                raise StoreError(f"{path} is not a checkpoint store of wrapagent's: not used")
            _init(path, env)
        st = os.lstat(path)
        if st.st_uid != os.geteuid():
            raise StoreError(f"{path} belongs to another user: not used")
        store = cls(path, top, user_git_dir, env)
        if user_objects:
            store.borrow(user_objects)
        return store

    def borrow(self, user_objects: str) -> None:
        """Name the user's object folder in `objects/info/alternates` (rewritten only when it changed)."""
        line = os.fsencode(os.path.realpath(user_objects)) + b"\n"
        where = os.path.join(self.path, "objects", "info", "alternates")
        if _read(where) != line:
            write_private(where, line)

    def sync_excludes(self) -> bytes:
        """The user's `info/exclude` as the store's: git status and the snapshot ignore the same files.

        Returns its content (part of what decides whether ignore rules changed since the last snapshot).
        """
        theirs = _read(os.path.join(self.user_git_dir, "info", "exclude")) or b""
        ours = os.path.join(self.path, "info", "exclude")
        if (_read(ours) or b"") != theirs:
            write_private(ours, theirs)
        return theirs

    def write_ref(self, ref: str, commit: str) -> None:
        """Point `ref` (`refs/sessions/<id>/<which>`) at `commit`: a loose ref file of the store's own,
        written 0600 by rename (one git process less per snapshot than `update-ref`)."""
        import re

        from wrapagent.paths import make_private_dirs

        if not re.fullmatch(r"refs/sessions/[A-Za-z0-9_-]+/[a-z0-9-]+", ref) or \
                not re.fullmatch(r"[0-9a-f]{40,64}", commit):
            raise StoreError(f"not a checkpoint ref: {ref} {commit}")
        path = os.path.join(self.path, *ref.split("/"))
        make_private_dirs(os.path.dirname(path))
        write_private(path, commit.encode() + b"\n")

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def run(self, args: Sequence[str], **kw) -> gitcmd.Result:
        """git on the store, the project as its work tree, the store's settings on the command line."""
        return gitcmd.run(self.top, args, git_dir=self.path, work_tree=self.top,
                          config=CONFIG, identity=True, base_env=self.env, **kw)


def user_read(top: str, args: Sequence[str], *, git_dir: str | None = None,
              env: Mapping[str, str] | None = None, **kw) -> gitcmd.Result:
    """A read-only git call on the user's repository: `--no-optional-locks`, so not even the
    index's stat cache is rewritten (git's rule for background tools)."""
    return gitcmd.run(top, ["--no-optional-locks", *args], git_dir=git_dir,
                      work_tree=top if git_dir else None, base_env=env, **kw)


def converted_paths(top: str, git_dir: str, paths: Sequence[bytes], env: Mapping[str, str] | None = None,
                    deadline: float | None = None, config: Mapping[str, str] | None = None) -> set[bytes] | None:
    """Those of `paths` whose blob in the user's index may differ from the bytes on disk.

    A clean filter, `ident`, `working-tree-encoding`, or eol conversion
    (`text`, `eol`, `core.autocrlf`) in the user's repository makes git
    store something else than the file. None means "all of them" (asking
    git failed). Cheap when nothing converts: no attributes file anywhere
    and autocrlf off answer without asking per path.
    """
    config = user_config(top, git_dir, env, deadline) if config is None else config
    crlf = config.get("core.autocrlf", "").lower() in ("true", "input", "yes", "on", "1")
    if not crlf and not _has_attributes(top, git_dir, paths, env, config):
        return set()
    names = ("text", "eol", "filter", "ident", "working-tree-encoding")
    proc = user_read(top, ["check-attr", "-z", "--stdin", *names], git_dir=git_dir, env=env,
                     deadline=deadline, input=b"\0".join(paths) + b"\0")
    if proc.code != 0:
        return None
    out = proc.stdout.split(b"\0")
    values: dict[bytes, dict[bytes, bytes]] = {}
    for i in range(0, len(out) - 2, 3):
        values.setdefault(out[i], {})[out[i + 1]] = out[i + 2]
    converted = set()
    for path, attrs in values.items():
        text = attrs.get(b"text", b"unspecified")
        if (text not in (b"unspecified", b"unset") or attrs.get(b"eol", b"unspecified") != b"unspecified"
                or attrs.get(b"filter", b"unspecified") not in (b"unspecified", b"unset")
                or attrs.get(b"ident", b"unspecified") == b"set"
                or attrs.get(b"working-tree-encoding", b"unspecified") not in (b"unspecified", b"unset")
                or (crlf and text == b"unspecified")):
            converted.add(path)
    return converted


USER_CONFIG_KEYS = ("status.showuntrackedfiles", "core.autocrlf", "core.attributesfile", "core.excludesfile")


def user_config(top: str, git_dir: str | None, env: Mapping[str, str] | None = None,
                deadline: float | None = None) -> dict[str, str]:
    """The few settings of the user's repository a snapshot reads, in one git call (lower-case keys)."""
    pattern = "^(" + "|".join(k.replace(".", "\\.") for k in USER_CONFIG_KEYS) + ")$"
    proc = user_read(top, ["config", "-z", "--get-regexp", pattern], git_dir=git_dir, env=env, deadline=deadline)
    out: dict[str, str] = {}
    for item in proc.stdout.split(b"\0"):
        key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
        if key:
            out[key.lower()] = value.strip()
    return out


def excludes_stamp(config: Mapping[str, str], env: Mapping[str, str] | None) -> str:
    """What the global excludes file is now (path, size, mtime): a change means ignore rules changed."""
    environ = os.environ if env is None else env
    path = config.get("core.excludesfile") or os.path.join(
        environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config"), "git", "ignore")
    path = os.path.expanduser(path)
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} -"
    return f"{path} {st.st_size} {st.st_mtime_ns} {st.st_ino}"


def _has_attributes(top: str, git_dir: str, paths: Sequence[bytes], env: Mapping[str, str] | None,
                    config: Mapping[str, str]) -> bool:
    """Whether any attributes file could apply: a tracked `.gitattributes`, `info/attributes`, the global one."""
    if any(p == b".gitattributes" or p.endswith(b"/.gitattributes") for p in paths):
        return True
    if os.path.exists(os.path.join(git_dir, "info", "attributes")):
        return True
    environ = os.environ if env is None else env
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config")
    if os.path.exists(os.path.join(config_home, "git", "attributes")):
        return True
    return bool(config.get("core.attributesfile"))
