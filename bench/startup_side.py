"""Launch → first byte, side by side: wrapagent installs against `python -c exec` and `script(1)`.

`ptybench.py --tests startup` reports one install's median per round; this
compares several installs (e.g. a branch and the main it came from, each
installed non-editable into a venv of its own) in one run, interleaved
launch by launch, and gives each row's figure *added over `pyexec` in the
same round*: on a shared machine the load moves every figure by several
ms between rounds, and the per-round difference cancels most of that.

    python bench/startup_side.py --rounds 40 \\
        --install now=.venv/bin/wrapagent --install before=/tmp/main-venv/bin/wrapagent

Each install gives two rows, `bare-NAME` (`--no-hooks`) and `full-NAME`
(the default configuration, no config file, in a folder that is not a git
project: `ptybench.wrapagent_full_proxy`). The child is ptybench's
`sh -c 'printf x; sleep 0.1'`. Run it under `chrt -f 10` on a loaded
machine: without a real-time priority the other processes' bursts, not the
launchers, decide the figures. A measurement, never a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ptybench as pb  # noqa: E402 - the bench's own module, beside this file


def _proxies(installs: Sequence[tuple[str, str]], home: Path, extras: Sequence[str] = ()) -> list[pb.Proxy]:
    """pyexec (with the first install's interpreter), script, the extras, then bare and full of each install."""
    python = pb.python_of([installs[0][1]])
    rows = [pb.pyexec_proxy(python), pb.script_proxy(), *(pb.extra_proxy(spec) for spec in extras)]
    for name, launcher in installs:
        rows.append(pb.Proxy(f"bare-{name}", lambda a, launcher=launcher: [launcher, "--no-hooks", *a]))
        full = pb.wrapagent_full_proxy([launcher], home / name)
        rows.append(pb.Proxy(f"full-{name}", full.wrap, env=full.env, cwd=full.cwd))
    return rows


def _quartiles(xs: Sequence[float]) -> tuple[float, float]:
    """p25 and median."""
    return statistics.quantiles(xs, n=4)[0], statistics.median(xs)


def _report(res: dict[str, list[float]], rounds: int) -> str:
    floor = res["pyexec"]
    lines = [f"{rounds} interleaved rounds, launch -> first byte (ms) of `sh -c 'printf x; sleep 0.1'`", "",
             "| row | min | p25 | median | added vs pyexec, per round: p25 | median |",
             "|---|---|---|---|---|---|"]
    for name, xs in res.items():
        p25, med = _quartiles(xs)
        if name == "pyexec":
            added = "— | —"
        else:
            d25, dmed = _quartiles([x - f for x, f in zip(xs, floor)])
            added = f"{d25:+.1f} | {dmed:+.1f}"
        lines.append(f"| {name} | {min(xs):.1f} | {p25:.1f} | {med:.1f} | {added} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--install", action="append", required=True, metavar="NAME=LAUNCHER",
                        help="a wrapagent launcher (bin/wrapagent of a venv), repeatable")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=CMD",
                        help="another launcher, run as `CMD… sh -c …` (e.g. a shape of a Python proxy), repeatable")
    parser.add_argument("--shuffle", action="store_true", help="a new order of the rows in every round")
    args = parser.parse_args(argv)
    installs = [tuple(spec.split("=", 1)) for spec in args.install]
    env = pb.child_env()
    rows = _proxies(installs, Path(tempfile.mkdtemp(prefix="wrapagent-startup-side-")), args.extra)
    for row in rows:  # the probe: creates each full row's sessions repository
        pb.run_first_byte(row, env)
    res: dict[str, list[float]] = {row.name: [] for row in rows}
    for r in range(args.rounds):
        order = list(rows)
        if args.shuffle:
            random.shuffle(order)
        for row in order:
            res[row.name].append(pb.run_first_byte(row, env))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, end="\r")
    print(_report(res, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
