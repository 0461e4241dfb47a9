"""What checkpoints cost on a 10,000-file git repository.

    python bench/bench_checkpoints.py [--files 10000] [--runs 15]

Builds the repository of bench_builtins.py (10,000 tracked files, modified,
staged and untracked files, a 500-file ignored build dir), then times:

- `before`: the snapshot taken before the tool starts, the only part the user
  waits for at start-up. "cold" = the first session in the repository (the
  private index is seeded from the user's index), "warm" = every later one.
- `after`: the snapshot after the tool exited, with 20 files changed.
- `wrapagent sh -c true` end to end, checkpoints on vs off, interleaved.

Prints first/median/max wall time in milliseconds. Target: `before` ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_builtins import build_repo  # noqa: E402

from wrapagent.hooks.config_model import CheckpointSettings  # noqa: E402
from wrapagent.history import checkpoints  # noqa: E402
from wrapagent.history.records import new_session_id  # noqa: E402


def ms(samples: list[float]) -> str:
    return (f"first {samples[0]:7.1f}  median {statistics.median(samples):7.1f}  "
            f"max {max(samples):7.1f}  (n={len(samples)})")


def time_before(repo: Path, runs: int) -> tuple[list[float], list[float]]:
    """(cold, warm) `before` snapshot times: cold drops the private index first."""
    private = repo / ".git" / "wrapagent" / "index"
    settings = CheckpointSettings(budget_secs=30)
    cold, warm = [], []
    for i in range(runs * 2):
        is_cold = i % 2 == 0
        if is_cold and private.exists():
            private.unlink()
        record = {"id": new_session_id(), "depth": 0, "parent_session": None}
        started = time.perf_counter()
        checkpoints.begin(record, settings, repo)
        elapsed = (time.perf_counter() - started) * 1000
        assert record["checkpoints"]["status"] == "taken", record
        (cold if is_cold else warm).append(elapsed)
    return cold, warm


def time_after(repo: Path, runs: int) -> list[float]:
    settings = CheckpointSettings(budget_secs=30)
    out = []
    for run in range(runs):
        record = {"id": new_session_id(), "depth": 0, "parent_session": None}
        checkpoints.begin(record, settings, repo)
        for i in range(20):
            (repo / "pkg02" / "mod03" / f"file{i:03d}.py").write_text(f"agent edit {run}\n")
        started = time.perf_counter()
        checkpoints.end(record, settings, repo)
        out.append((time.perf_counter() - started) * 1000)
        assert record["checkpoints"].get("after"), record
    return out


def time_wrapagent(repo: Path, runs: int) -> tuple[list[float], list[float]]:
    """`wrapagent sh -c true` wall time with checkpoints on and off, interleaved."""
    base = Path(tempfile.mkdtemp(prefix="wa-bench-home-"))
    env = {**os.environ, "HOME": str(base), "XDG_CONFIG_HOME": str(base / "config"),
           "XDG_STATE_HOME": str(base / "state"), "WRAPAGENT_SESSIONS_ROOT": str(base / "sessions")}
    config = base / "config" / "wrapagent" / "hooks.toml"
    config.parent.mkdir(parents=True)
    on, off = [], []
    try:
        for i in range(runs * 2):
            enabled = i % 2 == 0
            config.write_text(f"[checkpoints]\nenabled = {'true' if enabled else 'false'}\n"
                              "[session_complete]\nenabled = false\n")
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "true"], cwd=repo, env=env,
                           stdin=subprocess.DEVNULL, check=True)
            (on if enabled else off).append((time.perf_counter() - started) * 1000)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return on, off


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wa-bench-cp-") as tmp:
        repo = build_repo(Path(tmp), ns.files)
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.count("\n")
        print(f"repository: {tracked} tracked files, git {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]}")
        cold, warm = time_before(repo, ns.runs)
        print(f"before, cold  (ms): {ms(cold)}")
        print(f"before, warm  (ms): {ms(warm)}")
        print(f"after, 20 edits (ms): {ms(time_after(repo, ns.runs))}")
        on, off = time_wrapagent(repo, ns.runs)
        print(f"wrapagent sh -c true, checkpoints on  (ms): {ms(on)}")
        print(f"wrapagent sh -c true, checkpoints off (ms): {ms(off)}")
        print(f"median difference (ms): {statistics.median(on) - statistics.median(off):.1f}")
        status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
        print(f"git status of the repository still shows {status.count(chr(10))} entries (the user's own work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
