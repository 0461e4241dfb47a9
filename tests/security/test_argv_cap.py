"""The blocks put into a prompt argument never make it too long to start the tool.

Linux refuses an argument over 128 KiB (MAX_ARG_STRLEN): verbose guards made
`execve` fail with E2BIG and the tool never ran (exit 126). The whole argument
is now kept under the limit: the last blocks are cut or dropped, with a note.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import wrapagent_argv
from wrapagent.inject.blocks import TRUNCATION_MARKER, build_prefix, cap_prefix

LINUX_ARG_MAX = 128 * 1024  # bytes of one argument, its NUL included


def _world(tmp_path: Path, guards: int, size: int) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent"
    config.mkdir(parents=True)
    text = "".join(
        f'[[prompt_guard]]\nname = "verbose-{n}"\n'
        f'command = "head -c {size} /dev/zero | tr -c x {chr(ord("a") + n)}"\n'
        for n in range(guards))
    (config / "hooks.toml").write_text(text)
    return project, dict(os.environ, WRAPAGENT_DEMO_LOG=str(tmp_path / "demo.jsonl"))


def _record() -> dict:
    (path,) = sorted(Path(os.environ["XDG_STATE_HOME"]).glob("wrapagent/projects/*/*/session.json"))
    return json.loads(path.read_text())


def test_huge_guards_still_let_the_tool_start(tmp_path: Path) -> None:
    # Six guards of 30 000 bytes each: ~180 KB of blocks for one argument.
    project, env = _world(tmp_path, guards=6, size=30_000)
    proc = subprocess.run([*wrapagent_argv(), "demo", "-p", "the user's prompt"], cwd=project, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (message,) = [json.loads(line)["text"] for line in (tmp_path / "demo.jsonl").read_text().splitlines()]
    assert message.endswith("\n\nthe user's prompt")
    assert len(message.encode()) < LINUX_ARG_MAX
    assert message.startswith('<prompt-guard name="verbose-0">\n' + "a" * 30_000 + "\n</prompt-guard>\n")
    # Blocks in order, each closed; the last ones cut or dropped.
    names = re.findall(r'<prompt-guard name="(verbose-\d)">', message)
    assert names == [f"verbose-{n}" for n in range(len(names))] and 3 <= len(names) < 6
    assert message.count("</prompt-guard>") == len(names)
    notes = _record()["injection"]["notes"]
    assert any("dropped" in note for note in notes), notes
    assert b"cut to fit the prompt argument" in proc.stderr or b"blocks cut" in proc.stderr


def test_a_prompt_near_the_limit_gets_no_blocks_but_runs(tmp_path: Path) -> None:
    project, env = _world(tmp_path, guards=1, size=2_000)
    prompt = "p" * (LINUX_ARG_MAX - 200)  # room for no useful part of a block
    proc = subprocess.run([*wrapagent_argv(), "demo", "-p", prompt], cwd=project, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (message,) = [json.loads(line)["text"] for line in (tmp_path / "demo.jsonl").read_text().splitlines()]
    assert message == prompt
    assert _record()["injection"]["status"] == "none"


BODY = "é" * 5000 + "\n" + "x" * 3000  # multi-byte characters: the limit is in bytes


@pytest.mark.parametrize("limit", [0, 100, 300, 2_000, 20_000, 40_000, 60_000, 10**6])
def test_cap_prefix_keeps_whole_blocks_in_order_within_the_limit(limit: int) -> None:
    prefix = build_prefix("reminder " * 100, [(f"g{n}", BODY) for n in range(4)])
    capped, notes = cap_prefix(prefix, limit)
    assert len(capped.encode()) <= limit
    if len(prefix.encode()) <= limit:
        assert (capped, notes) == (prefix, [])
        return
    assert notes
    if capped:
        assert capped.endswith("\n\n") and prefix.startswith(capped.split("\n" + TRUNCATION_MARKER)[0])
        opened = re.findall(r"<(system-reminder|prompt-guard)[ >]", capped)
        closed = re.findall(r"</(system-reminder|prompt-guard)>", capped)
        assert opened == closed
    kept = len(re.findall(r"</(?:system-reminder|prompt-guard)>", capped))
    assert kept + sum("dropped" in note for note in notes) == 5
