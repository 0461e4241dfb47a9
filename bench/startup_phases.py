"""Where a full-mode (or bare) start spends its time: phase times from launch to the first byte.

`startup_side.py` says how long the first byte takes; this says where the
time goes. Each install's interpreter runs wrapagent through this file in
`probe` mode, which wraps a few of wrapagent's functions by name (the
session leader's fork and its `posix_spawn` of the tool, the exec check,
the early recorder, the session folder, the output thread's start, its
first read and first write) and logs CLOCK_MONOTONIC times; the harness
(ptybench's terminal, `sh -c 'printf x; sleep 0.1'`) adds the launch and
the moment the byte reached the terminal. Rounds are interleaved across
installs; medians (p25) in ms after the launch.

    chrt -f 10 python bench/startup_phases.py --rounds 40 \\
        --install now=/tmp/branch-venv/bin/python --install before=/tmp/main-venv/bin/python

The wrapping costs a few microseconds per call and loads the wrapped
modules before `main` (so `imported_main` includes them): compare installs
with each other, and first-byte totals with `startup_side.py`. A
measurement, never a test; the names it wraps are wrapagent's internals.
"""

import os
import sys
import time

TYPE_CHECKING = False  # probe mode runs inside the measured start: nothing but os, sys, time up front
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

HERE = os.path.abspath(__file__)


def probe(log: str, argv: "Sequence[str]") -> None:  # runs inside the launched wrapagent
    """Wrap, run wrapagent with `argv`, write the phase times to `log` at the first write to fd 1."""
    times = [("main", time.monotonic_ns())]
    import _thread
    import importlib

    def mark(name: str) -> None:
        if not any(k == name for k, _ in times):
            times.append((name, time.monotonic_ns()))

    def wrap(module: str, attr: str, name: str) -> None:
        mod = importlib.import_module(module)
        inner = getattr(mod, attr)

        def wrapped(*args, **kwargs):
            mark(name)
            result = inner(*args, **kwargs)
            mark(name + "_end")
            return result
        setattr(mod, attr, wrapped)

    wrap("wrapagent.proxy.session_leader", "start", "fork")
    wrap("wrapagent.proxy.spawn", "_check_exec", "check_exec")
    wrap("wrapagent.session.lifecycle", "_spawn_first", "spawn_first")
    wrap("wrapagent.session.lifecycle", "_early_recorder", "early_recorder")
    wrap("wrapagent.paths", "make_session_dir", "session_dir")
    from wrapagent.proxy import session_leader

    spawn_tool = session_leader._spawn_tool

    def leader_spawn(*args, **kwargs):  # in the forked leader: its own file
        begun = time.monotonic_ns()
        result = spawn_tool(*args, **kwargs)
        with open(log + ".leader", "a") as f:
            f.write(f"leader_spawn {begun}\ntool_execd {time.monotonic_ns()}\n")
        return result
    session_leader._spawn_tool = leader_spawn
    start_thread = _thread.start_new_thread
    started = [0]

    def start_new_thread(function, args, kwargs=None):
        n = started[0]
        started[0] += 1
        mark(f"thread{n}_start")

        def run(*a, **k):
            mark(f"thread{n}_runs")
            return function(*a, **k)
        return start_thread(run, args, kwargs or {})
    _thread.start_new_thread = start_new_thread
    readv, write = os.readv, os.write

    def first_readv(fd, buffers):
        mark("first_read_call")
        n = readv(fd, buffers)
        mark("first_read")
        return n
    os.readv = first_readv

    def first_write(fd, data):
        if fd == 1 and not any(k == "first_write" for k, _ in times):
            mark("first_write")
            with open(log, "a") as f:
                f.write("".join(f"{k} {v}\n" for k, v in times))
        return write(fd, data)
    os.write = first_write
    sys.argv = ["wrapagent", *argv]
    from wrapagent.__main__ import entry

    mark("imported_main")
    entry()


def _round(python: str, mode: str, log: str, env: dict, cwd: str, pb: "Any") -> "dict[str, float]":
    args = [python, HERE, "probe", log, *(["--no-hooks"] if mode == "bare" else []),
            "sh", "-c", "printf x; sleep 0.1"]
    with pb.OuterPty(args, env, cwd=cwd) as term:
        seen = term.read_until(b"x")
        term.finish()
    events = {}
    for path in (log, log + ".leader"):
        if os.path.exists(path):
            for line in open(path):
                name, ns = line.split()
                events.setdefault(name, (int(ns) / 1e9 - term.launched) * 1000)
    events["seen"] = (seen - term.launched) * 1000  # perf_counter is CLOCK_MONOTONIC on Linux
    return events


def main(argv: "Sequence[str] | None" = None) -> int:
    import argparse
    import statistics
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--mode", choices=("full", "bare"), default="full")
    parser.add_argument("--install", action="append", required=True, metavar="NAME=PYTHON",
                        help="the interpreter of a venv wrapagent is installed in (non-editable), repeatable")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(HERE))
    import ptybench as pb

    installs = [tuple(spec.split("=", 1)) for spec in args.install]
    home = tempfile.mkdtemp(prefix="wrapagent-startup-phases-")
    project = os.path.join(home, "project")
    os.mkdir(project)
    env = pb.child_env()
    env.update({f"XDG_{kind}_HOME": os.path.join(home, kind.lower()) for kind in ("CONFIG", "STATE", "DATA", "CACHE")})
    res = {name: {} for name, _ in installs}
    for r in range(args.rounds + 1):  # round 0: the probe round (creates the sessions repository)
        for name, python in installs:
            events = _round(python, args.mode, os.path.join(home, f"log-{r}-{name}"), env, project, pb)
            if r:
                for phase, ms in events.items():
                    res[name].setdefault(phase, []).append(ms)
        print(f"round {r}/{args.rounds}", file=sys.stderr, end="\r")
    first = res[installs[0][0]]
    phases = sorted(first, key=lambda p: statistics.median(first[p]))
    print(f"{args.rounds} interleaved rounds, {args.mode} mode: ms after launch, median (p25)\n")
    print("| phase | " + " | ".join(name for name, _ in installs) + " |")
    print("|---|" + "---|" * len(installs))
    for phase in phases:
        cells = []
        for name, _ in installs:
            xs = res[name].get(phase, [])
            cells.append(f"{statistics.median(xs):.2f} ({statistics.quantiles(xs, n=4)[0]:.2f})" if len(xs) > 2
                         else "—")
        print(f"| {phase} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "probe":
        probe(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(main())
