"""The README's first screen is the Quick start, in the order a new user needs it.

A newcomer reads the top of the README only: install and demo, then
`config init` (without it a real session injects nothing), then shims or
aliases. The two set-up commands must stay exact (CI runs the second).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _sections() -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", README, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def test_first_section_is_quick_start_in_order():
    title, body = _sections()[0]
    assert title == "Quick start"
    steps = ["python3 -m pip install . && wrapagent demo", "wrapagent config init",
             "wrapagent shims install", "wrapagent init bash"]
    positions = [body.index(s) for s in steps]
    assert positions == sorted(positions)
    # what the demo leaves behind is said next to it
    assert "wrapagent sessions list" in body
    assert "only read" in body and "refs/wrapagent" not in body
    # the first screen: the quick start begins within the first 10 lines
    assert README.split("\n").index("## Quick start") < 10


def test_tests_are_under_development_at_the_end_and_ci_runs_them():
    titles = [t for t, _ in _sections()]
    assert titles[-1] == "Development"
    dev = dict(_sections())["Development"]
    assert "```sh\n./run-tests\n```" in dev
    assert "exec ./run-tests" in (ROOT / ".ci" / "run").read_text()
    assert "Uninstall" in titles


def test_the_history_section_says_where_checkpoints_live_and_how_big_they_grow():
    history = dict(_sections())["Session history: diff, undo, resume"]
    assert "~/.local/state/wrapagent/stores/" in history and "max_file_mb" in history
    assert "How big it grows" in history
    assert "git log --all --exclude" not in README  # nothing to hide any more


def test_benchmark_internals_live_in_bench_readme():
    perf = next(b for t, b in _sections() if t.startswith("Performance"))
    assert "| throughput ×script |" in perf
    assert "bench/README.md" in perf
    assert "How start-up is kept short" not in README
    assert "How start-up is kept short" in (ROOT / "bench" / "README.md").read_text()
