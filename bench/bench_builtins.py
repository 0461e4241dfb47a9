"""Time every built-in guard on a 10,000-file git repository.

    python bench/bench_builtins.py [--files 10000] [--runs 20]

Builds the repository in a temporary directory (a bare remote with upstream
tracking, a few modified, staged and untracked files, an ignored build dir),
then runs each built-in `--runs` times and prints first/median/max wall time
in milliseconds. The target: each built-in well under 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wrapagent.hooks.builtins import BUILTIN_NAMES, run_builtin  # noqa: E402
from wrapagent.hooks.context import GuardContext  # noqa: E402

ARGS: dict[str, dict[str, object]] = {
    "dirty_tree": {},
    "git_diff": {"mode": "stat"},
    "prompt_files": {"files": ["AGENTS.md", "GUIDELINES.md", "MISSING.md"]},
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def build_repo(base: Path, n_files: int) -> Path:
    """n_files tracked files in a 3-level tree, plus realistic uncommitted noise."""
    env = {
        "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    }
    os.environ.update(env)
    remote = base / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    per_dir = 50
    for i in range(n_files):
        top, mid = divmod(i // per_dir, 20)
        path = repo / f"pkg{top:02d}" / f"mod{mid:02d}" / f"file{i % per_dir:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# file {i}\nVALUE = {i}\n")
    (repo / "AGENTS.md").write_text("".join(f"- rule {i}\n" for i in range(200)))
    (repo / "GUIDELINES.md").write_text("Keep functions small.\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    git(repo, "switch", "-q", "-c", "feature")
    git(repo, "push", "-q", "-u", "origin", "feature")
    (repo / "pkg00" / "mod00" / "file000.py").write_text("changed\n")
    git(repo, "commit", "-q", "-am", "local change")  # 1 unpushed commit
    for i in range(5):  # files of the tree's last folders on a small repository
        (repo / f"pkg{min(1, (n_files - 1) // 1000):02d}" / "mod01" / f"file{i:03d}.py").write_text("modified\n")
    (repo / "new_module.py").write_text("x = 1\n")
    git(repo, "add", "new_module.py")
    (repo / "notes.txt").write_text("todo\n")
    build = repo / "build"
    build.mkdir()
    for i in range(500):
        (build / f"obj{i}.o").write_text("")
    git(repo, "status", "-s")  # refresh the index once, as any user command would
    time.sleep(1.1)  # let racily-clean index entries age past the index mtime
    git(repo, "status", "-s")
    return repo


def bench(repo: Path, runs: int) -> list[tuple[str, float, float, float, int]]:
    ctx = GuardContext(project_root=repo, cwd=repo, tool="codex", session_id="bench", is_resume=True)
    rows = []
    for name in BUILTIN_NAMES:
        args = ARGS.get(name, {})
        times = []
        out = ""
        for _ in range(runs + 1):
            started = time.perf_counter()
            out = run_builtin(name, args, ctx)
            times.append((time.perf_counter() - started) * 1000)
        first, rest = times[0], times[1:]
        rows.append((name, first, statistics.median(rest), max(rest), len(out.encode())))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print each built-in's output once")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrapagent-bench-") as tmp:
        started = time.perf_counter()
        repo = build_repo(Path(tmp), opts.files)
        print(f"repository: {opts.files} tracked files, built in {time.perf_counter() - started:.1f} s")
        rows = bench(repo, opts.runs)
        print(f"{'built-in':<18} {'first ms':>9} {'median ms':>10} {'max ms':>8} {'bytes':>6}")
        for name, first, median, worst, size in rows:
            print(f"{name:<18} {first:>9.1f} {median:>10.1f} {worst:>8.1f} {size:>6}")
        if opts.show:
            ctx = GuardContext(project_root=repo, cwd=repo, tool="codex", session_id="bench", is_resume=True)
            for name in BUILTIN_NAMES:
                print(f"\n----- {name}\n{run_builtin(name, ARGS.get(name, {}), ctx)}")
        slow = [row[0] for row in rows if row[2] >= 100]
    if slow:
        print(f"over 100 ms (median): {', '.join(slow)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
