"""Undo a turn on the real CLIs: the agent writes files with its own tool, `wrapagent undo` takes
its last turn back while the session runs, the agent is told, `wrapagent redo` puts it back.

The mock model answers a message holding `(write /PATH TEXT)` directives with tool calls
(mock_tools.py): codex runs `exec_command`, claude its `Write`, gemini `write_file`, opencode
`write`, each started so that the tool runs without an approval dialog. One CLI start per tool:

1. turn 1 creates a.txt; turn 2 rewrites a.txt and creates b.txt (both through the tool);
2. `wrapagent sessions diff last --turn 2` shows turn 2's change and nothing of turn 1;
3. `wrapagent undo`: exactly the bytes after turn 1 (a.txt `one\\n`, no b.txt);
4. the next message reaches the model with one `<prompt-guard name="undo">` block naming
   a.txt and b.txt before the typed text; on codex, that plain turn changed nothing, so
   `undo` again takes back turn 1 (no a.txt) and `redo` puts turn 1 back;
5. `wrapagent redo`: turn 2's bytes are back; the message after it says so (`redo`);
6. after the quit, the record lists each turn's files and `sessions diff ID --turn 1` shows
   turn 1's change.

Every step waits for a condition (the reply on screen, the turn's checkpoint in the store),
never a fixed time.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 240, "claude": 240, "gemini": 320, "opencode": 420}
#: How each CLI lets its tool run without asking: the tests are about undo, not approval.
NO_APPROVAL = {
    "codex": ["--dangerously-bypass-approvals-and-sandbox"],
    "claude": ["--permission-mode", "acceptEdits"],
    "gemini": ["--approval-mode", "yolo"],
    "opencode": [],  # its default permissions let the agent write files
}


def store_refs(cli_env) -> list[str]:
    """The last part of every ref in wrapagent's store of the project (`before`, `turn-1-stop`…)."""
    stores = sorted((cli_env.state_dir / "stores").glob("*"))
    if not stores:
        return []
    out = subprocess.run(["git", f"--git-dir={stores[0]}", "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, env=cli_env.env).stdout
    return [ref.rsplit("/", 1)[-1] for ref in out.split()]


def ref_file(cli_env, name: str, path: str) -> bytes | None:
    """`path` (from the project's root) in the store's checkpoint `name`; None when it has none."""
    stores = sorted((cli_env.state_dir / "stores").glob("*"))
    out = subprocess.run(["git", f"--git-dir={stores[0]}", "for-each-ref", "--format=%(refname)"],
                         capture_output=True, text=True, env=cli_env.env).stdout
    ref = next(r for r in out.split() if r.rsplit("/", 1)[-1] == name)
    shown = subprocess.run(["git", f"--git-dir={stores[0]}", "show", f"{ref}:{path}"], capture_output=True,
                           env=cli_env.env)
    return shown.stdout if shown.returncode == 0 else None


def wait_ref(cli_env, term, name: str, timeout: float = 90.0, holds: dict[str, bytes | None] | None = None) -> None:
    """The store's checkpoint `name` exists and, with `holds`, has those files (None: absent).

    A turn's stop checkpoint is taken when the agent waits: a wait seen while a loaded machine
    stalled the tool before its turn began is followed by the tool working again and the turn's
    real end, whose checkpoint replaces it (session/turns.py). The turn's writes tell them apart.
    """
    end = time.monotonic() + timeout
    while name not in store_refs(cli_env) or any(
            ref_file(cli_env, name, path) != data for path, data in (holds or {}).items()):
        if time.monotonic() > end:
            held = {path: ref_file(cli_env, name, path) for path in holds or {}} if name in store_refs(cli_env) else {}
            raise AssertionError(f"store ref {name} never came with {holds}: {store_refs(cli_env)} {held}\n"
                                 + term.dump("screen"))
        time.sleep(0.1)


def wrapagent(cli_env, *args: str) -> subprocess.CompletedProcess:
    """`wrapagent ARGS` in the project, as the user would type it in another terminal."""
    return subprocess.run([sys.executable, "-m", "wrapagent", *args], cwd=cli_env.cwd, env=cli_env.env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def turn(cli_env, term, mark: int, n: int, text: str, tail: str,
         holds: dict[str, bytes | None] | None = None) -> str:
    """Send message n and wait for its reply and its stop checkpoint (with `holds`: the files the
    turn left, see `wait_ref`); what the model got."""
    spec = cli_env.spec
    send_message(term, text, tail)
    texts = cli_env.mock.wait_for_turns(n, api=spec.api, timeout=spec.reply_timeout, since=mark)
    term.wait_for(f"MOCK-REPLY-{n}", timeout=spec.reply_timeout)
    wait_ref(cli_env, term, f"turn-{n}-stop", holds=holds)
    return texts[n - 1]


def undo_block(what: str, received: str, typed: str) -> str:
    """The `<prompt-guard name="undo">` block in front of the typed text (checked here)."""
    assert received.endswith(typed), received
    block = received[: len(received) - len(typed)]
    assert block.startswith('<prompt-guard name="undo">\n') and block.endswith("</prompt-guard>\n\n"), received
    assert block.count("<prompt-guard") == 1, received
    assert f"`wrapagent {what}`" in block, received
    return block


GUARD = '[[prompt_guard]]\nname = "g"\ncommand = "echo first only"\n'
FIRST_BLOCK = '<prompt-guard name="g">\nfirst only\n</prompt-guard>\n\n'


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_undo_and_redo_a_turn_the_agent_wrote(cli_env, tool):
    """No hook configured at all: the undo block is the only thing wrapagent ever types."""
    undo_and_redo(cli_env, tool, guard=False)


@pytest.mark.parametrize("tool", [pytest.param(t, marks=pytest.mark.timeout(TIMEOUT[t]), id=t)
                                  for t in ("codex", "claude")])
def test_undo_block_beside_a_configured_guard(cli_env, tool):
    """A guard on the first message: the undo block comes alone, later, as with no guard."""
    undo_and_redo(cli_env, tool, guard=True)


#: Where the undo goes on past a plain turn. Which turn comes next is the wrapper's business, not
#: the CLI's (each CLI's turn boundaries are already proven above): one CLI shows it on real turns.
AGAIN_ON = {"codex"}


def undo_again_after_a_plain_turn(cli_env, a, b) -> None:
    """Turn 3 (no tool call) changed nothing: `undo` goes on to turn 1, `redo` puts turn 1 back."""
    again = wrapagent(cli_env, "undo")
    assert again.returncode == 0 and "undid turn 1" in again.stdout, again.stdout + again.stderr
    assert not a.exists() and not b.exists()
    back = wrapagent(cli_env, "redo")
    assert back.returncode == 0 and "redid turn 1" in back.stdout, back.stdout + back.stderr
    assert a.read_bytes() == b"one\n" and not b.exists()


def undo_and_redo(cli_env, tool: str, guard: bool) -> None:
    spec = SPECS[tool]
    mock = cli_env.mock
    a, b = cli_env.cwd / "a.txt", cli_env.cwd / "b.txt"
    if guard:
        cli_env.write_wrapagent_config(hooks_toml=GUARD)
    term = cli_env.spawn(cli_env.interactive_args(NO_APPROVAL[tool]))
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    wait_ref(cli_env, term, "before")
    mark = mock.mark()

    # 1. two turns, each writing through the agent's own tool
    typed = f"(write {a} one) start turn one"
    first = turn(cli_env, term, mark, 1, typed, "start turn one", holds={"a.txt": b"one\n", "b.txt": None})
    assert first == (FIRST_BLOCK if guard else "") + typed
    assert a.read_bytes() == b"one\n" and not b.exists()
    turn(cli_env, term, mark, 2, f"(write {a} two) (write {b} second file) go turn two", "go turn two",
         holds={"a.txt": b"two\n", "b.txt": b"second file\n"})
    assert (a.read_bytes(), b.read_bytes()) == (b"two\n", b"second file\n")
    calls = [r["tool_call"]["arguments"] for r in mock.turn_requests(api=spec.api, since=mark) if r.get("tool_call")]
    assert len(calls) == 3, mock.summary()          # the files were written by the CLI's tool, one call each

    # 2. the turn's diff: turn 2's change only
    diff = wrapagent(cli_env, "sessions", "diff", "last", "--turn", "2")
    assert diff.returncode == 0, diff.stderr
    assert re.search(r"^-one$", diff.stdout, re.M) and re.search(r"^\+two$", diff.stdout, re.M), diff.stdout
    assert re.search(r"^\+second file$", diff.stdout, re.M), diff.stdout

    # 3. undo while the session runs: exactly the bytes after turn 1
    undone = wrapagent(cli_env, "undo")
    assert undone.returncode == 0, undone.stderr
    assert "undid turn 2" in undone.stdout, undone.stdout
    assert a.read_bytes() == b"one\n" and not b.exists()

    # 4. the agent is told, once, on its next message
    received = turn(cli_env, term, mark, 3, "what changed since", "what changed since")
    block = undo_block("undo", received, "what changed since")
    assert "- a.txt\n" in block and "- b.txt\n" in block, block
    if tool in AGAIN_ON:
        undo_again_after_a_plain_turn(cli_env, a, b)

    # 5. redo: turn 2's bytes back, and the message after it says so
    redone = wrapagent(cli_env, "redo")
    assert redone.returncode == 0, redone.stderr
    assert "redid turn 2" in redone.stdout, redone.stdout
    assert (a.read_bytes(), b.read_bytes()) == (b"two\n", b"second file\n")
    received = turn(cli_env, term, mark, 4, "and after the redo", "and after the redo")
    block = undo_block("redo", received, "and after the redo")
    assert "- a.txt\n" in block and "- b.txt\n" in block, block

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)

    # 6. the record: each turn's files, the two undo blocks; a turn's diff by the session's id
    record = cli_env.wait_session_record(cli_env.interactive_args(NO_APPROVAL[tool]))
    later = [i for i in record.get("injections") or [] if i.get("message", 1) > 1]
    assert [(i["message"], i["status"]) for i in later] == [(3, "submitted"), (4, "submitted")], record.get("injections")
    files = {t["n"]: t.get("files") for t in record["turns"]}
    assert files[1] == ["a.txt"] and sorted(files[2]) == ["a.txt", "b.txt"], record["turns"]
    if tool in AGAIN_ON:  # turns 3 and 4 start from the tree the undo and the redo left
        assert files[3] == [] and files[4] == [], record["turns"]
    diff = wrapagent(cli_env, "sessions", "diff", record["id"], "--turn", "1")
    assert diff.returncode == 0, diff.stderr
    assert re.search(r"^\+one$", diff.stdout, re.M) and "b.txt" not in diff.stdout, diff.stdout
