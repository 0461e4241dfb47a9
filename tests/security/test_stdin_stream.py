"""Piped stdin is streamed to the tool after the blocks, never read whole first.

`tail -f log | wrapagent codex exec -` used to give the tool nothing, ever
(wrapagent waited for the end of stdin before writing a byte), and a big
prompt cost three times its size in memory. pre_session reads a capped
prefix of the prompt; the tool gets all of it, as it comes.

The tools are stand-ins named like the real ones (the adapters choose the
path by name): each copies what it reads on stdin to a file as it reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import wrapagent_argv
from waiting import wait_for

PROMPT_CAP = 64 * 1024


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.project = tmp / "project"
        self.got = tmp / "tool-stdin"
        self.pre_got = tmp / "pre-session-stdin"
        self.bin.mkdir()
        self.project.mkdir()
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent"
        config.mkdir(parents=True)
        (config / "hooks.toml").write_text('[[prompt_guard]]\nname = "g"\ncommand = "echo GUARD-SAYS-HI"\n')
        (config / "config.toml").write_text(
            f'[hooks.pre_session]\ncommand = "cat > {self.pre_got}; echo PRE-SESSION-RAN"\n')

    def tool(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def env(self) -> dict[str, str]:
        return dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}")

    def record(self) -> dict:
        state = Path(os.environ["XDG_STATE_HOME"])
        (path,) = sorted(state.glob("wrapagent/projects/*/*/session.json"))
        return json.loads(path.read_text())


def read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@pytest.mark.parametrize("tool,args,before,pre_reads", [
    ("codex", ["exec", "-"], b"", b"first line\n"),
    ("claude", ["-p"], b"", b"first line\n"),
    ("opencode", ["run", "hello"], b"hello\n", b"hello\nfirst line\n"),  # its join: arguments, newline, stdin
    ("gemini", ["-p", "hello"], b"", b"first line\n\n\nhello"),  # stdin before the argument: blocks on stdin
])
def test_stdin_that_never_ends_reaches_the_tool_as_it_comes(tmp_path: Path, tool, args, before,
                                                            pre_reads) -> None:
    world = World(tmp_path)
    world.tool(tool, f'exec cat > "{world.got}"\n')
    proc = subprocess.Popen([*wrapagent_argv(), tool, *args], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=world.project, env=world.env())
    try:
        proc.stdin.write(b"first line\n")
        proc.stdin.flush()
        # stdin stays open: the tool must get the blocks and the first bytes now.
        wait_for(lambda: read(world.got).endswith(before + b"first line\n"), "the tool got the first line")
        got = read(world.got)
        assert got.startswith(b"<system-reminder>\nPRE-SESSION-RAN\n</system-reminder>\n"
                              b'<prompt-guard name="g">\nGUARD-SAYS-HI\n</prompt-guard>\n\n'), got
        proc.stdin.write(b"second line\n")
        proc.stdin.flush()
        wait_for(lambda: read(world.got).endswith(b"first line\nsecond line\n"), "the tool got the second line")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert read(world.pre_got) == pre_reads  # what had come when it ran


def test_a_big_prompt_is_streamed_and_pre_session_gets_a_capped_prefix(tmp_path: Path) -> None:
    """64 MiB piped in: the tool gets blocks + every byte; wrapagent never holds the prompt whole."""
    world = World(tmp_path)
    counted = tmp_path / "count"
    world.tool("codex", f'exec wc -c > "{counted}"\n')
    size = 64 * 1024 * 1024
    wrapagent = " ".join(f"'{part}'" for part in wrapagent_argv())
    # The peak RSS of the largest process this wrapper waited for: wrapagent (head, yes and wc are small).
    wrapper = ("import resource, subprocess, sys; "
               "code = subprocess.run(sys.argv[1:]).returncode; "
               "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, "sh", "-c", f"yes | head -c {size} | {wrapagent} codex exec -"],
                         capture_output=True, text=True, cwd=world.project, env=world.env(), timeout=600)
    code, maxrss = out.stdout.split()
    assert code == "0", out.stderr
    prefix = world.record()["injection"]["text"]
    assert prefix.startswith("<system-reminder>\nPRE-SESSION-RAN\n")
    assert int(read(counted)) == len(prefix.encode()) + size
    assert 0 < len(read(world.pre_got)) <= PROMPT_CAP
    assert read(world.pre_got) == b"y\n" * (len(read(world.pre_got)) // 2)
    peak = int(maxrss) * (1 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB on Linux
    assert peak < size, f"wrapagent held the prompt in memory: peak RSS {peak} bytes"
