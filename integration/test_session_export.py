"""A session's conversation read back, the same shape for every CLI, and its recording.

After the session of `test_injection.py::test_interactive` (guards, so the first
message carries blocks; two messages, each answered by the mock; the tool quit),
`assert_exported` checks that `wrapagent sessions export ID --format md` holds
both messages, the first with the blocks wrapagent added, and the mock's replies,
under the same headings for all four CLIs (read from each CLI's own transcript),
that `--format json` is the same as data, and that the session's recording is a
valid asciicast v3 file with a marker for the turn. Its size per hour of session
is printed (`-s`) for the notes on recording cost. One session serves both: a CLI
start is the costly part of an integration test.

`test_a_cli_that_starts_first_gets_its_turn_marker`: the same with nothing
configured that has to come before the tool.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 200, "claude": 200, "gemini": 260, "opencode": 360}
FIRST = "export me the word albatross-5150"
GUARD_OUT = "guard-line-for-the-export"


def wrapagent(cli_env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *args], cwd=cli_env.cwd, env=cli_env.env,
                          capture_output=True, text=True, timeout=60)


def converse(cli_env, term, text: str) -> None:
    spec = cli_env.spec
    mark = cli_env.mock.mark()
    send_message(term, text, tail=text[-12:])
    cli_env.mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    term.wait_for("MOCK-REPLY", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)


def cast_events(path: Path) -> tuple[dict, list[list]]:
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:] if not line.startswith("#")]


def assert_exported(cli_env, record: dict, messages: tuple[str, ...], guard_out: str) -> None:
    """The session's conversation read back: `md` and `json` the same shape for every CLI, and its recording.

    `messages`: what the user typed, in order (the first got the blocks, whose guard printed
    `guard_out`); the mock answered each. Called by the session of
    `test_injection.py::test_interactive`, which has them.
    """
    tool = cli_env.tool
    md = wrapagent(cli_env, "sessions", "export", record["id"], "--format", "md")
    assert md.returncode == 0, md.stderr
    text = md.stdout
    assert text.startswith(f"# Session {record['id']}\n"), text[:400]
    assert f"- tool: {tool}" in text and "- source: " in text, text[:800]
    turns = text.split("## Turn 1\n", 1)[1].split("## Turn 2\n", 1)
    assert len(turns) == 2, text
    you, agent = turns[0].split(f"\n### {tool}\n", 1)
    assert you.lstrip().startswith("### You\n"), turns[0][:400]
    assert guard_out in you and "<prompt-guard" in you and messages[0] in you, you
    assert you.index(guard_out) < you.index(messages[0])
    assert "MOCK-REPLY" in agent, agent
    you, agent = turns[1].split(f"\n### {tool}\n", 1)
    assert messages[1] in you and "<prompt-guard" not in you, you
    assert "MOCK-REPLY" in agent, agent

    data = wrapagent(cli_env, "sessions", "export", record["id"], "--format", "json")
    assert data.returncode == 0, data.stderr
    conv = json.loads(data.stdout)
    assert conv["session"]["tool"] == tool and conv["source"].startswith("transcript"), conv["source"]
    assert messages[0] in conv["turns"][0]["user"] and "MOCK-REPLY" in conv["turns"][0]["agent"], conv["turns"][:2]
    assert messages[1] in conv["turns"][1]["user"], conv["turns"][:2]

    info = record.get("recording") or {}
    path = Path(info.get("file", ""))
    assert path.name == f"{record['id']}.cast.gz", info
    header, events = cast_events(path)
    assert header["version"] == 3 and header["term"] == {"cols": 120, "rows": 40, **header["term"]}
    markers = [e[2] for e in events if e[1] == "m"]
    # (a command typed before it, codex's `/status`, is a turn of its own to the record: the
    # first message's marker need not be turn 1's)
    words = re.escape(" ".join(messages[0].split()[:4]))
    assert any(re.match(rf"turn \d+: {words}", m) for m in markers), markers
    assert events[-1][1] == "x" and events[-1][2] == "0"
    seconds = sum(e[0] for e in events)
    print(f"\n{tool}: recording {info['bytes']} bytes ({info['gz_bytes']} gzip) over {seconds:.1f} s "
          f"= {info['bytes'] * 3600 / seconds / 1e6:.2f} MB/h raw, {info['gz_bytes'] * 3600 / seconds / 1e6:.2f} MB/h gzip")


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_a_cli_that_starts_first_gets_its_turn_marker(cli_env, tool):
    """Nothing has to come before the tool (no hooks, checkpoints off): it starts before the
    session's record, and the watch that marks turns comes later and catches up on its screen."""
    spec = SPECS[tool]
    cli_env.write_wrapagent_config(hooks_toml="[checkpoints]\nenabled = false\n")
    args = cli_env.interactive_args()
    term = cli_env.spawn(args)
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    converse(cli_env, term, FIRST)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=60) == 0
    record = cli_env.wait_session_record(args, timeout=60)
    log = (Path(record["_path"]).parent / "session.log").read_text(errors="replace")
    assert f"{tool} started first: nothing had to come before it" in log, log
    path = Path((record.get("recording") or {}).get("file", ""))
    _, events = cast_events(path)
    markers = [e[2] for e in events if e[1] == "m"]
    assert any(m.startswith("turn 1: export me the word") for m in markers), (markers, log)
    assert record["turns"] and record["turns"][0]["n"] == 1, record.get("turns")
