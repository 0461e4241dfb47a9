#!/usr/bin/env python3
"""keycost: what one keystroke costs a proxy, in CPU and wake-ups, next to its latency.

`ptybench.py --tests latency` says how long a key takes to come back; this
says what the proxy spent on it: CPU µs per key (utime+stime of the proxy
process, all its threads, none of its children) and context switches per
key over all its threads (each sleeping thread a key wakes counts once).
Same terminal set-up as ptybench (each proxy is the session leader of an
outer PTY, the child `dd bs=1` echoes in raw mode) and the same round-robin
schedule: every proxy is up at once, keys go A B C A B C, so machine noise
lands on all of them alike and no proxy's code stays hot between its keys.

    python bench/keycost.py --keystrokes 3000 --rounds 3 \\
        --wrapagent-cmd /path/to/venv/bin/wrapagent --extra "proto=python -S proto.py"

CPU time comes from /proc in clock ticks (10 ms): use ≥ 2000 keystrokes.
This is a measurement, not a test: it never fails on a missed target.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ptybench as pb  # noqa: E402 - the bench folder is not a package


def run_round(proxies: list[pb.Proxy], n: int, env: dict[str, str]) -> dict[str, dict[str, float]]:
    """One round: every proxy up, `n` keys each, round-robin; cost per key and p50 per proxy."""
    # One key more than measured: the child (and the proxy's threads, which are
    # counted) must still be there when the figures are read after the last key.
    with contextlib.ExitStack() as stack:
        terms, pollers = pb.echo_terminals(stack, proxies, n + 1, env)
        before = {name: (pb.proc_cpu_seconds(t.pid), pb.proc_ctx_switches(t.pid)) for name, t in terms.items()}
        samples: dict[str, list[float]] = {name: [] for name in terms}
        for i in range(n):
            key = pb.KEYS[i % len(pb.KEYS)]
            for name, term in terms.items():
                samples[name].append(pb.keystroke(term, pollers[name], key))
        after = {name: (pb.proc_cpu_seconds(t.pid), pb.proc_ctx_switches(t.pid)) for name, t in terms.items()}
        for name, term in terms.items():
            pb.keystroke(term, pollers[name], pb.KEYS[0])  # the last one: the child ends
            term.finish()
    return {
        name: {
            "cpu_us_per_key": (after[name][0] - before[name][0]) / n * 1e6,
            "ctx_per_key": (after[name][1] - before[name][1]) / n,
            "p50_us": pb.percentile(samples[name], 50),
        }
        for name in terms
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keystrokes", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--proxies", default="script,wrapagent", help="of direct,script,wrapagent")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=CMD")
    parser.add_argument("--wrapagent-cmd", default=None, help="shell words; `--no-hooks CMD…` is appended")
    args = parser.parse_args(argv)
    cmd = shlex.split(args.wrapagent_cmd) if args.wrapagent_cmd else pb.default_wrapagent_cmd()
    known = {"direct": pb.direct_proxy(), "script": pb.script_proxy(), "wrapagent": pb.wrapagent_proxy(cmd)}
    proxies = [known[name] for name in args.proxies.split(",") if name] + [pb.extra_proxy(s) for s in args.extra]
    env = pb.child_env()
    rounds = [run_round(proxies, args.keystrokes, env) for _ in range(args.rounds)]
    print(f"{args.rounds} rounds × {args.keystrokes} keystrokes, medians over rounds\n")
    print("| proxy | CPU µs/key | context switches/key | p50 µs |")
    print("|---|---|---|---|")
    for p in proxies:
        med = {k: statistics.median(r[p.name][k] for r in rounds) for k in ("cpu_us_per_key", "ctx_per_key", "p50_us")}
        print(f"| {p.name} | {med['cpu_us_per_key']:.1f} | {med['ctx_per_key']:.2f} | {med['p50_us']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
