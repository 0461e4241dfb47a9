"""Snapshots of the project's work tree as git commits, in wrapagent's own store (history/store.py).

Before the tool starts and after it exits, the work tree (tracked and
untracked files, minus what git ignores at that moment) is written as a
commit of the project's store, with git plumbing only:

    git ls-files -m -o --exclude-standard     # what changed since the store's index
    git update-index --add --remove --stdin   # those files, as bytes; too-big ones left out
    git write-tree
    git commit-tree <tree> [-p <before>]      # no hooks, nothing of the user's
    git update-ref refs/sessions/<session>/<before|after> <commit>

The store's index starts as a copy of the user's index (minus the paths
whose blob there is converted), so git's stat cache makes the first
snapshot cheap; each snapshot works on its own copy and puts it back with
a rename, so two sessions in one project never corrupt it. The user's
repository is only read (`--no-optional-locks`). The user's pre-existing
edits are in the "before" snapshot, so `diff` and `undo` only ever see
what changed during the session.

Each snapshot runs under a time budget: on a repository too big for it, the
snapshot is abandoned (its git process killed) and the record says so. A
file larger than `[checkpoints] max_file_mb` is left out (the record lists
it), so one build product neither exhausts the budget nor grows the store.
"""

from __future__ import annotations

import os
import time

from wrapagent import gitcmd
from wrapagent.history.ids import ulid_seconds

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Mapping, Sequence

REF_PREFIX = "refs/sessions/"  # in the store
LEGACY_REF_PREFIX = "refs/wrapagent/checkpoints/"  # in the user's repository, before the store
OVER_BUDGET_MARK = "over-budget"  # in $GIT_DIR/wrapagent/: the last snapshot here ran out of time
OVER_BUDGET_RETRY_SECS = 24 * 3600
IDENTITY = gitcmd.IDENTITY
FOLDERS_KEPT = 1000  # at most this many empty (or ignored-only) folders of `before` listed in a record
DEFAULT_MAX_FILE_MB = 10.0  # [checkpoints] max_file_mb: a larger file is left out of a snapshot


from wrapagent.history.snapshot_index import (  # noqa: F401  (re-exported: one place to import from)
    IGNORE_STAMP, BudgetExceeded, CheckpointError, IndexBuilder, _read_file, _unlink, check_ignore, ignore_query,
)


def git(root: str | Path, args: Sequence[str], *, env: Mapping[str, str] | None = None,
        index: str | None = None, deadline: float | None = None, input: bytes | None = None,
        check: bool = True, git_dir: str | None = None) -> gitcmd.Result:
    """Run git on the work tree at `root` (and `git_dir`, once known) through wrapagent/gitcmd.py.

    A wrapped session may run inside a git hook or a `git rebase -x`: gitcmd
    drops the variables that would point git at another repository or index,
    and runs none of the user's hooks (`post-index-change` and
    `reference-transaction` would otherwise fire on every snapshot). With
    `deadline` (monotonic) git's process group is killed when time is up and
    the temporary pack it was writing (`objects/pack/tmp_pack_*`: a large
    untracked file is streamed into one) is removed with it.
    """
    try:
        return gitcmd.run(root, args, git_dir=git_dir, work_tree=root if git_dir else None, index=index,
                          deadline=deadline, input=input, check=check, identity=True, base_env=env)
    except gitcmd.GitTimeout as exc:
        if not exc.started:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        removed = f" (removed the {len(exc.removed)} temporary file(s) it left)" if exc.removed else ""
        raise BudgetExceeded(f"`git {args[0]}` took longer than the snapshot budget{removed}") from None
    except gitcmd.GitError as exc:
        raise CheckpointError(str(exc)) from None  # gitcmd's own words ("cannot run git: …" when it could not start)


class Repo(IndexBuilder):
    """A git work tree (its top level and the user's git dir, only ever read) and wrapagent's store
    of its checkpoints (history/store.py), where every snapshot is written.

    `store` is None for a record of an earlier release, whose checkpoints
    are refs in the user's repository: those are only read (diff, undo).
    """

    def __init__(self, top: str, git_dir: str, env: Mapping[str, str] | None = None,
                 store: "Store | None" = None, objects: str | None = None) -> None:
        self.top = top
        self.git_dir = git_dir
        self.env = env
        self.store = store
        self.objects = objects
        self.head: str | None = None  # the user's HEAD commit when `find` looked (None: no commit yet)
        self._config: dict[str, str] | None = None

    @classmethod
    def find(cls, path: str | Path, env: Mapping[str, str] | None = None,
             deadline: float | None = None) -> "Repo | None":
        """The repository whose work tree holds `path`; None outside one (or in a bare one). Reads only."""
        from wrapagent.history.store import user_read

        args = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]
        try:
            proc = user_read(path, [*args, "HEAD"], env=env, deadline=deadline)  # HEAD in the same call
            if proc.returncode != 0:  # no commit yet (or no repository)
                proc = user_read(path, args, env=env, deadline=deadline)
        except gitcmd.GitTimeout:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        except gitcmd.GitError:
            return None
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 or len(lines) not in (3, 4) or not lines[0]:
            return None
        repo = cls(lines[0], lines[1], env, objects=os.path.join(lines[2], "objects"))
        repo.head = lines[3] if len(lines) == 4 else None
        return repo

    def open_store(self, *, create: bool = True) -> "Repo":
        """This repository with its store opened (created when missing): where snapshots go."""
        from wrapagent.history.store import Store, StoreError

        try:
            self.store = Store.open(self.top, self.git_dir, self.objects, self.env, create=create)
        except (StoreError, OSError) as exc:
            raise CheckpointError(f"checkpoint store: {exc}") from None
        return self

    def run(self, args: Sequence[str], *, index: str | None = None, deadline: float | None = None,
            input: bytes | None = None, check: bool = True) -> gitcmd.Result:
        """git on the store (or, for an earlier release's record, read-only on the user's repository)."""
        try:
            if self.store is not None:
                return self.store.run(args, index=index, deadline=deadline, input=input, check=check)
            from wrapagent.history.store import user_read

            return user_read(self.top, args, git_dir=self.git_dir, env=self.env, index=index,
                             deadline=deadline, input=input, check=check)
        except gitcmd.GitTimeout as exc:
            if not exc.started:
                raise BudgetExceeded("no time left in the snapshot budget") from None
            removed = f" (removed the {len(exc.removed)} temporary file(s) it left)" if exc.removed else ""
            raise BudgetExceeded(f"`git {args[0]}` took longer than the snapshot budget{removed}") from None
        except gitcmd.GitError as exc:
            raise CheckpointError(str(exc)) from None

    def run_in(self, folder: str, args: Sequence[str], *, input: bytes | None = None) -> gitcmd.Result:
        """git with this repository's git dir (the store's) on another work tree `folder` (undo's
        scratch copy of the `before` ignore files); never checks the exit code."""
        git_dir = self.store.path if self.store is not None else self.git_dir
        return git(folder, args, env=self.env, git_dir=git_dir, input=input, check=False)

    def read_user(self, args: Sequence[str], *, index: str | None = None, deadline: float | None = None,
                  input: bytes | None = None) -> gitcmd.Result:
        """A read-only git call on the user's repository (`--no-optional-locks`)."""
        from wrapagent.history.store import user_read

        try:
            return user_read(self.top, args, git_dir=self.git_dir, env=self.env, index=index,
                             deadline=deadline, input=input)
        except gitcmd.GitTimeout:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        except gitcmd.GitError as exc:
            raise CheckpointError(str(exc)) from None

    def user_config(self, deadline: float | None = None) -> dict[str, str]:
        """The user's settings a snapshot reads (store.USER_CONFIG_KEYS), asked once per Repo."""
        if self._config is None:
            from wrapagent.history.store import user_config

            try:
                self._config = user_config(self.top, self.git_dir, self.env, deadline)
            except gitcmd.GitTimeout:
                raise BudgetExceeded("no time left in the snapshot budget") from None
            except gitcmd.GitError as exc:
                raise CheckpointError(str(exc)) from None
        return self._config

    def rev(self, name: str, deadline: float | None = None) -> str | None:
        """A commit of the user's repository (HEAD), read only."""
        proc = self.read_user(["rev-parse", "-q", "--verify", f"{name}^{{commit}}"], deadline=deadline)
        out = proc.stdout.decode().strip()
        return out if proc.returncode == 0 and out else None

    # -- snapshots ----------------------------------------------------------------

    def _scratch(self) -> str:
        """The store's folder: its index and marks."""
        if self.store is None:
            raise CheckpointError("this session's checkpoints are in the repository (an earlier release): "
                                  "read only")
        return self.store.path

    def _index_paths(self) -> tuple[str, str]:
        folder = self._scratch()
        unique = f"{os.getpid()}-{os.urandom(4).hex()}"  # sessions (and threads) never share one
        return os.path.join(folder, "index"), os.path.join(folder, f"index.{unique}.tmp")

    def untracked_reason(self, cwd: str | None, deadline: float | None = None) -> str | None:
        """Why this work tree is not snapshotted although it is a repository; None when it is.

        A dotfiles repository (`git init ~`, `status.showUntrackedFiles no`)
        would otherwise put the whole home folder, `~/.ssh` included, into
        a snapshot from any folder under it.
        """
        home = os.path.realpath(os.path.expanduser("~") if self.env is None
                                else self.env.get("HOME") or os.path.expanduser("~"))
        if os.path.realpath(self.top) == home:
            return HOME_NOTE
        value = self.user_config(deadline).get("status.showuntrackedfiles", "").lower()
        if value in ("no", "false", "off", "0"):
            return ("status.showUntrackedFiles is `no` in this repository: untracked files are not "
                    "its business, so no checkpoints by default")
        if cwd:
            rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(self.top))
            if rel != "." and not rel.startswith(".."):
                inside = self.read_user(["ls-files", "-z", "--cached", "--", f":(literal){rel}"],
                                        deadline=deadline).stdout
                if not inside:
                    return (f"the session's folder ({rel}) holds no file the repository tracks: "
                            "no checkpoints by default")
        return None

    def snapshot(self, ref: str, message: str, parent: str | None,
                 deadline: float | None = None, max_file_bytes: int | None = None,
                 left_out: dict | None = None, folders: list | None = None) -> str:
        """Commit the work tree's current state under `ref` in the store; the commit id.

        `parent` is a commit of the store (the session's `before`), never the
        user's HEAD: the store must not depend on the user's history.
        """
        tree = self.write_tree(deadline, max_file_bytes, left_out, folders)
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        commit = self.run(args, deadline=deadline).stdout.decode().strip()
        from wrapagent.history.store import StoreError

        try:
            self.store.write_ref(ref, commit)
        except (StoreError, OSError) as exc:
            raise CheckpointError(f"cannot write {ref}: {exc}") from None
        return commit

    def _mark_path(self) -> str:
        return os.path.join(self._scratch(), OVER_BUDGET_MARK)

    def recently_over_budget(self, now: float | None = None) -> bool:
        """True when a snapshot here ran out of time recently: the next sessions don't wait for it again."""
        try:
            stamp = os.stat(self._mark_path()).st_mtime
        except OSError:
            return False
        return (time.time() if now is None else now) - stamp < OVER_BUDGET_RETRY_SECS

    def mark_over_budget(self) -> None:
        from wrapagent.history.store import write_private

        try:
            write_private(self._mark_path(), b"a wrapagent snapshot of this work tree ran out of its time budget\n")
        except OSError:
            pass

    # -- comparing and restoring ------------------------------------------------

    def changes(self, before: str, after: str, paths: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(status letter, path) for every file that differs between two trees or commits.

        With `paths`, only those paths and what lies below them. They are
        matched here, not given to git as pathspecs: a session that created
        40,000 files (a vendored library) would make the command line longer
        than the system allows (E2BIG), and undo impossible. git compares
        only the subtrees that differ, so the full list costs what changed.
        """
        if paths is not None and not paths:
            return []
        args = ["diff-tree", "-r", "-z", "--no-renames", "--name-status", "--no-ext-diff", before, after]
        out = self.run(args).stdout.decode("utf-8", "surrogateescape").split("\0")
        found = [(out[i][:1], out[i + 1]) for i in range(0, len(out) - 1, 2) if out[i]]
        if paths is None:
            return found
        wanted = set(paths)
        return [(status, path) for status, path in found if _at_or_below(path, wanted)]

    def checkout_paths(self, tree: str, paths: Sequence[str]) -> None:
        """Write `paths` as they are in `tree` into the work tree, leaving the user's index alone.

        A throw-away index holds `tree`; `checkout-index` on the store writes
        each file's bytes as they were (the store's attributes: no smudge
        filter, no eol conversion), so no filter can fail half-way.
        """
        import shutil
        import tempfile

        if not paths:
            return
        folder = tempfile.mkdtemp(prefix="wrapagent-undo-") if self.store is None else self.store.path
        tmp = os.path.join(folder, f"index.{os.getpid()}-{os.urandom(4).hex()}.undo")
        try:
            self.run(["read-tree", tree], index=tmp)
            data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
            self.run(["checkout-index", "-f", "-z", "--stdin"], index=tmp, input=data)
        finally:
            _unlink(tmp)
            if self.store is None:
                shutil.rmtree(folder, ignore_errors=True)


def _at_or_below(path: str, wanted: set[str]) -> bool:
    """Whether `path` is one of `wanted` or lies below one (as git's `:(literal)` pathspec matches)."""
    if path in wanted:
        return True
    cut = path.find("/")
    while cut != -1:
        if path[:cut] in wanted:
            return True
        cut = path.find("/", cut + 1)
    return False


# --------------------------------------------------------------------------- session wiring


def session_ref(session_id: str, which: str) -> str:
    return f"{REF_PREFIX}{session_id}/{which}"


def skip_reason(*, enabled: bool, depth: int, parent: str | None) -> str | None:
    """Why this session takes no checkpoints, or None when it should."""
    if not enabled:
        return "disabled by configuration ([checkpoints] enabled = false)"
    if depth or parent:
        return "nested session: the outer session's checkpoints cover the work tree"
    return None


def size_text(n: int) -> str:
    """`60 MB`, `12 KB`: a size for one line."""
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _open_for(project_root: str | Path, which: str, info: dict, env: Mapping[str, str] | None,
              deadline: float) -> Repo | None:
    """The repository and its store for this snapshot; None (with the reason in `info`) when there is none.

    The `after` snapshot goes into the store the `before` one went into, and
    only when the project is still the same work tree: a project deleted or
    renamed during the session keeps its `before` snapshot, and the record
    says why there is no `after` one.
    """
    repo = Repo.find(project_root, env, deadline)
    if which == "before":
        if repo is None:
            info.update(status="skipped", note="not a git repository")
        return repo
    if repo is None or os.path.realpath(repo.top) != os.path.realpath(str(info.get("repo"))):
        info["after_note"] = ("the project folder was deleted, moved or is no longer a git repository: "
                              "no `after` snapshot (the `before` one is kept)")
        return None
    return repo


def take(project_root: str | Path, session_id: str, which: str, info: dict,
         *, budget: float, env: Mapping[str, str] | None = None, cwd: str | None = None,
         max_file_bytes: int | None = None) -> None:
    """Take the `before` or `after` snapshot of one session, recording the outcome in `info`.

    `info` is the record's `checkpoints` object. Never raises: a failed
    snapshot is a note, the session goes on.
    """
    if info.get("status") not in (None, "taken"):
        return  # skipped earlier (not a repository, over budget, disabled)
    started = time.monotonic()
    deadline = started + budget
    repo = None
    try:
        repo = _open_for(project_root, which, info, env, deadline)
        if repo is None:
            return
        repo.open_store()
        if which == "before" and repo.recently_over_budget():
            info.update(status="skipped",
                        note=f"a snapshot of this repository ran out of its budget within the last "
                             f"{OVER_BUDGET_RETRY_SECS // 3600} h: not tried again yet "
                             f"(remove {repo._mark_path()} to retry now)")
            return
        if which == "before":
            reason = repo.untracked_reason(cwd, deadline)
            if reason is not None:
                info.update(status="skipped", note=reason)
                return
            info.update(repo=repo.top, store=repo.store.path, ref=REF_PREFIX + session_id, head=repo.head)
            parent = None
        else:
            parent = info.get("before")
            # the agent may have committed: diff and undo still compare work trees
            info["head_after"] = repo.head
        left_out: dict[str, int] = {}
        folders: list[str] = []
        commit = repo.snapshot(session_ref(session_id, which), f"wrapagent session {session_id}: {which}",
                               parent, deadline, max_file_bytes, left_out, folders)
        if left_out:
            info[f"left_out_{which}"] = left_out
        if folders and which == "before":
            info["folders_before"] = sorted(folders)[:FOLDERS_KEPT]
        info[which] = commit
        info["status"] = "taken"
    except BudgetExceeded:
        info.update(status="skipped",
                    note=f"the {which} snapshot took longer than its budget ({budget:g} s): "
                         "no checkpoints for this session")
        if repo is not None and repo.store is not None:
            repo.mark_over_budget()
    except CheckpointError as exc:
        info.update(status="failed", note=f"{which} snapshot: {exc}")
    finally:
        info[f"{which}_ms"] = round((time.monotonic() - started) * 1000, 1)


# --------------------------------------------------------------------------- commands


def note_record(session_dir: str | Path, **fields: object) -> bool:
    """Add `fields` to the `checkpoints` object of the record in `session_dir`; False when there is none.

    How undo and prune leave their mark ("undone on …", "pruned on …") for
    the next `sessions` command. The file is rewritten atomically, as the
    record module writes it.
    """
    from pathlib import Path

    from wrapagent.history.records import RECORD_NAME, atomic_write, dumps, load_record

    folder = Path(session_dir)
    record = load_record(folder)
    info = record.get("checkpoints") if record is not None else None
    if not isinstance(info, dict):
        return False
    info.update(fields)
    try:
        atomic_write(folder / RECORD_NAME, dumps(record).encode() + b"\n")
    except OSError:
        return False
    return True


def note_pruned(session_ids: Sequence[str], sessions_roots: Sequence[str | Path]) -> None:
    """Note in each record found under `sessions_roots` that its checkpoints were pruned now."""
    import datetime as dt

    stamp = dt.datetime.now(dt.timezone.utc).isoformat()
    for root in sessions_roots:
        for session_id in session_ids:
            if os.path.isdir(os.path.join(str(root), session_id)):
                note_record(os.path.join(str(root), session_id), pruned_at=stamp)


def prune(root: str | Path, older_than_days: float, env: Mapping[str, str] | None = None,
          now: float | None = None, *, dry_run: bool = False) -> list[str]:
    """Delete the checkpoints of sessions older than the given age from the project's store; their ids
    (with `dry_run`: the ids that would be, nothing deleted)."""
    repo = Repo.find(root, env)
    if repo is None:
        raise CheckpointError(f"{root} is not in a git repository")
    try:
        repo.open_store(create=False)
    except CheckpointError:
        return []  # no store: nothing was ever kept for this project
    return _prune_repo(repo, older_than_days, now, dry_run=dry_run)


def _prune_repo(repo: Repo, older_than_days: float, now: float | None = None,
                deadline: float | None = None, *, dry_run: bool = False) -> list[str]:
    """Drop the store's refs of old sessions, then the store's own objects nothing reaches any more.

    Only the store is touched; its `prune` keeps objects younger than an
    hour (a snapshot running now) and whatever the store's index names.
    """
    cutoff = (time.time() if now is None else now) - older_than_days * 86400
    doomed: dict[str, list[str]] = {}
    listed = repo.run(["for-each-ref", "--format=%(refname)", REF_PREFIX], deadline=deadline)
    for ref in listed.stdout.decode("utf-8", "surrogateescape").split():
        session_id = ref[len(REF_PREFIX):].split("/", 1)[0]
        stamp = ulid_seconds(session_id)
        if stamp is not None and stamp < cutoff:
            doomed.setdefault(session_id, []).append(ref)
    if doomed and not dry_run:
        lines = "".join(f"delete {ref}\n" for refs in doomed.values() for ref in refs)
        repo.run(["update-ref", "--stdin"], input=lines.encode("utf-8", "surrogateescape"), deadline=deadline)
        repo.run(["prune", "--expire=1.hour.ago"], deadline=deadline, check=False)
    return sorted(doomed)


PRUNE_MARK = "pruned"  # in the store: when old sessions' checkpoints were last looked for
PRUNE_EVERY_SECS = 24 * 3600


def expire_old(info: Mapping[str, object], keep_days: float, sessions_root: str | Path | None,
               env: Mapping[str, str] | None = None, *, budget: float = 2.0,
               now: float | None = None) -> list[str]:
    """At a session's end: drop the store's checkpoints of sessions older than `keep_days`.

    Cheap: one `stat` of a mark file in the store, and git only when it is
    a day old (then one `for-each-ref`, plus `update-ref` and `prune` when
    there are such sessions). The pruned sessions' records under
    `sessions_root` say so. Never raises; `keep_days` <= 0 keeps everything.
    """
    from wrapagent.history.store import Store, is_store, write_private

    top, store = info.get("repo"), info.get("store")
    if keep_days <= 0 or not top or not store or not is_store(str(store)):
        return []
    now = time.time() if now is None else now
    mark = os.path.join(str(store), PRUNE_MARK)
    try:
        if now - os.stat(mark).st_mtime < PRUNE_EVERY_SECS:
            return []
    except OSError:
        pass
    try:
        repo = Repo(str(top), "", env, store=Store(str(store), str(top), "", env))
        dropped = _prune_repo(repo, keep_days, now, time.monotonic() + budget)
        write_private(mark, f"wrapagent drops checkpoints older than {keep_days:g} days "
                            "([checkpoints] keep_days)\n".encode())
    except (OSError, CheckpointError):
        return []
    if dropped and sessions_root is not None:
        note_pruned(dropped, [sessions_root])
    return dropped


# --------------------------------------------------------------------------- lifecycle hooks


HOME_NOTE = ("the repository's top is the home folder (a dotfiles repository?): checkpoints would hold "
             "every file under it, so none by default")


def before_skip_reason(settings, *, depth: int, parent: str | None,
                       project_root: str | Path, env: Mapping[str, str] | None = None) -> str | None:
    """Why this session takes no `before` snapshot; None when it takes one (decided without git)."""
    reason = skip_reason(enabled=settings.enabled, depth=depth, parent=parent)
    if reason is not None:
        return reason
    root = str(project_root)
    home = (os.environ if env is None else env).get("HOME") or os.path.expanduser("~")
    home = os.path.realpath(home)
    if not os.path.exists(os.path.join(root, ".git")):
        # The project root is the nearest folder holding `.git` (paths.project_root_of), and
        # snapshots strip GIT_DIR & co.: no `.git` there means no repository, without forking git.
        if root.startswith(home + os.sep) and os.path.exists(os.path.join(home, ".git")):
            return "not a git repository (the one at the home folder does not count: no checkpoints there)"
        return "not a git repository"  # no `.git` found: no git process at all on start-up
    if os.path.realpath(root) == home:
        return HOME_NOTE
    return None


def max_file_bytes(settings) -> int | None:
    """`[checkpoints] max_file_mb` in bytes; None (no cap) when it is 0."""
    mb = float(getattr(settings, "max_file_mb", DEFAULT_MAX_FILE_MB))
    return int(mb * 1_000_000) if mb > 0 else None


def begin(record: dict, settings, project_root: str | Path, env: Mapping[str, str] | None = None) -> None:
    """Before the tool starts: the `before` snapshot, or the reason there is none, in `record["checkpoints"]`."""
    info: dict = {"status": None}
    record["checkpoints"] = info
    reason = before_skip_reason(settings, depth=int(record.get("depth") or 0),
                                parent=record.get("parent_session"), project_root=project_root, env=env)
    if reason is not None:
        info.update(status="skipped", note=reason)
        return
    take(project_root, str(record["id"]), "before", info, budget=settings.budget_secs, env=env,
         cwd=record.get("cwd"), max_file_bytes=max_file_bytes(settings))


def end(record: dict, settings, project_root: str | Path, env: Mapping[str, str] | None = None) -> None:
    """After the tool exited: the `after` snapshot, when there is a `before` one; then old
    sessions' refs past `[checkpoints] keep_days` go (`expire_old`, at most once a day)."""
    info = record.get("checkpoints")
    if not isinstance(info, dict) or info.get("status") != "taken":
        return
    take(project_root, str(record["id"]), "after", info, budget=settings.budget_secs, env=env,
         max_file_bytes=max_file_bytes(settings))
    from wrapagent.paths import sessions_root_str

    expire_old(info, getattr(settings, "keep_days", 30.0), sessions_root_str(project_root, env), env,
               budget=settings.budget_secs)
