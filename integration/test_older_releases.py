"""Releases the adapters never saw: the blocks still arrive, verbatim (issue 25).

One session per CLI of the older set (integration/older/package.json: each release >= 3 months
before the pinned one), through wrapagent with a guard:

1. the first message reaches the model as the guard's block + the typed text, byte for byte;
2. the tool's reset command (`/new`, `/clear`), then a second message: a fresh conversation
   with freshly computed blocks (the guard counts its runs), verbatim again;
3. the session record says which readiness rule fired for each conversation (`ready_by`):
   `"marker"` where the adapter's own screen markers still fit the release, `"generic"` where
   they do not (codex 0.140 after `/new`: before the fallback it got no blocks at all, its
   composer shows rotating suggestions where the adapter waited for `Ask Codex to do anything`),
   `"quiet"` after a reset of a tool without reset markers; as measured by
   bench/ready_timeline.py (bench/ready_timeline.md); and the release's version.

And the reported case itself: codex 0.140 with the codex markers wrapagent had before the
fallback (`Ask Codex to do anything`, which 0.140 never shows), where the first key fires the
generic rule at start and the bound fires it after `/new`.

Kept to one CLI start per tool: the suite's CI budget is tight.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import composer_shown_empty, send_message, submit_command, tool_params
from .test_session_turns import block, counting_guard

pytestmark = pytest.mark.integration

RESET = {"codex": "/new", "claude": "/clear", "gemini": "/clear", "opencode": "/new"}
TIMEOUT = {"codex": 150, "claude": 150, "gemini": 200, "opencode": 300}

#: the readiness rule expected to fire, per conversation (first message, after the reset), from
#: the measured screens of the older releases (bench/ready_timeline.md). After a reset, tools
#: without `reset_ready_patterns` are ready when output is quiet (`quiet`, wrapagent/inject/readiness.py).
READY_BY = {
    # 0.140: no `Ask Codex to do anything`, but the `› ` prompt glyph at start; after /new it
    # redraws only the suggestion after the glyph (cells that changed), so the screen drawn since
    # the reset has no `› `: the generic rule finds the composer
    "codex": ("marker", "generic"),
    "claude": ("marker", "quiet"),     # 2.1.220: `❯` + `? for shortcuts`, as the adapter expects
    "gemini": ("marker", "quiet"),     # 0.45.2: `Type your message or @path/to/file`
    "opencode": ("marker", "quiet"),   # 1.15.4: `Ask anything...`
}

FIRST = "first message to an older release"
SECOND = "first message after the reset"


def configure(cli_env) -> None:
    cli_env.write_wrapagent_config(hooks_toml=counting_guard(cli_env))


def wait_logged(cli_env, term, pattern: str, timeout: float = 30.0) -> str:
    """Wait until the session's log (written live) has a line matching `pattern`; that line.

    The composer of a release the markers miss is found by the generic rule only after output
    was quiet `fallback_quiet_secs`; a message typed before that passes without the blocks (the
    keys are the user's). A person who waits for the screen to settle gets them: the test types
    once wrapagent said it saw the composer, not after a guessed pause.
    """
    end = time.monotonic() + timeout
    rx = re.compile(pattern)
    while True:
        for log in sorted((cli_env.state_dir / "projects").glob("*/*/session.log")):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                if rx.search(line):
                    return line
        if time.monotonic() > end:
            logs = [p.read_text(errors="replace") for p in (cli_env.state_dir / "projects").glob("*/*/session.log")]
            raise AssertionError(f"no session.log line matching {pattern!r} within {timeout:.0f} s\n"
                                 f"logs: {logs}\n" + term.dump("screen"))
        time.sleep(0.1)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_older_release_first_message_and_reset(make_cli_env, older_cli_bin_dir, tool):
    cli_env = make_cli_env(tool, bin_dir=older_cli_bin_dir)
    term = cli_env.spawn(cli_env.interactive_args())
    first_message_and_reset(cli_env, term, tool, READY_BY[tool], wait_for_ready_line=True)


ADAPTER_OF_BEFORE = """
import sys
import wrapagent.inject.adapters.codex as codex
from wrapagent.values import replace
before = ("Ask Codex to do anything",)
codex.ADAPTER = replace(codex.ADAPTER, ready_patterns=before, reset_ready_patterns=before)
from wrapagent.__main__ import main
sys.exit(main(sys.argv[1:]))
"""
"""wrapagent with the codex markers it had before this fallback: the placeholder of 0.150+."""


@pytest.mark.parametrize("tool", [pytest.param("codex", marks=pytest.mark.timeout(TIMEOUT["codex"]))])
def test_codex_0_140_with_the_markers_of_before(make_cli_env, older_cli_bin_dir, tool):
    """The reported case: codex < 0.150 never shows `Ask Codex to do anything`.

    Before the fallback: no blocks for the whole session, the record said `lost: the tool never
    showed its ready screen`. Now the screen model finds codex's composer by its structure at start
    (the last `›` line at the bottom: recorded as the marker rule, although the marker text is not
    there), and the generic rule finds it after `/new`.
    The first message is typed as a person would, once the screen has settled (0.6 s of quiet),
    without waiting for wrapagent's word: the first key fires the generic rule when the bound
    is not over yet.
    """
    cli_env = make_cli_env(tool, bin_dir=older_cli_bin_dir)
    term = cli_env.spawn_wrapagent([tool, *cli_env.interactive_args()], cols=120, rows=40,
                                   python_args=("-c", ADAPTER_OF_BEFORE))
    first_message_and_reset(cli_env, term, tool, ("marker", "generic"), wait_for_ready_line=False)


def first_message_and_reset(cli_env, term, tool: str, ready_by: tuple[str, str], *,
                            wait_for_ready_line: bool) -> None:
    """First message, reset, second message: both verbatim with fresh blocks; the record's rules."""
    spec = cli_env.spec  # the release's own (integration/cliversions.py)
    assert cli_env.version, f"no version found for the older {tool}"
    configure(cli_env)
    mock = cli_env.mock
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    if wait_for_ready_line:
        wait_logged(cli_env, term, rf"injection: {tool} ready after .* \((marker|generic) rule\)")
        term.wait_quiet(spec.settle, timeout=10)
    else:
        term.wait_quiet(0.6, timeout=30)
    mark = mock.mark()

    # 1. the first message: the block, then exactly what was typed
    send_message(term, FIRST)
    texts = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts == [block(1) + FIRST], mock.summary()
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)

    # 2. the reset, then a message in a fresh conversation with fresh blocks
    term.wait_quiet(0.5, timeout=10)
    submit_command(term, tool, RESET[tool])
    wait_logged(cli_env, term, r"injection: (composer ready again for conversation 2 \((marker|generic) rule\)"
                               r"|output quiet after the reset; conversation 2 armed)")
    term.wait_quiet(1.0, timeout=30)
    term.wait_until(composer_shown_empty(tool), f"{tool}'s composer empty after {RESET[tool]}", timeout=30)
    send_message(term, SECOND)
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts == [block(1) + FIRST, block(2) + SECOND], mock.summary()
    second = mock.turn_requests(api=spec.api, since=mark)[1]
    assert second["turn"] == 1, "the reset did not start a new conversation"
    # its reply sent and drawn before the quit keys: during a turn codex takes Ctrl-C for an
    # interrupt and claude its first Ctrl-C, and neither exits
    end = time.monotonic() + spec.reply_timeout
    while len(mock.reply_times(since=mark)) < 2:
        assert time.monotonic() < end, "no reply to the message after the reset\n" + mock.summary()
        time.sleep(0.1)
    term.wait_quiet(1.0, timeout=30)

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)

    record = cli_env.sessions()[-1]
    injections = record["injections"]
    assert [(i["conversation"], i["status"]) for i in injections] == [(1, "submitted"), (2, "submitted")], injections
    assert [i["text"] for i in injections] == [block(1), block(2)]
    assert (record["injection"]["ready_by"], *(i["ready_by"] for i in injections)) == (
        ready_by[0], *ready_by), injections
    assert record.get("tool_version") == cli_env.version, {k: record.get(k) for k in ("tool", "tool_version")}
    if tool == "opencode":  # both conversations (before and after the reset), read from the older store
        assert cli_env.assert_transcripts_are_opencode_exports(record) == 2
