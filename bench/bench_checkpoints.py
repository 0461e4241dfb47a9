"""What checkpoints cost, side by side with `git status` on the same repository.

    python bench/bench_checkpoints.py [--files 1000,10000,100000] [--runs 9] [--end-to-end]

For each size, builds the repository of bench_builtins.py (tracked files,
modified, staged and untracked files, an ignored build dir), then times, in
milliseconds (median of `--runs`, first and max beside it):

- `git status`: `git status --porcelain` on the same repository, the yardstick;
- `first, borrowed`: the first snapshot of the project into wrapagent's store
  as it is built (the store borrows the user's objects through `alternates`
  and starts from a copy of the user's index: only files git does not know
  are hashed); `first, own copy`: the same with a store that keeps its own
  copy of every blob (no alternates, an empty first index: every file hashed);
- `steady`: a later `before` snapshot (the store's index warm), the one the
  user waits for at start-up, and its ratio to `git status` (target ≤ 1.2);
- `turn, 20 edits`: a snapshot after 20 files changed: what a per-turn or
  `after` checkpoint costs;
- the store's size on disk after the first snapshot, both ways.

`--end-to-end` also times `wrapagent sh -c true` with checkpoints on and off.
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
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_builtins import build_repo  # noqa: E402

from wrapagent.hooks.config_model import CheckpointSettings  # noqa: E402
from wrapagent.history import checkpoints  # noqa: E402
from wrapagent.history.records import new_session_id  # noqa: E402
from wrapagent.history.store import store_path  # noqa: E402

SETTINGS = CheckpointSettings(budget_secs=600)


def ms(samples: list[float]) -> str:
    return (f"median {statistics.median(samples):8.1f}  first {samples[0]:8.1f}  "
            f"max {max(samples):8.1f}  (n={len(samples)})")


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def git_status(repo: Path, runs: int) -> list[float]:
    return [timed(lambda: subprocess.run(["git", "status", "--porcelain"], cwd=repo, check=True,
                                         stdout=subprocess.DEVNULL)) for _ in range(runs)]


def snapshot(repo: Path) -> dict:
    record = {"id": new_session_id(), "depth": 0, "parent_session": None}
    checkpoints.begin(record, SETTINGS, repo)
    assert record["checkpoints"]["status"] == "taken", record["checkpoints"]
    return record


def disk(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                pass
    return total


def own_copy():
    """A store that borrows nothing: no alternates, and a first index that starts empty."""
    real_find = checkpoints.Repo.find

    def find(*args, **kwargs):
        repo = real_find(*args, **kwargs)
        if repo is not None:
            repo.objects = None
        return repo

    def seed(self, private, work, deadline):
        data = checkpoints._read_file(private)
        if data is not None:
            Path(work).write_bytes(data)

    return mock.patch.multiple(checkpoints.Repo, find=staticmethod(find), _seed_index=seed)


def first_snapshots(repo: Path, runs: int) -> tuple[list[float], list[float], int, int]:
    """(borrowed times, own-copy times, borrowed store bytes, own-copy store bytes)."""
    store = Path(store_path(str(repo)))
    borrowed, own = [], []
    sizes = {}
    for i in range(runs * 2):
        shutil.rmtree(store, ignore_errors=True)
        mode = "own" if i % 2 else "borrowed"
        if mode == "own":
            with own_copy():
                own.append(timed(lambda: snapshot(repo)))
        else:
            borrowed.append(timed(lambda: snapshot(repo)))
        sizes[mode] = disk(store)
    shutil.rmtree(store, ignore_errors=True)
    return borrowed, own, sizes["borrowed"], sizes["own"]


def steady(repo: Path, runs: int) -> list[float]:
    snapshot(repo)  # the store's index is warm from here on
    return [timed(lambda: snapshot(repo)) for _ in range(runs)]


def turns(repo: Path, runs: int) -> list[float]:
    out = []
    for run in range(runs):
        for i in range(20):
            (repo / "pkg00" / "mod01" / f"file{i:03d}.py").write_text(f"agent edit {run}\n")
        out.append(timed(lambda: snapshot(repo)))
    return out


def end_to_end(repo: Path, runs: int) -> tuple[list[float], list[float]]:
    """`wrapagent sh -c true` wall time with checkpoints on and off, interleaved."""
    base = Path(tempfile.mkdtemp(prefix="wa-bench-home-"))
    env = {**os.environ, "HOME": str(base), "XDG_CONFIG_HOME": str(base / "config"),
           "XDG_STATE_HOME": str(base / "state")}
    config = base / "config" / "wrapagent" / "hooks.toml"
    config.parent.mkdir(parents=True)
    on, off = [], []
    try:
        for i in range(runs * 2):
            enabled = i % 2 == 0
            config.write_text(f"[checkpoints]\nenabled = {'true' if enabled else 'false'}\n"
                              "[session_complete]\nenabled = false\n")
            (on if enabled else off).append(timed(lambda: subprocess.run(
                [sys.executable, "-m", "wrapagent", "sh", "-c", "true"], cwd=repo, env=env,
                stdin=subprocess.DEVNULL, check=True)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return on, off


def bench(files: int, runs: int, with_end_to_end: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="wa-bench-cp-") as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        # no background `git gc --auto` in the benchmark repository while it is measured or removed
        os.environ.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="gc.auto", GIT_CONFIG_VALUE_0="0")
        repo = build_repo(Path(tmp), files)
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.count("\n")
        print(f"\n== {tracked} tracked files ({disk(repo / '.git') / 1e6:.1f} MB in .git)")
        status = git_status(repo, runs)
        print(f"git status              (ms): {ms(status)}")
        borrowed, own, borrowed_bytes, own_bytes = first_snapshots(repo, 1 if files >= 50_000 else 3)
        print(f"first, borrowed         (ms): {ms(borrowed)}   store {borrowed_bytes / 1e6:6.1f} MB")
        print(f"first, own copy         (ms): {ms(own)}   store {own_bytes / 1e6:6.1f} MB")
        warm = steady(repo, runs)
        print(f"steady (before)         (ms): {ms(warm)}   "
              f"{statistics.median(warm) / statistics.median(status):.2f}x git status")
        turn = turns(repo, runs)
        print(f"turn, 20 edits          (ms): {ms(turn)}   "
              f"{statistics.median(turn) / statistics.median(status):.2f}x git status")
        if with_end_to_end:
            on, off = end_to_end(repo, runs)
            print(f"wrapagent sh -c true, on  (ms): {ms(on)}")
            print(f"wrapagent sh -c true, off (ms): {ms(off)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1000,10000,100000", help="comma-separated sizes")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--end-to-end", action="store_true")
    ns = parser.parse_args()
    print(f"git {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]}, "
          f"{os.cpu_count()} CPU(s)")
    for files in (int(f) for f in ns.files.split(",")):
        bench(files, ns.runs, ns.end_to_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
