"""Self-tests of the harness itself (no CLI needed, a few seconds): mock server, driver, process sweeping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from .clienv import CliEnv
from .driver import Terminal
from .mock_server import MockServer, extract_user_text


@pytest.fixture
def server(tmp_path):
    with MockServer(log_path=tmp_path / "mock.jsonl") as srv:
        yield srv


def _post(url: str, body: dict, headers: dict | None = None) -> tuple[int, str, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read()


def test_mock_responses_api_codex(server, tmp_path):
    env_ctx = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}
    typed = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "line one\nline two"}]}
    status, ctype, data = _post(server.url + "/v1/responses", {"model": "m", "stream": True, "input": [env_ctx, typed]})
    assert status == 200 and ctype == "text/event-stream"
    events = [line[7:] for line in data.decode().splitlines() if line.startswith("event: ")]
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "MOCK-REPLY-1" in data.decode().replace('"delta": "MOCK-RE", ', "")  # full text in .done events
    title = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Generate a concise, single-line task title …\n\nUser prompt:\nline one"}]}
    _post(server.url + "/v1/responses", {"model": "m", "stream": True, "input": [title]})
    # second turn: history has one assistant message -> reply 2
    asst = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "MOCK-REPLY-1"}]}
    turn2 = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}
    _, _, data2 = _post(server.url + "/v1/responses", {"stream": True, "input": [env_ctx, typed, asst, turn2]})
    assert "MOCK-REPLY-2" in data2.decode()
    assert [r["kind"] for r in server.requests] == ["turn", "title", "turn"]
    assert server.first_user_text("responses") == "line one\nline two"
    assert server.user_texts() == ["line one\nline two", "again"]
    logged = [json.loads(line) for line in (tmp_path / "mock.jsonl").read_text().splitlines()]
    assert [r["seq"] for r in logged] == [1, 2, 3] and logged[0]["body"]["input"][1] == typed


def test_mock_messages_api_claude(server):
    body = {
        "model": "claude",
        "stream": True,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                {"type": "text", "text": "<system-reminder>more</system-reminder>"},
                {"type": "text", "text": "what I typed"},
            ]}
        ],
    }
    _, ctype, data = _post(server.url + "/v1/messages?beta=true", body)
    text = data.decode()
    assert ctype == "text/event-stream" and "event: message_start" in text and text.rstrip().endswith('{"type": "message_stop"}')
    assert server.first_user_text("messages") == "what I typed"
    _, _, count = _post(server.url + "/v1/messages/count_tokens?beta=true", {"messages": body["messages"]})
    assert json.loads(count) == {"input_tokens": 42}
    head = urllib.request.Request(server.url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=10) as resp:
        assert resp.status == 200
    assert [r["kind"] for r in server.requests] == ["turn", "count_tokens", "probe"]


def test_mock_gemini(server):
    contents = [{"role": "user", "parts": [{"text": "<session_context>…</session_context>"}, {"text": "typed\ntext"}]}]
    _, _, router = _post(
        server.url + "/v1beta/models/flash-lite:generateContent",
        {"contents": contents, "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {}}},
    )
    routed = json.loads(json.loads(router)["candidates"][0]["content"]["parts"][0]["text"])
    assert routed["model_choice"] == "flash"
    _, ctype, data = _post(server.url + "/v1beta/models/flash:streamGenerateContent?alt=sse", {"contents": contents})
    assert ctype == "text/event-stream" and data.startswith(b"data: {") and b"MOCK-REPLY-1" in data
    assert [r["kind"] for r in server.requests] == ["router", "turn"]
    assert server.user_texts() == ["typed\ntext"]


def test_mock_chat_opencode(server):
    title = {"stream": True, "messages": [
        {"role": "system", "content": "You are a title generator. …"},
        {"role": "user", "content": "Generate a title for this conversation:\n"},
        {"role": "user", "content": "hi there"},
    ]}
    main = {"stream": True, "messages": [{"role": "system", "content": "You are opencode"}, {"role": "user", "content": "hi there"}]}
    _post(server.url + "/v1/chat/completions", title)
    _, _, data = _post(server.url + "/v1/chat/completions", main)
    lines = [line for line in data.decode().splitlines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    content = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or "" for line in lines[:-1] if json.loads(line[6:])["choices"]
    )
    assert content == "MOCK-REPLY-1"
    assert [r["kind"] for r in server.requests] == ["title", "turn"]
    assert server.user_texts("chat") == ["hi there"]


def test_extract_user_text_shapes():
    assert extract_user_text("chat", {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}) == "b"
    assert extract_user_text("messages", {"messages": [{"role": "user", "content": "plain"}]}) == "plain"
    assert extract_user_text("responses", {"input": "string input"}) == "string input"


# ------------------------------------------------------------------------------------------
# driver

ECHO_PROGRAM = textwrap.dedent(
    r"""
    import json, os, signal, sys, termios, tty, time, fcntl, struct
    log = open(sys.argv[1], "w")
    def size():
        rows, cols = struct.unpack("hh", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 4))
        return cols, rows
    def on_winch(*_):
        cols, rows = size()
        os.write(1, f"\x1b[2J\x1b[HSIZE {cols}x{rows}\r\nREADY> ".encode())
    signal.signal(signal.SIGWINCH, on_winch)
    tty.setraw(0)
    os.write(1, b"\x1b[?2004hREADY> ")
    while True:
        data = os.read(0, 4096)
        log.write(json.dumps([time.monotonic(), data.decode("latin-1")]) + "\n"); log.flush()
        if data == b"\x04":
            os.write(1, b"\r\nbye\r\n")
            sys.exit(7)
        os.write(1, data.replace(b"\r", b"\r\n"))
    """
)


def test_driver_typing_paste_resize_exit(tmp_path):
    prog = tmp_path / "echo.py"
    prog.write_text(ECHO_PROGRAM)
    log = tmp_path / "reads.jsonl"
    with Terminal([sys.executable, str(prog), str(log)], env={**os.environ, "TERM": "xterm-256color"}, cwd=str(tmp_path),
                  raw_log=tmp_path / "raw") as term:
        term.wait_for("READY>", timeout=10)
        writes: list[tuple[float, bytes]] = []
        write = term.write

        def recording(data):
            write(data)
            writes.append((time.monotonic(), data if isinstance(data, bytes) else data.encode()))

        term.write = recording
        term.type("abc")
        term.enter()
        term.paste("x\ny", after=0.2)
        term.wait_for("y", timeout=5)
        offset = term.resize(80, 24, blank=True)
        term.wait_for("SIZE 80x24", timeout=5)
        assert term.output_len > offset and len(term.screen_lines()) == 24
        status = term.quit([b"\x04"])
    assert status == 7
    reads = [json.loads(line) for line in log.read_text().splitlines()]
    # The program got every byte in order (a loaded machine may join reads: not asserted).
    assert "".join(d for _, d in reads).startswith("abc\r\x1b[200~x\ny\x1b[201~")
    # The pacing is the driver's: one key per write, measured where it is made, not where a
    # possibly descheduled reader sees it. Lower bounds only: sleeps never end early.
    assert [d for _, d in writes[:5]] == [b"a", b"b", b"c", b"\r", b"\x1b[200~x\ny\x1b[201~"]
    gaps = [writes[i + 1][0] - writes[i][0] for i in range(2)]
    assert all(g >= 0.019 for g in gaps), gaps
    assert writes[3][0] - writes[2][0] >= 0.24  # Enter: its own keystroke, >= 0.25 s after the last key
    assert writes[4][0] - writes[3][0] >= 0.19  # the paste: after=0.2
    assert term.status == 7 and term.eof


def test_driver_timeout_dumps_screen(tmp_path):
    with Terminal([sys.executable, "-c", "print('hello screen'); import time; time.sleep(30)"], cwd=str(tmp_path)) as term:
        with pytest.raises(AssertionError) as info:
            term.wait_for("never shown", timeout=1)
    assert "hello screen" in str(info.value) and "--- screen:" in str(info.value)


def test_leftover_daemon_is_found_and_killed(tmp_path, server):
    env = CliEnv.create("codex", tmp_path / "env", server, tmp_path / "no-bins")
    run = env.new_run(["daemonizer"], wrapped=True, label="test")
    # double fork: the sleeper is reparented away from us, only the env tag identifies it
    code = "import os,time\nif os.fork()==0:\n  os.setsid()\n  if os.fork()==0:\n    time.sleep(60)\n  os._exit(0)\nos.wait()"
    subprocess.run([sys.executable, "-c", code], env=env.run_env(run), cwd=env.cwd, check=True)
    with pytest.raises(AssertionError, match="left processes behind"):
        env.assert_run_clean(run, grace=0.5)
    assert env.leftovers() == []
    assert len(run.leftovers) == 1 and "python" in run.leftovers[0]
    deadline = time.monotonic() + 5
    while env.leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert env.reap_leftovers(grace=0) == []


def _usage_prompt_tokens(api: str, data: bytes) -> list[int]:
    """The input-token counts a streamed reply reports (every event that carries usage)."""
    found = []
    for line in data.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        usage = ((event.get("response") or {}).get("usage") or (event.get("message") or {}).get("usage")
                 or event.get("usage") or event.get("usageMetadata") or {})
        for key in ("input_tokens", "prompt_tokens", "promptTokenCount"):
            if key in usage:
                found.append(usage[key])
    return found


@pytest.mark.parametrize("api,path,body", [
    ("responses", "/v1/responses",
     lambda t: {"stream": True, "input": [{"type": "message", "role": "user",
                                           "content": [{"type": "input_text", "text": t}]}]}),
    ("messages", "/v1/messages?beta=true",
     lambda t: {"stream": True, "messages": [{"role": "user", "content": [{"type": "text", "text": t}]}]}),
    ("gemini", "/v1beta/models/flash:streamGenerateContent?alt=sse",
     lambda t: {"contents": [{"role": "user", "parts": [{"text": t}]}]}),
    ("chat", "/v1/chat/completions", lambda t: {"stream": True, "messages": [{"role": "user", "content": t}]}),
], ids=["responses", "messages", "gemini", "chat"])
def test_mock_reports_a_nearly_full_context_for_a_full_turn(server, api, path, body):
    from .mock_server import FULL_CONTEXT_TOKENS, PLAIN_INPUT_TOKENS

    _, _, full = _post(server.url + path, body("fill it (full)"))
    _, _, plain = _post(server.url + path, body("a plain one"))
    assert set(_usage_prompt_tokens(api, full)) == {FULL_CONTEXT_TOKENS}
    assert set(_usage_prompt_tokens(api, plain)) == {PLAIN_INPUT_TOKENS}


def test_cpu_time_keeps_the_costliest_tests_across_workers():
    """The CPU summary lists the TOP costliest tests, whether they ran here or in a worker."""
    from .cpu_time import TOP, CpuTime

    here = CpuTime()
    for n in range(TOP + 5):
        here._note(n / (TOP + 5), 1.0, f"t{n}")  # all below the worker's, whatever TOP is

    class Node:  # an xdist worker's sums arrive as lists, not tuples
        workeroutput = {"cpu_time": {"integration": [1, 100.0, 5.0]}, "cpu_costliest": [[100.0, 5.0, "worker-test"]]}

    here.pytest_testnodedown(Node(), None)
    assert len(here.costliest) == TOP
    assert here.costliest[0] == (100.0, 5.0, "worker-test")
    assert [nodeid for _cpu, _wall, nodeid in here.costliest[1:3]] == [f"t{TOP + 4}", f"t{TOP + 3}"]
    assert here.cpu["integration"] == 100.0


GEMINI_STALE_MENU = """\
────────────────────────────────────────────────────────────
 Shift+Tab to accept edits

 > /clear

 clear            Clear the screen and start a new session
 compress         Compresses the context by replacing it with a summary
 directory        Manage workspace directories
 quit             Exit the cli
 ▼
 (1/41)
 workspace (/directory)                  branch      sandbox         /model
"""


def test_gemini_menu_caught_up_only_when_the_menu_lists_the_command_alone():
    """The wait before a slash command's Enter: the recorded caught-up screens of both pinned
    gemini releases pass; the screen CI caught (`> /clear` over the menu for `/`, whose Enter
    sent `/clearclear` to the model) and a composer without the command do not."""
    from pathlib import Path

    from .clienv import gemini_menu_caught_up

    caught_up = gemini_menu_caught_up("/clear")
    screens = Path(__file__).resolve().parent.parent / "tests" / "screens" / "gemini"
    recorded = sorted(screens.glob("*/text-reset-typed.txt"))
    assert len(recorded) == 2
    for path in recorded:
        assert caught_up(path.read_text().splitlines()), path
    assert not caught_up(GEMINI_STALE_MENU.splitlines())
    assert not caught_up(GEMINI_STALE_MENU.replace("> /clear", "> /cle").splitlines())
    assert not caught_up(GEMINI_STALE_MENU.replace("> /clear", "> /clearclear").splitlines())
    only = "\n".join(line for line in GEMINI_STALE_MENU.splitlines()
                     if not line.strip().startswith(("compress", "directory", "quit", "▼", "(1/41)")))
    assert caught_up(only.splitlines())


def test_composer_shown_empty_on_the_recorded_screens():
    """The wait after a command, before the next message: every recorded screen of every CLI whose
    composer is empty passes; a composer holding text (the command still drawn) or a dialog does not."""
    from pathlib import Path

    from .clienv import composer_shown_empty

    screens = Path(__file__).resolve().parent.parent / "tests" / "screens"
    for tool in ("codex", "claude", "gemini", "opencode"):
        shown = composer_shown_empty(tool)
        recorded = sorted(screens.glob(f"{tool}/*/*.txt"))
        for state in ("empty", "text", "dialog"):
            paths = [p for p in recorded if p.name.startswith(state + "-")]
            assert paths or state == "dialog", (tool, state)  # (opencode's dialogs are not recorded)
            for path in paths:
                assert shown(path.read_text(encoding="utf-8").splitlines()) is (state == "empty"), path
    resets = sorted(screens.glob("*/*/text-reset-typed.txt"))
    assert len(resets) >= 4 and not any(composer_shown_empty(p.parts[-3])(p.read_text().splitlines())
                                        for p in resets)
