"""Snapshots of the project's work tree as git commits the user never sees.

Before the tool starts and after it exits, the work tree (tracked and
untracked files, minus what git ignores at that moment) is written as a
commit with git plumbing only:

    GIT_INDEX_FILE=<private index> git add -A      # never the user's index
    GIT_INDEX_FILE=<private index> git write-tree
    git commit-tree <tree> [-p HEAD | -p <before>]  # no hooks, no branch moved
    git update-ref refs/wrapagent/checkpoints/<session>/<before|after> <commit>

The private index lives in the git dir (`wrapagent/index`), seeded from the
user's index the first time so git's stat cache makes `git add -A` cheap;
each snapshot works on its own copy and puts it back with a rename, so two
sessions in one repository never corrupt it. Refs under `refs/wrapagent/`
keep the commits from gc without showing up in branches, the stash or
`git status`. The user's pre-existing edits are in the "before" snapshot,
so `diff` and `undo` only ever see what changed during the session.

Each snapshot runs under a time budget: on a repository too big for it, the
snapshot is abandoned (its git process killed) and the record says so.
"""

from __future__ import annotations

import os
import time

from wrapagent import gitcmd

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Mapping, Sequence

REF_PREFIX = "refs/wrapagent/checkpoints/"
OVER_BUDGET_MARK = "over-budget"  # in $GIT_DIR/wrapagent/: the last snapshot here ran out of time
OVER_BUDGET_RETRY_SECS = 24 * 3600
IDENTITY = gitcmd.IDENTITY


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class CheckpointError(Exception):
    """A snapshot or an operation on snapshots failed; the message is for the user."""


class BudgetExceeded(CheckpointError):
    """A git step did not finish within the snapshot's time budget."""


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


class Repo:
    """A git work tree: its top level and its (per-worktree) git dir."""

    def __init__(self, top: str, git_dir: str, env: Mapping[str, str] | None = None) -> None:
        self.top = top
        self.git_dir = git_dir
        self.env = env

    @classmethod
    def find(cls, path: str | Path, env: Mapping[str, str] | None = None,
             deadline: float | None = None) -> "Repo | None":
        """The repository whose work tree holds `path`; None outside one (or in a bare one)."""
        try:
            proc = git(path, ["rev-parse", "--show-toplevel", "--absolute-git-dir"], env=env,
                       deadline=deadline, check=False)
        except BudgetExceeded:
            raise
        except CheckpointError:
            return None
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 or len(lines) != 2 or not lines[0]:
            return None
        return cls(lines[0], lines[1], env)

    def run(self, args: Sequence[str], **kw) -> gitcmd.Result:
        return git(self.top, args, env=self.env, git_dir=self.git_dir, **kw)

    def rev(self, name: str, deadline: float | None = None) -> str | None:
        proc = self.run(["rev-parse", "-q", "--verify", f"{name}^{{commit}}"], check=False,
                        deadline=deadline)
        out = proc.stdout.decode().strip()
        return out if proc.returncode == 0 and out else None

    # -- snapshots ----------------------------------------------------------------

    def _index_paths(self) -> tuple[str, str]:
        folder = os.path.join(self.git_dir, "wrapagent")
        os.makedirs(folder, exist_ok=True)
        unique = f"{os.getpid()}-{os.urandom(4).hex()}"  # sessions (and threads) never share one
        return os.path.join(folder, "index"), os.path.join(folder, f"index.{unique}.tmp")

    def _seed_index(self, private: str, work: str) -> None:
        """Start from the private index (warm stat cache), else the user's, else nothing.

        A plain read and write: the user's index is only ever read.
        """
        for source in (private, os.path.join(self.git_dir, "index")):
            try:
                with open(source, "rb") as src:
                    data = src.read()
            except FileNotFoundError:
                continue
            with open(work, "wb") as dst:
                dst.write(data)
            return
        _unlink(work)

    def write_tree(self, deadline: float | None = None) -> str:
        """The work tree as it is now (tracked + untracked, minus ignored), as a tree id."""
        private, work = self._index_paths()
        self._seed_index(private, work)
        try:
            # First: `add` would write the new content of a file ignored since into the object store.
            self._forget_ignored(work, deadline)
            # --ignore-errors: a file that vanishes or cannot be read mid-scan
            # (an editor's swap file) must not cost the whole snapshot.
            added = self.run(["add", "-A", "--ignore-errors", "--", "."], index=work, deadline=deadline,
                             check=False)
            if added.returncode != 0 and b"fatal:" in added.stderr:
                fatal = added.stderr.decode("utf-8", "replace").strip().splitlines()[-1]
                raise CheckpointError(f"`git add` failed: {fatal}")
            tree = self.run(["write-tree"], index=work, deadline=deadline).stdout.decode().strip()
            os.replace(work, private)
            return tree
        finally:
            _unlink(work)
            _unlink(work + ".lock")  # left by a git process killed at the end of the budget

    def _forget_ignored(self, work: str, deadline: float | None) -> None:
        """Make the private index hold exactly the user's tracked files plus untracked, non-ignored ones.

        `git add -A` never removes an entry and never adds an ignored file:
        a `.env` snapshotted once while untracked would stay in every later
        snapshot, rotated secret included, after the user ignores it, and a
        file the user force-adds (`git add -f dist/app.js`) after the first
        snapshot would never be in one. Runs before `add`, which would write
        the ignored file's new content into the object store. Costs two
        `ls-files` (~2.5 ms each on 10,000 files) and, when the private index
        holds untracked files, one `check-ignore` of those alone (matching
        every entry against the ignore rules costs ~10 ms).
        """
        listing = ["ls-files", "-z", "--cached"]
        ours = set(self.run(listing, index=work, deadline=deadline).stdout.split(b"\0"))
        user_index = os.path.join(self.git_dir, "index")
        theirs: set[bytes] = set()
        if os.path.exists(user_index):
            theirs = set(self.run(listing, index=user_index, deadline=deadline).stdout.split(b"\0"))
        drop = self._ignored(sorted(p for p in ours - theirs if p), deadline)
        if drop:
            self.run(["update-index", "-z", "--force-remove", "--stdin"], index=work,
                     deadline=deadline, input=b"\0".join(drop) + b"\0")
        # Tracked by the user since, and ignored (`add -A` takes in the others): as files.
        add = [p for p in self._ignored(sorted(p for p in theirs - ours if p), deadline)
               if self._is_file(p)]
        if add:
            self.run(["update-index", "-z", "--add", "--stdin"], index=work,
                     deadline=deadline, input=b"\0".join(add) + b"\0")

    def _ignored(self, paths: Sequence[bytes], deadline: float | None) -> list[bytes]:
        """Those of `paths` git's ignore rules match now (tracked or not).

        A path below something that is no longer a folder (a tracked
        `vendor/lib.py` after `vendor` became a symlink) is not in the work
        tree, so not ignored: asked about it, `check-ignore` dies ("beyond a
        symbolic link") and every snapshot of the repository failed with it.
        """
        paths = [p for p in paths if self._under_folders(p)]
        if not paths:
            return []
        return check_ignore(self.run(["check-ignore", "--no-index", "-z", "--stdin"], deadline=deadline,
                                     check=False, input=ignore_query(paths)))

    def _under_folders(self, path: bytes) -> bool:
        """Whether every leading part of `path` is a real folder (not a link, a file), or absent."""
        import stat

        folder = os.fsencode(self.top)
        for part in path.split(b"/")[:-1]:
            folder = os.path.join(folder, part)
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return False
            except FileNotFoundError:
                return True  # a folder that is gone: check-ignore takes the path as it is
            except OSError:
                return False
        return True

    def _is_file(self, path: bytes) -> bool:
        import stat

        try:
            mode = os.lstat(os.path.join(os.fsencode(self.top), path)).st_mode
        except OSError:
            return False
        return stat.S_ISREG(mode) or stat.S_ISLNK(mode)

    def untracked_reason(self, cwd: str | None, deadline: float | None = None) -> str | None:
        """Why this work tree is not snapshotted although it is a repository; None when it is.

        A dotfiles repository (`git init ~`, `status.showUntrackedFiles no`)
        would otherwise put the whole home folder, `~/.ssh` included, into
        `~/.git` from any folder under it.
        """
        home = os.path.realpath(os.path.expanduser("~") if self.env is None
                                else self.env.get("HOME") or os.path.expanduser("~"))
        if os.path.realpath(self.top) == home:
            return HOME_NOTE
        value = self.run(["config", "--get", "status.showUntrackedFiles"], check=False,
                         deadline=deadline).stdout.decode("utf-8", "replace").strip().lower()
        if value in ("no", "false", "off", "0"):
            return ("status.showUntrackedFiles is `no` in this repository: untracked files are not "
                    "its business, so no checkpoints by default")
        if cwd:
            rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(self.top))
            if rel != "." and not rel.startswith(".."):
                inside = self.run(["ls-files", "-z", "--cached", "--", f":(literal){rel}"],
                                  deadline=deadline).stdout
                if not inside:
                    return (f"the session's folder ({rel}) holds no file the repository tracks: "
                            "no checkpoints by default")
        return None

    def snapshot(self, ref: str, message: str, parent: str | None,
                 deadline: float | None = None) -> str:
        """Commit the work tree's current state under `ref`; the commit id."""
        tree = self.write_tree(deadline)
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        commit = self.run(args, deadline=deadline).stdout.decode().strip()
        self.run(["update-ref", "-m", "wrapagent checkpoint", ref, commit], deadline=deadline)
        return commit

    def _mark_path(self) -> str:
        return os.path.join(self.git_dir, "wrapagent", OVER_BUDGET_MARK)

    def recently_over_budget(self, now: float | None = None) -> bool:
        """True when a snapshot here ran out of time recently: the next sessions don't wait for it again."""
        try:
            stamp = os.stat(self._mark_path()).st_mtime
        except OSError:
            return False
        return (time.time() if now is None else now) - stamp < OVER_BUDGET_RETRY_SECS

    def mark_over_budget(self) -> None:
        try:
            os.makedirs(os.path.dirname(self._mark_path()), exist_ok=True)
            with open(self._mark_path(), "w", encoding="utf-8") as f:
                f.write("a wrapagent snapshot of this work tree ran out of its time budget\n")
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

        A throw-away index holds `tree`; `checkout-index` applies the same
        filters (autocrlf, smudge) as a checkout would.
        """
        import tempfile

        if not paths:
            return
        folder = os.path.dirname(self._index_paths()[0])
        fd, tmp = tempfile.mkstemp(prefix="index.", suffix=".undo", dir=folder)
        os.close(fd)
        os.unlink(tmp)
        try:
            self.run(["read-tree", tree], index=tmp)
            data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
            self.run(["checkout-index", "-f", "-z", "--stdin"], index=tmp, input=data)
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def ignore_query(paths: Sequence[bytes]) -> bytes:
    """`check-ignore --stdin` input naming exactly these paths: each as `./path`.

    check-ignore reads its paths as pathspecs and supports no `literal`
    magic: a file named `:!README.md` or `:(x)y` (an agent's, anybody's)
    made it die, and with it undo and every snapshot of the repository.
    Magic is only read at a pathspec's start; `./` keeps it from being one.
    """
    return b"".join(b"./" + p + b"\0" for p in paths)


def check_ignore(proc: gitcmd.Result) -> list[bytes]:
    """The ignored paths of a `check-ignore -z --stdin` run on `ignore_query` input."""
    if proc.returncode not in (0, 1):
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CheckpointError(f"`git check-ignore` failed: {msg[-1] if msg else proc.returncode}")
    return [p[2:] if p.startswith(b"./") else p for p in proc.stdout.split(b"\0") if p]


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


def take(project_root: str | Path, session_id: str, which: str, info: dict,
         *, budget: float, env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
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
        repo = Repo.find(project_root, env, deadline)
        if repo is None:
            info.update(status="skipped", note="not a git repository")
            return
        if which == "before" and repo.recently_over_budget():
            info.update(status="skipped",
                        note=f"a snapshot of this repository ran out of its budget within the last "
                             f"{OVER_BUDGET_RETRY_SECS // 3600} h: not tried again yet "
                             f"(remove {os.path.join(repo.git_dir, 'wrapagent', OVER_BUDGET_MARK)} to retry now)")
            return
        if which == "before":
            reason = repo.untracked_reason(cwd, deadline)
            if reason is not None:
                info.update(status="skipped", note=reason)
                return
            parent = repo.rev("HEAD", deadline)
            info.update(repo=repo.top, git_dir=repo.git_dir, ref=REF_PREFIX + session_id, head=parent)
        else:
            parent = info.get("before")
            # the agent may have committed: diff and undo still compare work trees
            info["head_after"] = repo.rev("HEAD", deadline)
        commit = repo.snapshot(session_ref(session_id, which),
                               f"wrapagent session {session_id}: {which}", parent, deadline)
        info[which] = commit
        info["status"] = "taken"
    except BudgetExceeded:
        info.update(status="skipped",
                    note=f"the {which} snapshot took longer than its budget ({budget:g} s): "
                         "no checkpoints for this session")
        if repo is not None:
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


def ulid_time(session_id: str) -> float | None:
    """Seconds since the epoch encoded in a ULID session id (its first 10 characters)."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = 0
    for ch in session_id[:10].upper():
        index = alphabet.find(ch)
        if index < 0 or len(session_id) < 10:
            return None
        value = value * 32 + index
    return value / 1000.0


def prune(root: str | Path, older_than_days: float, env: Mapping[str, str] | None = None,
          now: float | None = None) -> list[str]:
    """Delete the checkpoint refs of sessions older than the given age; the session ids dropped."""
    repo = Repo.find(root, env)
    if repo is None:
        raise CheckpointError(f"{root} is not in a git repository")
    return _prune_repo(repo, older_than_days, now)


def _prune_repo(repo: Repo, older_than_days: float, now: float | None = None,
                deadline: float | None = None) -> list[str]:
    cutoff = (time.time() if now is None else now) - older_than_days * 86400
    doomed: dict[str, list[str]] = {}
    listed = repo.run(["for-each-ref", "--format=%(refname)", REF_PREFIX], deadline=deadline)
    for ref in listed.stdout.decode("utf-8", "surrogateescape").split():
        session_id = ref[len(REF_PREFIX):].split("/", 1)[0]
        stamp = ulid_time(session_id)
        if stamp is not None and stamp < cutoff:
            doomed.setdefault(session_id, []).append(ref)
    if doomed:
        lines = "".join(f"delete {ref}\n" for refs in doomed.values() for ref in refs)
        repo.run(["update-ref", "--stdin"], input=lines.encode("utf-8", "surrogateescape"), deadline=deadline)
    return sorted(doomed)


PRUNE_MARK = "pruned"  # in $GIT_DIR/wrapagent/: when old sessions' refs were last looked for
PRUNE_EVERY_SECS = 24 * 3600


def expire_old(info: Mapping[str, object], keep_days: float, sessions_root: str | Path | None,
               env: Mapping[str, str] | None = None, *, budget: float = 2.0,
               now: float | None = None) -> list[str]:
    """At a session's end: drop the refs of this repository's sessions older than `keep_days`.

    Cheap: one `stat` of a mark file, and git only when it is a day old
    (then one `for-each-ref`, plus `update-ref` when there are such refs).
    The pruned sessions' records under `sessions_root` say so. Never raises;
    `keep_days` <= 0 keeps everything.
    """
    top, git_dir = info.get("repo"), info.get("git_dir")
    if keep_days <= 0 or not top or not git_dir:
        return []
    now = time.time() if now is None else now
    mark = os.path.join(str(git_dir), "wrapagent", PRUNE_MARK)
    try:
        if now - os.stat(mark).st_mtime < PRUNE_EVERY_SECS:
            return []
    except OSError:
        pass
    try:
        dropped = _prune_repo(Repo(str(top), str(git_dir), env), keep_days, now, time.monotonic() + budget)
        with open(mark, "w", encoding="utf-8") as f:
            f.write(f"wrapagent drops checkpoints older than {keep_days:g} days ([checkpoints] keep_days)\n")
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
         cwd=record.get("cwd"))


def end(record: dict, settings, project_root: str | Path, env: Mapping[str, str] | None = None) -> None:
    """After the tool exited: the `after` snapshot, when there is a `before` one; then old
    sessions' refs past `[checkpoints] keep_days` go (`expire_old`, at most once a day)."""
    info = record.get("checkpoints")
    if not isinstance(info, dict) or info.get("status") != "taken":
        return
    take(project_root, str(record["id"]), "after", info, budget=settings.budget_secs, env=env)
    from wrapagent.paths import sessions_root_str

    expire_old(info, getattr(settings, "keep_days", 30.0), sessions_root_str(project_root, env), env,
               budget=settings.budget_secs)
