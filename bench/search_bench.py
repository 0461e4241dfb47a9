#!/usr/bin/env python3
"""search_bench: `wrapagent sessions search` over N recorded sessions (default 1,000).

Builds N finished sessions in a temporary state folder, spread over 10
projects and the four tools, each with a transcript of 20 turns (user
message and reply of a few hundred characters each, from a fixed random
vocabulary), indexes them as sessions' ends do, then times the search
command in-process (`sessions.main`: opening the index, the look for
unindexed sessions, the query, printing) for a word in one session, a word
in every tenth, and a word in none. Medians of `--runs`.

    python bench/search_bench.py [--sessions 1000] [--runs 20]

A measurement, not a test: it prints the figures and never fails.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wrapagent.history import search_index  # noqa: E402

TOOLS = ("codex", "claude", "gemini", "opencode")
WORDS = [f"w{n:04d}" for n in range(3000)] + ["migration", "auth", "refactor", "test", "deploy", "cache"]


def ulid(n: int) -> str:
    """A ULID-shaped id (26 Crockford characters) whose order follows n."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = 1_790_000_000_000 + n * 60_000
    head = "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(10)))
    return head + f"{n:016d}".translate(str.maketrans("0123456789", "ABCDEFGHJK"))


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def build(state: Path, count: int) -> None:
    """N sessions under `state`: folders, records and transcripts, indexed as at their ends."""
    env = {"XDG_STATE_HOME": str(state.parent), "HOME": str(state.parent)}
    rng = random.Random(42)
    conn = search_index.connect(env)
    for n in range(count):
        project = f"/home/someone/project{n % 10}"
        root = state / "projects" / f"project{n % 10}-0000000{n % 10}"
        sid = ulid(n)
        folder = root / sid
        (folder / "transcript").mkdir(parents=True)
        tool = TOOLS[n % 4]
        turns = [{"user": sentence(rng, 40), "agent": sentence(rng, 80)} for _ in range(20)]
        if n == count // 2:
            turns[3]["user"] += " the pelican-only-once word"
        if n % 10 == 0:
            turns[7]["agent"] += " every-tenth-session phrase"
        lines = [json.dumps({"type": "session", "id": sid, "cwd": project})]
        for t in turns:
            lines += [json.dumps({"type": "user", "text": t["user"]}), json.dumps({"type": "assistant", "text": t["agent"]})]
        (folder / "transcript" / f"demo-{sid}.jsonl").write_text("\n".join(lines) + "\n")
        record = {"id": sid, "tool": tool, "project_root": project, "state": "finished",
                  "started_at": f"2026-11-{1 + n % 28:02d}T10:00:00+00:00",
                  "native_sessions": [{"id": sid, "transcript": f"transcript/demo-{sid}.jsonl"}]}
        (folder / "session.json").write_text(json.dumps(record))
        conv = {"source": "transcript", "turns": [{"n": i, **t} for i, t in enumerate(turns, 1)]}
        with conn:
            search_index.add(conn, record, folder, conv)
    conn.close()


def time_search(env: dict[str, str], text: str, runs: int) -> tuple[float, int, int]:
    """(median ms, exit code, lines printed) of `sessions search TEXT`, in-process."""
    from wrapagent.commands import sessions

    samples, code, lines = [], 0, 0
    for _ in range(runs):
        out = io.StringIO()
        began = time.perf_counter()
        code = sessions.main(["search", text], out=out, err=io.StringIO(), env=env, cwd="/")
        samples.append((time.perf_counter() - began) * 1000)
        lines = len(out.getvalue().splitlines())
    return statistics.median(samples), code, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrapagent-search-bench-") as tmp:
        state = Path(tmp) / "state" / "wrapagent"
        began = time.perf_counter()
        build(state, opts.sessions)
        built = time.perf_counter() - began
        env = {"XDG_STATE_HOME": str(Path(tmp) / "state"), "HOME": tmp, "PATH": os.environ.get("PATH", "")}
        size = os.path.getsize(search_index.index_path(env))
        print(f"{opts.sessions} sessions x 20 turns indexed in {built:.1f} s; index {size / 1e6:.1f} MB")
        for label, text in (("one session", "pelican-only-once"), ("every tenth", "every-tenth-session"),
                            ("none", "zebra-nobody-wrote"), ("2 characters (LIKE scan)", "zz")):
            ms, code, lines = time_search(env, text, opts.runs)
            print(f"search {label:<26} {ms:7.1f} ms median of {opts.runs}  (exit {code}, {lines} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
