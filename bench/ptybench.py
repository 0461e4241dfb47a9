#!/usr/bin/env python3
"""ptybench: wrapagent's PTY proxy against util-linux `script` and no proxy at all.

The benchmark *is* the terminal: every program under test is started as the
session leader of a fresh outer PTY whose master this process holds, so a proxy
sees a real terminal on fds 0/1/2 (raw mode, SIGWINCH, ^C and all), exactly as
it would under a terminal emulator. Proxies are run interleaved (A B C A B C …)
within one run and figures are reported as medians over rounds plus ratios
against `script` from the same rounds, because the machine is shared and
absolute numbers move by ±50 % (see shared/PERF.md for the method).

Run `python bench/ptybench.py --help`; `bench/README.md` says how to read it.
This is a measurement, not a test: it never fails on a missed target.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import random
import select
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import sysconfig
import tempfile
import termios
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

BENCH_DIR: Final = Path(__file__).resolve().parent
RESULTS_DIR: Final = BENCH_DIR / "results"
READ_SIZE: Final = 64 * 1024  # PTY reads return <= 4 KiB; 64 KiB just never truncates
CLK_TCK: Final = os.sysconf("SC_CLK_TCK")
ROWS: Final = 24
COLS: Final = 80
KEYS: Final = b"abcdefghijklmnopqrstuvwxyz0123456789"
RUN_TIMEOUT_S: Final = 120.0
BASELINES: Final = ("direct", "script")

Record = dict[str, Any]


# ---------------------------------------------------------------------------
# Proxies under test
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    """A way of running a command on the terminal: `wrap` turns argv into the launch argv.

    `env` is added to the bench's environment and `cwd` is where it starts
    (the full-mode row runs in a folder that is not a git project, with its
    own XDG directories so the session records it makes stay in the bench's
    temporary folder).
    """

    name: str
    wrap: Callable[[Sequence[str]], list[str]]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def launch(self, argv: Sequence[str], env: Mapping[str, str], **kw: Any) -> OuterPty:
        """An OuterPty running `argv` through this proxy."""
        return OuterPty(self.wrap(argv), {**env, **self.env}, cwd=self.cwd, **kw)


def direct_proxy() -> Proxy:
    """No proxy: the child itself is the session leader of the outer PTY (the floor)."""
    return Proxy("direct", list)


def script_proxy() -> Proxy:
    """util-linux `script`, the C reference; it runs the command through $SHELL -c."""
    return Proxy("script", lambda argv: ["script", "-q", "-e", "-c", shlex.join(argv), "/dev/null"])


def wrapagent_proxy(prefix: Sequence[str]) -> Proxy:
    """wrapagent's bare proxy mode: no hooks, no injection, no session record."""
    return Proxy("wrapagent", lambda argv: [*prefix, "--no-hooks", *argv])


def wrapagent_full_proxy(prefix: Sequence[str], home: Path) -> Proxy:
    """wrapagent in full mode with the default configuration (no config file).

    Record created, pre_run/post_run, record saved and committed into the
    sessions repository at exit. Run in `home/project`, a folder that is not
    a git project, with XDG_* under `home`: the records stay out of the
    user's own state directory. The sessions repository is created by the
    probe run, so the measured runs commit into an existing one, as every
    session but a project's first does.
    """
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    env = {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "STATE", "DATA", "CACHE")}
    return Proxy("wrapagent-full", lambda argv: [*prefix, *argv], env=env, cwd=str(project))


def wrapagent_rec_proxy(prefix: Sequence[str], home: Path) -> Proxy:
    """Full mode with the session recorded and no size cap (`[record] max_bytes = 0`).

    Every byte of the payload goes through the recorder's queue and its
    writer thread: the recording's worst case. The default cap would stop
    the recording after 64 MiB and measure the proxy alone from there.
    """
    proxy = wrapagent_full_proxy(prefix, home)
    config = home / "config" / "wrapagent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text("[record]\nmax_bytes = 0\n")
    return Proxy("wrapagent-rec", proxy.wrap, env=proxy.env, cwd=proxy.cwd)


ALL_ON_CONFIG: Final = """\
[agents]
programs = ["cat"]

[record]
max_bytes = 0

[stop_check]
command = "true"

[send]
enabled = true

[[prompt_guard]]
name = "branch"
command = "echo Do not commit on main."
"""
"""Everything that watches the output on: `cat` named an agent (so the screen is read for its
composer and followed for turns), the stop check and `[send]` (the screen followed all session
long), a prompt guard, and the recording with no size cap."""


def wrapagent_all_proxy(prefix: Sequence[str], home: Path) -> Proxy:
    """Full mode with everything that reads the output on (`ALL_ON_CONFIG`): issue 31's
    "output with everything on" (recording, the screen follower, guards)."""
    proxy = wrapagent_full_proxy(prefix, home)
    config = home / "config" / "wrapagent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text(ALL_ON_CONFIG)
    return Proxy("wrapagent-all", proxy.wrap, env=proxy.env, cwd=proxy.cwd)


def wrapagent_norec_proxy(prefix: Sequence[str], home: Path) -> Proxy:
    """Full mode with `[record] enabled = false`: what the session costs without its recording."""
    proxy = wrapagent_full_proxy(prefix, home)
    config = home / "config" / "wrapagent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text("[record]\nenabled = false\n")
    return Proxy("wrapagent-norec", proxy.wrap, env=proxy.env, cwd=proxy.cwd)


def python_of(cmd: Sequence[str]) -> str:
    """The interpreter a wrapagent launcher runs: `python -m wrapagent`, or its console script's #!."""
    if len(cmd) >= 3 and cmd[1] == "-m":
        return cmd[0]
    try:
        with open(cmd[0], "rb") as f:
            first = f.readline()
    except OSError:
        return sys.executable
    if first.startswith(b"#!") and len(first.split()) == 1:
        return first[2:].strip().decode()
    return sys.executable


def steady_proxy(python: str) -> Proxy:
    """wrapagent's loop with an interceptor attached in its light steady state (bench/steady_proxy.py).

    Full mode's steady state: what every output chunk costs once the first
    message went in (a timestamp) and every input chunk (the key tokenizer).
    """
    script = str(BENCH_DIR / "steady_proxy.py")
    return Proxy("wrapagent-steady", lambda argv: [python, script, "light", *argv])


def pyexec_proxy(python: str) -> Proxy:
    """The start-up floor of any Python launcher: wrapagent's interpreter, which only execs the command."""
    code = "import os, sys; os.execvp(sys.argv[1], sys.argv[1:])"
    return Proxy("pyexec", lambda argv: [python, "-c", code, *argv])


def extra_proxy(spec: str) -> Proxy:
    """`NAME=CMD`: any other launcher, run as `CMD… argv…` (e.g. a prototype loop to compare)."""
    name, _, cmd = spec.partition("=")
    prefix = shlex.split(cmd)
    if not name or not prefix or name in ALL_PROXIES:
        raise ValueError(f"--extra wants NAME=CMD with a new NAME, got {spec!r}")
    return Proxy(name, lambda argv: [*prefix, *argv])


def default_wrapagent_cmd() -> list[str]:
    """The `wrapagent` console script of *this* interpreter, else on PATH, else `-m`.

    A version-manager shim (pyenv's `shims/wrapagent` is a bash script that runs
    `pyenv exec`) would add its own start-up to every figure, so shims are skipped.
    """
    own = Path(sysconfig.get_path("scripts")) / "wrapagent"
    if own.is_file() and os.access(own, os.X_OK):
        return [str(own)]
    found = shutil.which("wrapagent")
    if found and "/shims/" not in found:
        return [found]
    return [sys.executable, "-m", "wrapagent"]


def child_env() -> dict[str, str]:
    """The environment every program under test gets.

    SHELL=/bin/sh because `script` runs its command through $SHELL and an
    interactive user's bash/zsh would add its own start-up to `script` only.
    WRAPAGENT_* is dropped so a benchmark started from inside wrapagent does not
    trip its nesting guard.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRAPAGENT_")}
    env["SHELL"] = "/bin/sh"
    env.setdefault("TERM", "xterm-256color")
    return env


# ---------------------------------------------------------------------------
# The outer terminal
# ---------------------------------------------------------------------------


def set_winsize(fd: int, rows: int, cols: int) -> None:
    """TIOCSWINSZ; on a master it sets the slave's size and signals its foreground group."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def exit_code(status: int) -> int:
    """Shell convention: the exit status, or 128+N for death by signal N."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def proc_cpu_seconds(pid: int) -> float:
    """utime+stime of `pid` alone (all its threads, none of its children), from /proc.

    Also valid for a zombie, which is why `OuterPty` reads it between
    `waitid(WNOWAIT)` and the real reap: `wait4`'s rusage would add every child
    the proxy reaped (the tool itself), which is the *tree* figure.
    """
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_ctx_switches(pid: int) -> int:
    """Voluntary + involuntary context switches over all threads of `pid`: its wake-ups."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if "ctxt_switches:" in line:  # voluntary_… and nonvoluntary_…
                total += int(line.split()[1])
    return total


@dataclass(frozen=True)
class ExitInfo:
    """How the session leader ended, and what it cost."""

    code: int  # 128+N for a signal
    exited_at: float  # perf_counter() when its pidfd fired
    cpu_self: float  # the leader alone (the proxy), seconds
    cpu_tree: float  # the leader plus every child it reaped, seconds


def _exec_child(slave: int, argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> NoReturn:
    """In the forked child: become session leader with the slave as controlling tty, exec."""
    try:
        os.login_tty(slave)  # setsid + TIOCSCTTY + dup2 onto 0/1/2
        if cwd is not None:
            os.chdir(cwd)
        # Python ignores SIGPIPE/SIGXFSZ and ignored dispositions survive exec.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        os.execvpe(argv[0], list(argv), dict(env))
    except BaseException as exc:  # noqa: BLE001 - nothing may escape a forked child
        try:
            os.write(2, f"ptybench: cannot run {argv[0]}: {exc}\r\n".encode())
        finally:
            os._exit(127)


class OuterPty:
    """A fresh terminal with one program as its session leader; we hold the master.

    Output is drained until the master reads EIO (every slave fd closed), never
    until the process exits, so a proxy's late bytes are counted, not raced.
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        size: tuple[int, int] = (ROWS, COLS),
        capture: bool = True,
        hasher: Any = None,
        cwd: str | None = None,
    ) -> None:
        master, slave = os.openpty()
        set_winsize(slave, *size)
        self.termios_before = termios.tcgetattr(slave)
        self.launched = time.perf_counter()
        self.pid = os.fork()
        if self.pid == 0:
            _exec_child(slave, argv, env, cwd)
        os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        self.pidfd = os.pidfd_open(self.pid)
        self.capture = capture
        self.hasher = hasher
        self.output = bytearray()
        self.received = 0
        self.first_byte_at: float | None = None
        self.last_byte_at: float | None = None
        self.eof = False
        self.exit: ExitInfo | None = None
        self._buf = bytearray(READ_SIZE)
        self._poller = select.poll()
        self._poller.register(master, select.POLLIN)
        self._poller.register(self.pidfd, select.POLLIN)

    def __enter__(self) -> OuterPty:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------

    def _read_available(self) -> None:
        """Read until EAGAIN; EIO on a PTY master means every slave fd is closed (EOF)."""
        view = memoryview(self._buf)
        while True:
            try:
                n = os.readv(self.master, [self._buf])
            except BlockingIOError:
                return
            except OSError:  # EIO
                n = 0
            if n == 0:
                self.eof = True
                self._poller.unregister(self.master)
                return
            now = time.perf_counter()
            if self.first_byte_at is None:
                self.first_byte_at = now
            self.last_byte_at = now
            self.received += n
            if self.hasher is not None:
                self.hasher.update(view[:n])
            if self.capture:
                self.output += view[:n]

    def _reap(self) -> None:
        """Collect the leader's own CPU from its zombie, then reap it for the tree rusage."""
        exited_at = time.perf_counter()
        self._poller.unregister(self.pidfd)
        os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        cpu_self = proc_cpu_seconds(self.pid)
        _, status, usage = os.wait4(self.pid, 0)
        self.exit = ExitInfo(exit_code(status), exited_at, cpu_self, usage.ru_utime + usage.ru_stime)

    def pump(self, until: Callable[[], bool], timeout: float) -> None:
        """Serve the master and the pidfd until `until()` holds; TimeoutError after `timeout`."""
        deadline = time.perf_counter() + timeout
        while not until():
            if self.eof and self.exit is not None:
                raise TimeoutError("session over before the awaited condition")
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no result within {timeout:.1f}s")
            for fd, _ in self._poller.poll(remaining * 1000):
                if fd == self.master:
                    self._read_available()
                else:
                    self._reap()

    def read_until(self, marker: bytes, timeout: float = 10.0) -> float:
        """Wait for `marker` in the captured output; return when it was seen (perf_counter)."""
        self.pump(lambda: marker in self.output, timeout)
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        """Keep serving the terminal for `seconds` (a real terminal never stops reading)."""
        with contextlib.suppress(TimeoutError):  # the normal way out, or the session ended early
            self.pump(lambda: False, seconds)

    def finish(self, timeout: float = 30.0) -> ExitInfo:
        """Drain to EOF and reap the leader."""
        self.pump(lambda: self.eof and self.exit is not None, timeout)
        assert self.exit is not None
        return self.exit

    # -- driving -----------------------------------------------------------

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, rows: int, cols: int) -> None:
        set_winsize(self.master, rows, cols)

    def termios_restored(self) -> bool:
        """TCGETS on a master reports the slave's termios: compare with before launch."""
        return termios.tcgetattr(self.master) == self.termios_before

    def close(self) -> None:
        """Kill the leader if still alive (a broken proxy must not hang the run), close fds."""
        if self.exit is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                self._reap()
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.pidfd)
        os.close(self.master)


# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """The base64 file `cat` prints, and what a terminal must receive for it (ONLCR)."""

    path: Path
    size: int
    expected_len: int
    expected_sha256: str


def make_payload(size_mb: int) -> Payload:
    """Create (once, cached in the temp dir) a deterministic base64 file of ~size_mb MB."""
    directory = Path(tempfile.gettempdir()) / "wrapagent-ptybench"
    directory.mkdir(exist_ok=True)
    path = directory / f"payload-{size_mb}mb.b64"
    line_bytes = 77  # base64.encodebytes: 76 characters + "\n"
    lines = size_mb * 1_000_000 // line_bytes
    if not path.exists() or path.stat().st_size != lines * line_bytes:
        rng = random.Random(size_mb)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            for start in range(0, lines, 16384):
                f.write(base64.encodebytes(rng.randbytes(57 * min(16384, lines - start))))
        tmp.replace(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk.replace(b"\n", b"\r\n"))
    return Payload(path, lines * line_bytes, lines * (line_bytes + 1), digest.hexdigest())


def fixed_cpu(proxy: Proxy, env: Mapping[str, str]) -> float:
    """The leader's CPU for `true`: start-up and exit, which no byte pays for."""
    with proxy.launch(["true"], env) as term:
        return term.finish().cpu_self


SYNC_BEFORE_THROUGHPUT = True
"""`os.sync()` before each throughput run (`--no-sync`: off)."""


def run_throughput(proxy: Proxy, payload: Payload, env: Mapping[str, str]) -> Record:
    """`cat` the payload; MB/s from first to last byte at the master, hash, proxy CPU.

    CPU per byte is also given net of the proxy's fixed cost (`true` run right
    after): a Python proxy's ~0.1 s of interpreter start-up would otherwise be
    charged to the bytes, and the smaller the payload the more it would weigh.
    """
    hasher = hashlib.sha256()
    if SYNC_BEFORE_THROUGHPUT:
        # What earlier runs wrote goes to disk first, untimed: a recorded run writes hundreds of
        # MB (spool, asciicast, gzip), and the kernel's writeback of it slowed whichever run came
        # next (a round at 0.36x, gone with the sync: bench/README.md).
        os.sync()
    with proxy.launch(["cat", str(payload.path)], env, capture=False, hasher=hasher) as term:
        info = term.finish(RUN_TIMEOUT_S)
        assert term.first_byte_at is not None and term.last_byte_at is not None
        seconds = term.last_byte_at - term.first_byte_at
        fixed = fixed_cpu(proxy, env)
        return {
            "mb_per_s": term.received / 1e6 / seconds,
            "seconds": seconds,
            "received": term.received,
            "bytes_lost": max(0, payload.expected_len - term.received),
            "intact": term.received == payload.expected_len
            and hasher.hexdigest() == payload.expected_sha256,
            "cpu_self": info.cpu_self,
            "cpu_tree": info.cpu_tree,
            "cpu_ns_per_byte": info.cpu_self / payload.size * 1e9,
            "cpu_fixed": fixed,
            "cpu_net_ns_per_byte": max(0.0, info.cpu_self - fixed) / payload.size * 1e9,
            "exit": info.code,
        }


def keystroke(term: OuterPty, poller: select.poll, key: int, timeout: float = 5.0) -> float:
    """Write one byte to the master and wait until it is echoed back; µs.

    A tight path of its own (not `pump`) so that the benchmark's overhead per
    keystroke stays small and identical for every proxy.
    """
    start = time.perf_counter_ns()
    os.write(term.master, bytes((key,)))
    while True:
        if not poller.poll(timeout * 1000):
            raise TimeoutError(f"no echo for {bytes((key,))!r}")
        if key in os.read(term.master, 4096):
            return (time.perf_counter_ns() - start) / 1000


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: honest for the tail, no interpolation."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def echo_terminals(stack: contextlib.ExitStack, proxies: Sequence[Proxy], count: int,
                   env: Mapping[str, str]) -> tuple[dict[str, OuterPty], dict[str, select.poll]]:
    """Every proxy up on a raw child that echoes `count` bytes (`dd bs=1`), ready; a poller per master."""
    child = ["sh", "-c", f"stty raw -echo; printf R; exec dd bs=1 count={count} 2>/dev/null"]
    terms = {p.name: stack.enter_context(p.launch(child, env)) for p in proxies}
    pollers: dict[str, select.poll] = {}
    for name, term in terms.items():
        term.read_until(b"R")
        pollers[name] = select.poll()
        pollers[name].register(term.master, select.POLLIN)
    return terms, pollers


def run_latency(proxies: Sequence[Proxy], n: int, env: Mapping[str, str]) -> dict[str, Record]:
    """A raw-mode child that echoes every byte it reads (`dd bs=1`); p50/p99 round trip.

    All proxies are up at once and the keystrokes go round-robin, A B C A B C:
    an idle proxy sleeps in its poll and costs nothing, and each proxy's i-th
    keystroke meets the same moment of the machine's load as the others'.
    Run one after the other, a burst of someone's test suite lands on one
    proxy's 2000 keystrokes only and swings the comparison. It also keeps no
    proxy's code hot in the cache between its keystrokes, which is closer to a
    human typing than 2000 back-to-back bytes are.
    """
    with contextlib.ExitStack() as stack:
        terms, pollers = echo_terminals(stack, proxies, n, env)
        samples: dict[str, list[float]] = {name: [] for name in terms}
        for i in range(n):
            key = KEYS[i % len(KEYS)]
            for name, term in terms.items():
                samples[name].append(keystroke(term, pollers[name], key))
        return {
            name: {
                "p50_us": percentile(samples[name], 50),
                "p99_us": percentile(samples[name], 99),
                "mean_us": statistics.fmean(samples[name]),
                "exit": term.finish().code,
            }
            for name, term in terms.items()
        }


def run_first_byte(proxy: Proxy, env: Mapping[str, str]) -> float:
    """Launch → the child's first byte at the master, ms (child: `printf x; sleep 0.1`)."""
    with proxy.launch(["sh", "-c", "printf x; sleep 0.1"], env) as term:
        seen = term.read_until(b"x")
        term.finish()
        return (seen - term.launched) * 1000


def run_true(proxy: Proxy, env: Mapping[str, str]) -> float:
    """Launch → the leader has exited, ms (child: `true`)."""
    with proxy.launch(["true"], env) as term:
        info = term.finish()
        return (info.exited_at - term.launched) * 1000


def run_exit(proxy: Proxy, env: Mapping[str, str]) -> float:
    """The child's only byte → the leader has exited, ms (child: `printf x`, which exits at once).

    What a proxy does after its child is gone: drain, reap, restore the
    terminal and, in full mode, save the record and commit it.
    """
    with proxy.launch(["printf", "x"], env) as term:
        term.read_until(b"x")
        assert term.first_byte_at is not None
        info = term.finish()
        return (info.exited_at - term.first_byte_at) * 1000


def run_startup(proxy: Proxy, env: Mapping[str, str]) -> Record:
    return {"first_byte_ms": run_first_byte(proxy, env), "true_exit_ms": run_true(proxy, env),
            "exit_ms": run_exit(proxy, env)}


PYTHON_FLOORS: Final = {
    "(python: write x, exit)": [sys.executable, "-c", "import os; os.write(1, b'x')"],
    "(python -S: write x, exit)": [sys.executable, "-S", "-c", "import os; os.write(1, b'x')"],
}
"""Reference rows for start-up: no Python proxy can print before its interpreter has
started, and `-S` shows what this machine's site-packages `.pth` files add to that."""


def run_floor(argv: Sequence[str], env: Mapping[str, str]) -> Record:
    """Launch → first byte and → exit of a bare interpreter (no child at all)."""
    with OuterPty(argv, env) as term:
        seen = term.read_until(b"x")
        info = term.finish()
        return {"first_byte_ms": (seen - term.launched) * 1000, "true_exit_ms": (info.exited_at - term.launched) * 1000,
                "exit_ms": (info.exited_at - seen) * 1000}


def run_idle(proxy: Proxy, seconds: float, env: Mapping[str, str]) -> Record:
    """`sleep N`: the leader's CPU % and wake-ups/s, from 1 s after launch (start-up excluded)."""
    with proxy.launch(["sleep", str(seconds)], env) as term:
        term.sleep(1.0)
        t0, cpu0, ctx0 = time.perf_counter(), proc_cpu_seconds(term.pid), proc_ctx_switches(term.pid)
        term.sleep(seconds - 1.5)
        t1, cpu1, ctx1 = time.perf_counter(), proc_cpu_seconds(term.pid), proc_ctx_switches(term.pid)
        term.finish()
        return {
            "cpu_percent": (cpu1 - cpu0) / (t1 - t0) * 100,
            "wakeups_per_s": (ctx1 - ctx0) / (t1 - t0),
            "window_s": t1 - t0,
        }


# ---------------------------------------------------------------------------
# Correctness cases: each returns (passed, detail) plus whether termios came back
# ---------------------------------------------------------------------------


@dataclass
class CaseResult:
    passed: bool
    detail: str
    termios_restored: bool = True


def _finished(term: OuterPty, timeout: float = 10.0) -> ExitInfo:
    return term.finish(timeout)


def case_every_byte(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """`seq 1 200000`: every byte arrives, nothing added."""
    expected = b"".join(b"%d\r\n" % i for i in range(1, 200001))
    with proxy.launch(["seq", "1", "200000"], env) as term:
        info = _finished(term)
        got = bytes(term.output)
        if got == expected and info.code == 0:
            return CaseResult(True, "", term.termios_restored())
        lost = len(expected) - len(got)
        what = f"{lost} bytes lost" if lost > 0 else f"{-lost} bytes extra" if lost < 0 else "bytes differ"
        return CaseResult(False, f"{what}, exit {info.code}", term.termios_restored())


def case_tail(proxy: Proxy, env: Mapping[str, str], runs: int) -> CaseResult:
    """`printf tail`, which exits at once: the output must outrun the exit, every time."""
    lost, restored = 0, True
    for _ in range(runs):
        with proxy.launch(["printf", "tail"], env) as term:
            info = _finished(term)
            lost += bytes(term.output) != b"tail" or info.code != 0
            restored &= term.termios_restored()
    return CaseResult(lost == 0, f"lost in {lost}/{runs} runs" if lost else f"{runs}/{runs}", restored)


def case_exit_code(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """`exit 7` comes back as 7."""
    with proxy.launch(["sh", "-c", "exit 7"], env) as term:
        info = _finished(term)
        return CaseResult(info.code == 7, f"exit {info.code}", term.termios_restored())


def case_child_sigterm(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """The child kills itself with SIGTERM: 143, like a shell reports it."""
    with proxy.launch(["sh", "-c", "kill -TERM $$"], env) as term:
        info = _finished(term)
        return CaseResult(info.code == 143, f"exit {info.code}", term.termios_restored())


def case_ctrl_c(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """^C typed at the terminal reaches the child's tty as SIGINT: `sleep 10` ends with 130."""
    with proxy.launch(["sh", "-c", "printf R; exec sleep 10"], env) as term:
        term.read_until(b"R")
        term.sleep(0.05)  # let `exec sleep` happen
        term.write(b"\x03")
        info = _finished(term, 8.0)
        return CaseResult(info.code == 130, f"exit {info.code}", term.termios_restored())


def case_proxy_sigterm(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """SIGTERM to the leader: it must exit 143 and the child must get a signal too.

    The child writes the signal it saw to a file, because its output may
    legitimately go nowhere once the proxy is gone.
    """
    with tempfile.TemporaryDirectory() as tmp:
        mark = Path(tmp) / "seen"
        script = (
            f'trap "echo TERM >> {mark}; exit 143" TERM; trap "echo HUP >> {mark}; exit 129" HUP; '
            "printf R; while :; do sleep 0.05; done"
        )
        with proxy.launch(["sh", "-c", script], env) as term:
            term.read_until(b"R")
            term.sleep(0.05)
            os.kill(term.pid, signal.SIGTERM)
            info = _finished(term)
            deadline = time.perf_counter() + 2
            while not mark.exists() and time.perf_counter() < deadline:
                time.sleep(0.02)
            seen = mark.read_text().split() if mark.exists() else []
            child = "+".join(seen) or "nothing"
            return CaseResult(
                info.code == 143 and bool(seen),
                f"exit {info.code}, child got {child}",
                term.termios_restored(),
            )


RESIZE_CHILD: Final = """
import os, signal, sys, time
def say(tag):
    size = os.get_terminal_size(0)
    sys.stdout.write(f"{tag} {size.lines}x{size.columns}\\n"); sys.stdout.flush()
def on_winch(*_):
    say("W"); sys.exit(0)
signal.signal(signal.SIGWINCH, on_winch)
say("R")
time.sleep(5); sys.exit(3)
"""


def case_resize(proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """The child starts with the terminal's size and sees a resize of the outer PTY."""
    with proxy.launch([sys.executable, "-c", RESIZE_CHILD], env) as term:
        term.read_until(b"\n")
        initial = bytes(term.output).split(b"R ", 1)[-1].split()[0].decode()
        term.resize(40, 100)
        try:
            term.read_until(b"W ", 3.0)
            term.read_until(b"\n", 1.0)
        except TimeoutError:
            pass
        info = _finished(term)
        after = bytes(term.output).split(b"W ", 1)[1].split()[0].decode() if b"W " in term.output else "none"
        ok = initial == f"{ROWS}x{COLS}" and after == "40x100" and info.code == 0
        return CaseResult(ok, f"start {initial}, after resize {after}", term.termios_restored())


def correctness_cases(tail_runs: int) -> dict[str, Callable[[Proxy, Mapping[str, str]], CaseResult]]:
    return {
        "seq 1 200000: every byte": case_every_byte,
        "printf tail + instant exit": lambda p, e: case_tail(p, e, tail_runs),
        "exit 7 → 7": case_exit_code,
        "child killed by SIGTERM → 143": case_child_sigterm,
        "^C to `sleep 10` → 130": case_ctrl_c,
        "SIGTERM to proxy → 143, child signalled": case_proxy_sigterm,
        "resize (start size, SIGWINCH)": case_resize,
    }


def run_case(case: Callable[[Proxy, Mapping[str, str]], CaseResult], proxy: Proxy, env: Mapping[str, str]) -> CaseResult:
    """A case that hangs or crashes is a failure with its reason, not a dead benchmark."""
    try:
        return case(proxy, env)
    except (TimeoutError, OSError, IndexError, ValueError) as exc:
        return CaseResult(False, f"{type(exc).__name__}: {exc}", True)


# ---------------------------------------------------------------------------
# Orchestration
# ---------------------------------------------------------------------------


@dataclass
class Options:
    size_mb: int
    rounds: int
    keystrokes: int
    startup_n: int
    idle_s: float
    tail_runs: int
    tests: list[str]
    proxies: list[str]
    wrapagent_cmd: list[str]
    skip_probe: bool = False
    extras: list[str] = field(default_factory=list)


@dataclass
class Results:
    options: Options
    proxies: list[str]
    records: dict[str, list[Record]] = field(default_factory=dict)
    correctness: dict[str, dict[str, CaseResult]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def log(message: str) -> None:
    print(f"[ptybench] {message}", file=sys.stderr, flush=True)


def probe_wrapagent(proxy: Proxy, env: Mapping[str, str]) -> str | None:
    """None if `true` exits 0 and `seq 1 5` prints 1..5 through the proxy, else why not."""
    try:
        with proxy.launch(["true"], env) as term:
            code = term.finish(15).code
            if code != 0:
                return f"`{shlex.join(proxy.wrap(['true']))}` exited {code}: {bytes(term.output)[-300:]!r}"
        with proxy.launch(["seq", "1", "5"], env) as term:
            term.finish(15)
            if bytes(term.output) != b"1\r\n2\r\n3\r\n4\r\n5\r\n":
                return f"`seq 1 5` printed {bytes(term.output)[-300:]!r}"
    except (TimeoutError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def interleaved(rounds: int, proxies: Sequence[Proxy]) -> Iterator[tuple[int, Proxy]]:
    """A B C A B C …: every proxy sees the same slice of machine noise in each round."""
    for r in range(rounds):
        for proxy in proxies:
            yield r, proxy


def attempt(results: Results, test: str, proxy: str, run: Callable[[], Record]) -> Record | None:
    """One measured run; a proxy that hangs or breaks costs its record, not the whole benchmark."""
    try:
        return run()
    except (TimeoutError, OSError, AssertionError) as exc:
        results.notes.append(f"{test}: a {proxy} run failed: {type(exc).__name__}: {exc}")
        log(results.notes[-1])
        return None


def measure_rounds(
    test: str, opts: Options, proxies: Sequence[Proxy], results: Results, *,
    run: Callable[[Proxy], Record], describe: Callable[[Record], str],
) -> None:
    """The A B C A B C … schedule shared by throughput, latency and idle."""
    records = results.records.setdefault(test, [])
    for r, proxy in interleaved(opts.rounds, proxies):
        rec = attempt(results, test, proxy.name, lambda: run(proxy))  # noqa: B023 - called at once
        if rec is not None:
            log(f"{test} r{r} {proxy.name}: {describe(rec)}")
            records.append({"round": r, "proxy": proxy.name, **rec})


def measure_latency(opts: Options, proxies: Sequence[Proxy], env: Mapping[str, str], results: Results) -> None:
    """One round = every proxy up at once, keystrokes round-robin (see `run_latency`)."""
    records = results.records.setdefault("latency", [])
    for r in range(opts.rounds):
        try:
            per_proxy = run_latency(proxies, opts.keystrokes, env)
        except (TimeoutError, OSError) as exc:
            # A proxy that stops echoing spoils the round for all: drop the round, say so.
            results.notes.append(f"latency: round {r} failed: {type(exc).__name__}: {exc}")
            log(results.notes[-1])
            continue
        for name, rec in per_proxy.items():
            log(f"latency r{r} {name}: p50 {rec['p50_us']:.0f} µs, p99 {rec['p99_us']:.0f} µs")
            records.append({"round": r, "proxy": name, **rec})


def measure_startup(opts: Options, proxies: Sequence[Proxy], env: Mapping[str, str], results: Results,
                    references: Sequence[Proxy] = ()) -> None:
    """Several launches per round (start-up is short and jittery), the interpreter floors alongside."""
    records = results.records.setdefault("startup", [])
    runs: list[tuple[str, Callable[[], Record]]] = [
        *((p.name, lambda p=p: run_startup(p, env)) for p in [*proxies, *references]),
        *((name, lambda argv=argv: run_floor(argv, env)) for name, argv in PYTHON_FLOORS.items()),
    ]
    for r in range(opts.rounds):
        for i in range(opts.startup_n):
            for name, run in runs:
                rec = attempt(results, "startup", name, run)
                if rec is not None:
                    records.append({"round": r, "i": i, "proxy": name, **rec})
        log(f"startup r{r} done")


def measure_correctness(opts: Options, proxies: Sequence[Proxy], env: Mapping[str, str], results: Results) -> None:
    for name, case in correctness_cases(opts.tail_runs).items():
        per = results.correctness[name] = {p.name: run_case(case, p, env) for p in proxies}
        log(f"correctness {name}: " + ", ".join(f"{p}={'ok' if c.passed else 'FAIL'}" for p, c in per.items()))


def measure(opts: Options, proxies: Sequence[Proxy], env: Mapping[str, str], results: Results,
            references: Sequence[Proxy] = ()) -> None:
    """Run each selected test in a fixed order, proxies interleaved within every round.

    `references` (pyexec) run in the start-up test only: they are floors, not proxies.
    """
    if "throughput" in opts.tests:
        log(f"throughput: preparing {opts.size_mb} MB payload")
        payload = make_payload(opts.size_mb)
        measure_rounds("throughput", opts, proxies, results, run=lambda p: run_throughput(p, payload, env),
                       describe=lambda r: f"{r['mb_per_s']:.1f} MB/s, CPU {r['cpu_self']:.2f} s")
    if "latency" in opts.tests:
        measure_latency(opts, proxies, env, results)
    if "startup" in opts.tests:
        measure_startup(opts, proxies, env, results, references)
    if "idle" in opts.tests:
        measure_rounds("idle", opts, proxies, results, run=lambda p: run_idle(p, opts.idle_s, env),
                       describe=lambda r: f"{r['cpu_percent']:.2f} % CPU, {r['wakeups_per_s']:.2f} wake-ups/s")
    if "correctness" in opts.tests:
        measure_correctness(opts, proxies, env, results)


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------


def by_round(records: Sequence[Record], metric: str) -> dict[str, dict[int, float]]:
    """proxy → round → the round's median of `metric` (several samples per round for startup)."""
    samples: dict[str, dict[int, list[float]]] = {}
    for rec in records:
        samples.setdefault(rec["proxy"], {}).setdefault(rec["round"], []).append(rec[metric])
    return {p: {r: statistics.median(v) for r, v in rounds.items()} for p, rounds in samples.items()}


def median_of(records: Sequence[Record], metric: str, proxy: str) -> float | None:
    """Median over rounds of the per-round medians; None if the proxy has no record."""
    rounds = by_round(records, metric).get(proxy)
    return statistics.median(rounds.values()) if rounds else None


def round_ratios(records: Sequence[Record], metric: str, proxy: str, base: str) -> list[float]:
    """proxy/base within each round (both measured under the same load)."""
    table = by_round(records, metric)
    if base not in table or proxy not in table:
        return []
    return [v / table[base][r] for r, v in table[proxy].items() if table[base].get(r)]


def ratio(records: Sequence[Record], metric: str, proxy: str, base: str) -> float | None:
    """Median over rounds of proxy/base within the same round: the noise-robust figure."""
    pairs = round_ratios(records, metric, proxy, base)
    return statistics.median(pairs) if pairs else None


def fmt_spread(records: Sequence[Record], metric: str, proxy: str, base: str) -> str:
    """The median ratio and, with several rounds, its lowest and highest: how far one round can be off."""
    pairs = round_ratios(records, metric, proxy, base)
    if not pairs:
        return "—"
    text = f"{statistics.median(pairs):.2f}"
    return text if len(pairs) < 2 else f"{text} ({min(pairs):.2f}–{max(pairs):.2f})"


def added(records: Sequence[Record], metric: str, proxy: str, base: str = "direct") -> float | None:
    """Median over rounds of proxy − base within the same round (latency a proxy adds)."""
    table = by_round(records, metric)
    if base not in table or proxy not in table:
        return None
    diffs = [v - table[base][r] for r, v in table[proxy].items() if r in table[base]]
    return statistics.median(diffs) if diffs else None


def fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def throughput_table(records: Sequence[Record], proxies: Sequence[str]) -> str:
    rows = []
    for p in proxies:
        mine = [r for r in records if r["proxy"] == p]
        proxied = p != "direct"  # direct's "proxy" is `cat` itself: only its tree figure means anything
        rows.append([
            p,
            fmt(median_of(records, "mb_per_s", p), ".1f"),
            fmt(ratio(records, "mb_per_s", p, "direct")),
            fmt_spread(records, "mb_per_s", p, "script"),
            fmt(median_of(records, "cpu_self", p) if proxied else None),
            fmt(median_of(records, "cpu_tree", p)),
            fmt(median_of(records, "cpu_ns_per_byte", p) if proxied else None, ".1f"),
            fmt(ratio(records, "cpu_ns_per_byte", p, "script") if proxied else None),
            fmt(median_of(records, "cpu_fixed", p) if proxied else None),
            fmt_spread(records, "cpu_net_ns_per_byte", p, "script") if proxied else "—",
            f"{sum(r['intact'] for r in mine)}/{len(mine)}",
            str(max((r["bytes_lost"] for r in mine), default="—")),
        ])
    return md_table(
        ["proxy", "MB/s", "×direct", "×script (rounds' range)", "proxy CPU s", "tree CPU s", "CPU ns/B",
         "CPU/B ×script", "fixed CPU s (`true`)", "net CPU/B ×script (rounds' range)", "intact", "max bytes lost"],
        rows,
    )


def latency_table(records: Sequence[Record], proxies: Sequence[str]) -> str:
    rows = []
    for p in proxies:
        rows.append([
            p,
            fmt(median_of(records, "p50_us", p), ".0f"),
            fmt(median_of(records, "p99_us", p), ".0f"),
            fmt(added(records, "p50_us", p), "+.0f"),
            fmt(added(records, "p99_us", p), "+.0f"),
            fmt(ratio(records, "p50_us", p, "script")),
        ])
    return md_table(["proxy", "p50 µs", "p99 µs", "p50 added vs direct µs", "p99 added µs", "p50 ×script"], rows)


def startup_table(records: Sequence[Record], proxies: Sequence[str]) -> str:
    rows = []
    for p in proxies:
        rows.append([
            p,
            fmt(median_of(records, "first_byte_ms", p), ".1f"),
            fmt(ratio(records, "first_byte_ms", p, "script")),
            fmt(added(records, "first_byte_ms", p), "+.1f"),
            fmt(added(records, "first_byte_ms", p, "pyexec"), "+.1f"),
            fmt(median_of(records, "true_exit_ms", p), ".1f"),
            fmt(ratio(records, "true_exit_ms", p, "script")),
            fmt(median_of(records, "exit_ms", p), ".1f"),
            fmt(added(records, "exit_ms", p), "+.1f"),
        ])
    return md_table(
        ["proxy", "launch→first byte ms", "×script", "added vs direct ms", "added vs pyexec ms",
         "`true` launch→exit ms", "×script", "child's byte→exit ms", "exit added vs direct ms"],
        rows,
    )


def idle_table(records: Sequence[Record], proxies: Sequence[str]) -> str:
    rows = [
        [p, fmt(median_of(records, "cpu_percent", p), ".2f"), fmt(median_of(records, "wakeups_per_s", p), ".2f"),
         fmt(max((r["wakeups_per_s"] for r in records if r["proxy"] == p), default=None), ".2f")]
        for p in proxies
    ]
    return md_table(["proxy", "CPU %", "wake-ups/s (median)", "wake-ups/s (max)"], rows)


def correctness_table(correctness: Mapping[str, Mapping[str, CaseResult]], proxies: Sequence[str]) -> str:
    def cell(c: CaseResult) -> str:
        return ("pass" if c.passed else "**FAIL**") + (f" ({c.detail})" if c.detail else "")

    rows = [[name] + [cell(per[p]) for p in proxies] for name, per in correctness.items()]
    restored = [
        "pass" if all(per[p].termios_restored for per in correctness.values()) else "**FAIL** ("
        + ", ".join(n for n, per in correctness.items() if not per[p].termios_restored) + ")"
        for p in proxies
    ]
    rows.append(["termios of the outer PTY restored (every case)"] + restored)
    return md_table(["case"] + list(proxies), rows)


@dataclass(frozen=True)
class Target:
    name: str
    value: str
    met: bool | None


def _verdict(value: float | None, ok: Callable[[float], bool]) -> bool | None:
    return None if value is None else ok(value)


def targets(results: Results, proxy: str) -> list[Target]:
    """The goals of issue 12 for one proxy: bare proxy and extras against `script`, the
    full-mode rows against the bare proxy and the `pyexec` floor."""
    rec = results.records
    out: list[Target] = []
    steady = proxy == "wrapagent-steady"
    full = proxy in ("wrapagent-full", "wrapagent-rec", "wrapagent-norec", "wrapagent-all")
    if "throughput" in rec and not full:
        t = rec["throughput"]
        lost = max((r["bytes_lost"] for r in t if r["proxy"] == proxy), default=None)
        # The steady state is held to the bare proxy (within 5 %), everything else to script.
        base, label, thr_min, cpu_max = (("wrapagent", "×bare wrapagent", 0.95, 1.05) if steady
                                         else ("script", "×script", 1.0, 1.0))
        thr = ratio(t, "mb_per_s", proxy, base)
        cpu = ratio(t, "cpu_ns_per_byte", proxy, base)
        net = ratio(t, "cpu_net_ns_per_byte", proxy, base)
        out.append(Target(f"throughput {label} ≥ {thr_min}", fmt(thr), _verdict(thr, lambda v: v >= thr_min)))
        out.append(Target(f"CPU per byte {label} ≤ {cpu_max}", fmt(cpu), _verdict(cpu, lambda v: v <= cpu_max)))
        out.append(Target(f"(same, net of start-up CPU) ≤ {cpu_max}", fmt(net),
                          _verdict(net, lambda v: v <= cpu_max)))
        out.append(Target("0 bytes lost (throughput)", fmt(lost, "d"), _verdict(lost, lambda v: v == 0)))
    if "throughput" in rec and proxy in ("wrapagent-rec", "wrapagent-all"):
        # Recording on (and everything else): at least 0.90x the two-thread Python floor
        # (`--extra py-threads=…`) of the same run.
        what = "recording on" if proxy == "wrapagent-rec" else "everything on"
        thr = ratio(rec["throughput"], "mb_per_s", proxy, "py-threads")
        out.append(Target(f"throughput ×py-threads ≥ 0.90 ({what})", fmt(thr),
                          _verdict(thr, lambda v: v >= 0.90)))
    if "latency" in rec and proxy == "wrapagent-rec":
        mine, base = added(rec["latency"], "p50_us", proxy), added(rec["latency"], "p50_us", "wrapagent")
        out.append(Target("keystroke p50 added (recording on) vs the bare proxy's",
                          f"{fmt(mine, '+.0f')} µs vs {fmt(base, '+.0f')} µs", None))
    if "latency" in rec and not full:
        mine, base = added(rec["latency"], "p50_us", proxy), added(rec["latency"], "p50_us", "script")
        ok = None if mine is None or base is None else mine <= base
        out.append(Target("keystroke p50 added ≤ script's", f"{fmt(mine, '+.0f')} µs vs {fmt(base, '+.0f')} µs", ok))
    if "startup" in rec and not steady:
        fb = added(rec["startup"], "first_byte_ms", proxy, "pyexec")
        limit = 25.0 if full else 5.0
        out.append(Target(f"first byte ≤ pyexec + {limit:g} ms", fmt(fb, "+.1f", " ms"),
                          _verdict(fb, lambda v: v <= limit)))
        ex = median_of(rec["startup"], "exit_ms", proxy)
        out.append(Target("child's exit → proxy's exit (reported)", fmt(ex, ".1f", " ms"), None))
    if "idle" in rec:
        wk = max((r["wakeups_per_s"] for r in rec["idle"] if r["proxy"] == proxy), default=None)
        out.append(Target("0 idle wake-ups/s", fmt(wk), _verdict(wk, lambda v: v == 0)))
    if results.correctness:
        failed = [n for n, per in results.correctness.items() if not per[proxy].passed]
        failed += ["termios"] if not all(per[proxy].termios_restored for per in results.correctness.values()) else []
        out.append(Target("correctness: every case passes", ", ".join(failed) or "all pass", not failed))
    return out


def report(results: Results, meta: Mapping[str, Any]) -> str:
    ps = results.proxies
    rec = results.records
    parts = [
        "# ptybench",
        "",
        f"{meta['date']} · {meta['machine']} · git {meta['git']} · rounds {results.options.rounds} "
        f"(interleaved {' '.join(ps)}), medians over rounds; ratios are per-round ratios' medians.",
        "",
        "Commands: " + "; ".join(f"`{p}`: `{c}`" for p, c in meta["commands"].items()),
        "",
    ]
    parts += [f"> {note}" for note in results.notes] + ([""] if results.notes else [])
    if "throughput" in rec:
        parts += [f"## Throughput: `cat` of a {results.options.size_mb} MB base64 file", "",
                  throughput_table(rec["throughput"], ps), ""]
    if "throughput" in rec:
        parts += recording_section(rec["throughput"], ps)
    if "latency" in rec:
        parts += [f"## Keystroke latency: 1 byte → its echo, {results.options.keystrokes} keystrokes/round", "",
                  latency_table(rec["latency"], ps), ""]
    if "startup" in rec:
        parts += [f"## Start-up: median of {results.options.startup_n} launches/round", "",
                  startup_table(rec["startup"], [*ps, "pyexec", *PYTHON_FLOORS]),
                  "", "`pyexec` is the floor of any Python launcher: wrapagent's own interpreter, "
                  "execing the command and nothing else. Rows in parentheses are references, not proxies: "
                  f"the bench's own interpreter (`{sys.executable}`) writing one byte and exiting, with and "
                  "without `site`. \"Child's byte→exit\": `printf x` as the child, from its byte at the "
                  "terminal to the proxy's exit (drain, reap, restore; in full mode the record saved and "
                  "committed).", ""]
    if "idle" in rec:
        parts += [f"## Idle: `sleep {results.options.idle_s:g}`, window from 1 s to end − 0.5 s", "",
                  idle_table(rec["idle"], ps), ""]
    if results.correctness:
        parts += ["## Correctness", "", correctness_table(results.correctness, ps), ""]
    for proxy in (p for p in ps if p not in BASELINES):
        if "script" not in ps:
            break
        rows = [[t.name, t.value, "—" if t.met is None else "met" if t.met else "**missed**"]
                for t in targets(results, proxy)]
        parts += [f"## Targets for {proxy}", "", md_table(["target", proxy, "verdict"], rows), ""]
    return "\n".join(parts)


RECORDING_FLOOR: Final = 0.90
"""With recording on, throughput at least this times the two-thread Python floor of the same run."""


def recording_section(records: Sequence[Record], ps: Sequence[str]) -> list[str]:
    """What the recording costs the copy, round by round: `wrapagent-rec` against the two-thread
    floor (`--extra py-threads=…`, the target) and against the same session without its recording."""
    if "wrapagent-rec" not in ps and "wrapagent-all" not in ps:
        return []
    rows = []
    for proxy, base in (("wrapagent-rec", "py-threads"), ("wrapagent-rec", "wrapagent-norec"),
                        ("wrapagent-all", "py-threads")):
        pairs = round_ratios(records, "mb_per_s", proxy, base)
        if pairs:
            met = sum(1 for v in pairs if v >= RECORDING_FLOOR)
            rows.append([f"{proxy} ×{base}", fmt_spread(records, "mb_per_s", proxy, base),
                         f"{met}/{len(pairs)}", " ".join(f"{v:.2f}" for v in pairs)])
    pairs = round_ratios(records, "mb_per_s", "wrapagent-norec", "py-threads")
    if pairs:
        rows.append(["wrapagent-norec ×py-threads", fmt_spread(records, "mb_per_s", "wrapagent-norec", "py-threads"),
                     "—", " ".join(f"{v:.2f}" for v in pairs)])
    if not rows:
        return []
    return ["## Recording on: throughput ratios within each round", "",
            md_table(["ratio", "median (rounds' range)", f"rounds ≥ {RECORDING_FLOOR:.2f}", "per round"], rows), "",
            f"Target: wrapagent-rec ×py-threads ≥ {RECORDING_FLOOR:.2f} (median of the per-round ratios). "
            "Add the floor with `--extra \"py-threads=PYTHON bench/loop_shapes.py threads\"`; run under "
            "`chrt -f 10` on a loaded machine.", ""]


def git_rev() -> str:
    try:
        out = subprocess.run(["git", "-C", str(BENCH_DIR), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def save(results: Results, meta: Mapping[str, Any], markdown: str) -> Path:
    """JSON with every raw record, next to the markdown; bench/results/ is git-ignored."""
    RESULTS_DIR.mkdir(exist_ok=True)
    stem = RESULTS_DIR / f"ptybench-{time.strftime('%Y%m%d-%H%M%S')}"
    data = {
        "meta": dict(meta),
        "options": vars(results.options),
        "notes": results.notes,
        "records": results.records,
        "correctness": {n: {p: vars(c) for p, c in per.items()} for n, per in results.correctness.items()},
    }
    stem.with_suffix(".json").write_text(json.dumps(data, indent=1))
    stem.with_suffix(".md").write_text(markdown + "\n")
    return stem.with_suffix(".json")


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

ALL_TESTS: Final = ("throughput", "latency", "startup", "idle", "correctness")
ALL_PROXIES: Final = ("direct", "script", "wrapagent", "wrapagent-full", "wrapagent-steady", "wrapagent-rec",
                              "wrapagent-norec", "wrapagent-all")
WRAPAGENT_ROWS: Final = ("wrapagent", "wrapagent-full", "wrapagent-steady", "wrapagent-rec", "wrapagent-norec",
                         "wrapagent-all")


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run, < 60 s: 10 MB, 1 round, small counts")
    parser.add_argument("--size-mb", type=int, default=200, help="throughput payload size (PERF.md used 200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of A B C for every test")
    parser.add_argument("--keystrokes", type=int, default=2000, help="keystrokes per latency round")
    parser.add_argument("--startup-n", type=int, default=10, help="launches per proxy per start-up round")
    parser.add_argument("--idle-s", type=float, default=5.0, help="length of the idle child (`sleep N`)")
    parser.add_argument("--tail-runs", type=int, default=20, help="repeats of the `printf tail` case")
    parser.add_argument("--tests", default=",".join(ALL_TESTS), help="comma-separated subset of " + ",".join(ALL_TESTS))
    parser.add_argument("--proxies", default=",".join(ALL_PROXIES), help="comma-separated subset of "
                        + ",".join(ALL_PROXIES))
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=CMD",
                        help="another proxy to run interleaved with the others, as `CMD… argv…` (repeatable)")
    parser.add_argument("--skip-probe", action="store_true",
                        help="measure wrapagent even if `--no-hooks true`/`seq 1 5` misbehave (e.g. under a profiler)")
    parser.add_argument("--no-sync", action="store_true",
                        help="no `sync` before each throughput run (an earlier run's writes may then slow a later one)")
    parser.add_argument("--wrapagent-cmd", default=None,
                        help="how to launch wrapagent (shell words; `--no-hooks CMD…` is appended); "
                             f"default: {shlex.join(default_wrapagent_cmd())}")
    args = parser.parse_args(argv)
    global SYNC_BEFORE_THROUGHPUT
    SYNC_BEFORE_THROUGHPUT = not args.no_sync
    if args.quick:
        args.size_mb, args.rounds, args.keystrokes, args.startup_n, args.idle_s, args.tail_runs = 10, 1, 300, 3, 2.5, 5
    tests = [t for t in args.tests.split(",") if t]
    proxies = [p for p in args.proxies.split(",") if p]
    for name, allowed in (("test", ALL_TESTS), ("proxy", ALL_PROXIES)):
        chosen = tests if name == "test" else proxies
        unknown = sorted(set(chosen) - set(allowed))
        if unknown:
            parser.error(f"unknown {name}: {', '.join(unknown)}")
    if args.idle_s < 2:
        parser.error("--idle-s must be at least 2 (1 s of start-up is excluded)")
    for spec in args.extra:
        try:
            extra_proxy(spec)
        except ValueError as exc:
            parser.error(str(exc))
    cmd = shlex.split(args.wrapagent_cmd) if args.wrapagent_cmd else default_wrapagent_cmd()
    return Options(args.size_mb, args.rounds, args.keystrokes, args.startup_n, args.idle_s, args.tail_runs,
                   tests, proxies, cmd, args.skip_probe, args.extra)


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    env = child_env()
    python = python_of(opts.wrapagent_cmd)
    home = Path(tempfile.mkdtemp(prefix="wrapagent-ptybench-"))  # the full-mode row's state, removed at the end
    candidates = {"direct": direct_proxy(), "script": script_proxy(), "wrapagent": wrapagent_proxy(opts.wrapagent_cmd),
                  "wrapagent-full": wrapagent_full_proxy(opts.wrapagent_cmd, home),
                  "wrapagent-steady": steady_proxy(python),
                  "wrapagent-rec": wrapagent_rec_proxy(opts.wrapagent_cmd, home / "rec"),
                  "wrapagent-norec": wrapagent_norec_proxy(opts.wrapagent_cmd, home / "norec"),
                  "wrapagent-all": wrapagent_all_proxy(opts.wrapagent_cmd, home / "all")}
    proxies = [candidates[name] for name in opts.proxies] + [extra_proxy(spec) for spec in opts.extras]
    results = Results(opts, [])
    for name in WRAPAGENT_ROWS:
        if name not in opts.proxies or opts.skip_probe:
            continue
        why = probe_wrapagent(candidates[name], env)
        if why:
            results.notes.append(f"{name} left out: {why}")
            log(results.notes[-1])
            proxies = [p for p in proxies if p.name != name]
    if "script" in opts.proxies and shutil.which("script") is None:
        results.notes.append("script left out: util-linux `script` is not on PATH")
        proxies = [p for p in proxies if p.name != "script"]
    results.proxies = [p.name for p in proxies]
    if not proxies:
        log("nothing left to measure")
        return 2
    started = time.perf_counter()
    try:
        measure(opts, proxies, env, results, [pyexec_proxy(python)])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": f"{platform.machine()} · {os.cpu_count()} CPUs · Linux {platform.release()} · "
                   f"Python {platform.python_version()} · load {os.getloadavg()[0]:.2f}",
        "git": git_rev(),
        "commands": {p.name: " ".join(p.wrap(["CMD"])) for p in [*proxies, pyexec_proxy(python)]},
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    markdown = report(results, meta)
    print(markdown)
    log(f"done in {meta['elapsed_s']} s; raw records: {save(results, meta, markdown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
