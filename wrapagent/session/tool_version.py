"""The wrapped tool's version, found without costing its start-up.

The record says which release ran (`tool_version`) so that a screen the
adapter no longer recognises can be tied to the release that changed it
(`doctor` names it). Finding it must cost the user nothing:

- it starts in a thread only once the tool has been spawned (`Lookup`);
- a cache in the state folder maps the binary the session ran (real path,
  mtime, size) to its version: a hit is one `stat` and one small read, no
  process;
- on a miss the cheap answers come first: the npm package that holds the
  binary (the nearest `package.json` walking up from the real path, inside
  `node_modules`), claude's native install (`…/versions/2.1.30`), a
  Homebrew keg (`…/Cellar/codex/0.140.0/…`);
- only then, for the four known tools and after a delay (the tool's own
  start goes first; a session over before it runs nothing), `TOOL
  --version`: from `/` (never the project folder, whose config trust has
  not allowed), stdin `/dev/null`, no terminal (its own session), an empty
  signal mask, its process group killed at the timeout; only a strict
  version number is taken from what it printed, so escapes cannot reach a
  record or a listing.

At the end of the session (`Lookup.result`) a `--version` still running is
waited for a short bounded time, then its process group is killed and the
record says null; a later session fills the cache. A binary that never
answers is tried `MAX_FAILURES` times per (path, mtime, size), then left
alone (doctor still asks it).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Mapping

CACHE_NAME = "tool-versions.json"
"""In wrapagent's state folder: {real path: {"mtime_ns", "size", "version", "failures", "source"}}."""
CACHE_MAX_BYTES = 256 * 1024
CACHE_MAX_ENTRIES = 64
RUN_DELAY_SECS = 2.0
"""Before `TOOL --version` runs beside the tool: its own start-up first (cut short when the session ends)."""
RUN_TIMEOUT_SECS = 5.0
"""`TOOL --version` longer than this is killed (process group): no version this time."""
END_WAIT_SECS = 0.5
"""At the end of a session, how long an unfinished lookup is waited for before it is given up."""
MAX_FAILURES = 3
"""`--version` runs that gave nothing, per binary, before wrapagent stops asking it."""
OUTPUT_CAP = 8192
"""Bytes of `--version` output looked at (the rest is read and dropped)."""
NEUTRAL_CWD = "/"
"""Where `--version` runs: no project config can be found from there."""

_VERSION = r"v?(\d{1,6}(?:\.\d{1,9}){1,3}(?:-[0-9A-Za-z]{1,20}(?:\.[0-9A-Za-z]{1,20}){0,4})?)"
"""A release number as CLIs print it: 0.169.0, 2.1.330, 1.2.3-beta.1 (nothing else gets through)."""
_PLATFORM_SUFFIX = r"-(?:linux|darwin|win32|freebsd|openbsd|sunos|aix|android)(?:-[0-9a-z]+){0,3}$"
"""npm platform packages version themselves `0.169.0-linux-x64`: the release is the part before."""


def _version_re():
    import re

    return re.compile(rf"(?<![\w.\-]){_VERSION}(?![\w.\-]*\w)")


def strict_version(text: object) -> str | None:
    """`text` when it is a plain release number (platform suffix dropped), else None."""
    import re

    if not isinstance(text, str) or len(text) > 80:
        return None
    text = re.sub(_PLATFORM_SUFFIX, "", text.strip())
    match = re.fullmatch(_VERSION, text)
    return match.group(1) if match else None


_RELEASE_CHARS = frozenset("0123456789.-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _plain_release(text: object) -> bool:
    """A cached version as `strict_version` stored it, checked without `re` (a session's hit path:
    compiling the patterns costs more than the whole lookup); nothing that could act on a terminal."""
    return (isinstance(text, str) and 0 < len(text) <= 80 and text[0] in "0123456789" and "." in text
            and all(ch in _RELEASE_CHARS for ch in text))


def parse_version_output(data: bytes) -> str | None:
    """The first release number in what `TOOL --version` printed (`codex-cli 0.169.0`,
    `2.1.330 (Claude Code)`), or None. Escape sequences are dropped first; the number is
    matched strictly, so nothing but digits, dots and a short pre-release tag is returned."""
    import re

    text = data[:OUTPUT_CAP].decode("utf-8", "replace")
    text = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]", " ", text)
    pattern = _version_re()
    for line in text.splitlines()[:20]:
        match = pattern.search(line)
        if match:
            return strict_version(match.group(1))
    return None


# --------------------------------------------------------------------------- the binary and the cache


def identity(executable: str) -> tuple[str, int, int] | None:
    """(real path, mtime_ns, size) of the binary the session runs; None when it cannot be read."""
    try:
        real = os.path.realpath(executable)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return real, st.st_mtime_ns, st.st_size


def cache_path(env: Mapping[str, str]) -> str:
    from wrapagent.paths import state_dir_str

    return os.path.join(state_dir_str(env), CACHE_NAME)


def _read_cache(path: str) -> dict[str, Any]:
    import json

    try:
        with open(path, "rb") as fh:
            data = fh.read(CACHE_MAX_BYTES + 1)
    except OSError:
        return {}
    if len(data) > CACHE_MAX_BYTES:
        return {}
    try:
        cache = json.loads(data)
    except (ValueError, RecursionError):  # damaged: no cache (a deep nesting overflows the parser)
        return {}
    return cache if isinstance(cache, dict) else {}


def _entry(cache: Mapping[str, Any], ident: tuple[str, int, int]) -> dict[str, Any] | None:
    real, mtime_ns, size = ident
    entry = cache.get(real)
    if isinstance(entry, dict) and entry.get("mtime_ns") == mtime_ns and entry.get("size") == size:
        return entry
    return None


def cached(executable: str, env: Mapping[str, str]) -> tuple[bool, str | None]:
    """(hit, version) from the cache alone: no process, one stat and one read.

    A hit is an entry for this very binary (same real path, mtime and size)
    with a version, or one that failed `MAX_FAILURES` times (version None).
    """
    ident = identity(executable)
    if ident is None:
        return False, None
    entry = _entry(_read_cache(cache_path(env)), ident)
    if entry is None:
        return False, None
    version = entry.get("version")
    if _plain_release(version):
        return True, version
    failures = entry.get("failures")
    return (isinstance(failures, int) and failures >= MAX_FAILURES), None


def remember(executable: str, env: Mapping[str, str], version: str | None, source: str) -> None:
    """Store what was found (or one more failure) for this binary; best effort, atomic."""
    ident = identity(executable)
    if ident is None:
        return
    with _cache_lock():  # doctor looks up four tools at once: one writer at a time in a process
        _remember(ident, cache_path(env), version, source)


def _cache_lock():
    import threading

    global _LOCK
    if _LOCK is None:
        _LOCK = threading.Lock()
    return _LOCK


_LOCK = None


def _remember(ident: tuple[str, int, int], path: str, version: str | None, source: str) -> None:
    import json
    import time

    cache = _read_cache(path)
    real, mtime_ns, size = ident
    old = _entry(cache, ident) or {}
    failures = old.get("failures")
    failures = 0 if version is not None else (failures if isinstance(failures, int) else 0) + 1
    cache[real] = {"mtime_ns": mtime_ns, "size": size, "version": version, "failures": failures,
                   "source": source, "at": round(time.time(), 3)}
    if len(cache) > CACHE_MAX_ENTRIES:  # the binaries seen longest ago go
        keep = sorted(cache, key=lambda k: (cache[k].get("at") or 0) if isinstance(cache[k], dict) else 0,
                      reverse=True)[:CACHE_MAX_ENTRIES]
        cache = {k: cache[k] for k in keep}
    tmp = f"{path}.{os.getpid()}.{id(cache)}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(cache, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# --------------------------------------------------------------------------- cheap answers


PACKAGE_WALK_LEVELS = 6
"""`node_modules/@openai/codex-linux-x64/vendor/<triple>/codex/codex` is 4 folders below its package."""


def from_install(real: str) -> tuple[str | None, str]:
    """The version the install itself states, without running anything: (version, source).

    - npm: the nearest `package.json` above the binary, if it sits in a
      `node_modules` folder (a package.json of the user's own project
      above a script of theirs is not the tool's) or names this binary in
      its `bin`; a platform package's `0.169.0-linux-x64` counts as 0.169.0.
    - claude's native installer: `…/claude/versions/2.1.330` is the binary.
    - Homebrew: `…/Cellar/codex/0.140.0_1/bin/codex` (a formula's revision `_1`
      dropped), `…/Caskroom/codex/0.140.0/codex`.
    """
    import json

    name = os.path.basename(real)
    if os.path.basename(os.path.dirname(real)) == "versions" and strict_version(name) == name:
        return name, "install folder"
    parts = real.split(os.sep)
    for keg in ("Cellar", "Caskroom"):
        if keg in parts[:-3]:
            folder_name = parts[parts.index(keg) + 2].split("_")[0]
            if strict_version(folder_name) == folder_name:
                return folder_name, "install folder"
    folder = os.path.dirname(real)
    for _ in range(PACKAGE_WALK_LEVELS):
        candidate = os.path.join(folder, "package.json")
        try:
            with open(candidate, "rb") as fh:
                raw = fh.read(CACHE_MAX_BYTES + 1)
        except OSError:
            raw = None
        if raw is not None:
            if len(raw) > CACHE_MAX_BYTES:
                return None, "package.json"
            try:
                package = json.loads(raw)
            except ValueError:
                return None, "package.json"
            if not isinstance(package, dict) or not _owns(package, folder, real):
                return None, "package.json"
            return strict_version(package.get("version")), "package.json"
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None, "none"


def _owns(package: Mapping[str, Any], folder: str, real: str) -> bool:
    """The package.json at `folder` is the tool's: an installed npm package, or its `bin` is `real`."""
    if "node_modules" in folder.split(os.sep):
        return True
    bins = package.get("bin")
    targets = [bins] if isinstance(bins, str) else list(bins.values()) if isinstance(bins, dict) else []
    return any(isinstance(t, str) and os.path.realpath(os.path.join(folder, t)) == real for t in targets)


# --------------------------------------------------------------------------- `TOOL --version`


class VersionRun:
    """`TOOL --version` in its own session from `/`; `kill` may come from another thread."""

    def __init__(self) -> None:
        self.proc = None
        self.killed = False

    def run(self, executable: str, env: Mapping[str, str], timeout: float) -> tuple[str | None, str | None]:
        """(version, error); never longer than `timeout`, its process group killed after.

        Output past OUTPUT_CAP is read and dropped (a tool printing its whole
        help must not block on a full pipe); a `kill` from another thread
        ends the group, and so the output, at once.
        """
        import subprocess
        import time

        from wrapagent import child_process

        child_env = dict(env)
        child_env["WRAPAGENT_DISABLE"] = "1"  # a wrapagent inside it execs the tool directly
        try:
            self.proc = proc = child_process.start([executable, "--version"], cwd=NEUTRAL_CWD, env=child_env,
                                                   stderr="stdout")
        except OSError as exc:
            return None, f"cannot run: {exc.strerror or exc}"
        if self.killed:  # the session ended while it started
            self.kill()
        out = bytearray()

        def keep(stream: str, data: bytes) -> bool:
            out.extend(data[:max(0, OUTPUT_CAP - len(out))])
            return False

        deadline = time.monotonic() + timeout
        outcome = None
        try:
            outcome = child_process.pump(proc, None, deadline, keep)
            if outcome == child_process.ENDED and not self.killed:  # its output ended: let it exit
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            child_process.stop_group(proc)  # whatever is left: `--version` has no state worth a SIGTERM
        code = proc.returncode
        name = os.path.basename(executable)
        if outcome in (child_process.TIMED_OUT, child_process.HELD_OPEN):
            return None, f"`{name} --version` did not finish within {timeout:g}s"
        if self.killed:
            return None, f"`{name} --version` had not finished when the session ended"
        version = parse_version_output(bytes(out))
        if version is None:
            return None, f"`{name} --version` printed no version number" + (f" (exit {code})" if code else "")
        return version, None

    def kill(self) -> None:
        self.killed = True
        self.kill_group()

    def kill_group(self) -> None:
        """SIGKILL its group (from any thread); `run` reaps it. Nothing to wait for: `--version`
        has no state worth a SIGTERM, and the session that asked may be ending."""
        import signal

        from wrapagent import child_process

        proc = self.proc
        if proc is None or proc.returncode is not None:  # reaped: its pid may be someone else's now
            return
        child_process.signal_group(proc.pid, signal.SIGKILL)


def find_version(executable: str, env: Mapping[str, str], *, may_run: bool,
                 timeout: float = RUN_TIMEOUT_SECS, runner: VersionRun | None = None,
                 before_run=None, trust_failures: bool = True) -> dict[str, Any]:
    """{"version", "source", "error"} of the binary `executable` resolves to, the cache filled.

    `source`: "cache", "package.json", "install folder", "--version" or
    None. `may_run`: `TOOL --version` is allowed (the known tools only: an
    unknown program may not take `--version` as a harmless question).
    `before_run()` is called before that run (the delay; False skips it).
    `trust_failures`: a binary that failed MAX_FAILURES times is not asked again.
    """
    ident = identity(executable)
    if ident is None:
        return {"version": None, "source": None, "error": "the binary cannot be read"}
    hit, version = cached(executable, env)
    if hit and (version is not None or trust_failures):
        return {"version": version, "source": "cache", "error": None if version else "no version (cached)"}
    version, source = from_install(ident[0])
    if version is not None:
        remember(executable, env, version, source)
        return {"version": version, "source": source, "error": None}
    if not may_run:
        return {"version": None, "source": None, "error": "not found without running the tool"}
    if before_run is not None and before_run() is False:
        return {"version": None, "source": None, "error": "the session ended first"}
    runner = runner or VersionRun()
    version, error = runner.run(ident[0], env, timeout)
    if not runner.killed:  # cut short by the session's end: not the binary's fault, try again next time
        remember(executable, env, version, "--version")
    return {"version": version, "source": "--version" if version else None, "error": error}


# --------------------------------------------------------------------------- beside a session


class Lookup:
    """The version lookup of one session, in a daemon thread started after the tool was spawned."""

    def __init__(self, executable: str, env: Mapping[str, str], *, may_run: bool,
                 delay: float = RUN_DELAY_SECS, timeout: float = RUN_TIMEOUT_SECS) -> None:
        import threading

        self.executable = executable
        self.env = dict(env)
        self.may_run = may_run
        self.delay = delay
        self.timeout = timeout
        self.found: dict[str, Any] | None = None
        self.runner = VersionRun()
        self.ending = threading.Event()
        self.thread = threading.Thread(target=self._run, name="wrapagent-tool-version", daemon=True)

    def start(self) -> "Lookup":
        self.thread.start()
        return self

    def _run(self) -> None:
        from wrapagent.child_process import leave_signals_to_the_main_thread

        # As hook threads do: signals sent to wrapagent are the main thread's (`--version` itself
        # starts with an empty mask: `child_process.start`).
        leave_signals_to_the_main_thread()
        try:
            self.found = find_version(self.executable, self.env, may_run=self.may_run, timeout=self.timeout,
                                      runner=self.runner, before_run=lambda: not self.ending.wait(self.delay))
        except Exception as exc:  # never the session's problem
            self.found = {"version": None, "source": None, "error": repr(exc)}

    def result(self, wait: float = END_WAIT_SECS) -> str | None:
        """The version, or None; waits at most `wait` seconds (plus the kill), never longer.

        A lookup still in its delay does not start `--version` now: the
        user would wait for it; a later, longer session fills the cache.
        """
        self.ending.set()
        self.thread.join(wait)
        if self.thread.is_alive():
            self.runner.kill()
            self.thread.join(0.2)
        found = self.found
        return found.get("version") if found else None


def start_lookup(executable: str, env: Mapping[str, str], tool: str) -> Lookup | None:
    """The lookup for a session's tool, started; None when it could not start (never raises)."""
    try:
        from wrapagent.inject.adapters import KNOWN_TOOLS

        return Lookup(executable, env, may_run=tool in KNOWN_TOOLS).start()
    except Exception:
        return None
