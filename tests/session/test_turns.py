"""Turn tracking and the waiting_for_input firing rules, with a fake clock (no threads, no sleeps)."""

from __future__ import annotations

import threading
import time

from wrapagent.session.turns import RESUME_LOOK_SECS, MAX_TURNS_RECORDED, HookFirer, TurnTracker

QUIET = 3.0


def tracker() -> tuple[TurnTracker, list[int]]:
    fired: list[int] = []
    return TurnTracker(QUIET, fired.append, to_wall=lambda t: f"t{t:g}"), fired


def run_until_quiet(t: TurnTracker, start: float, outputs: list[float], end: float) -> float:
    """Output at the given times, polling whenever the loop would (at each deadline); returns last_output."""
    last = start
    pending = sorted(outputs)
    now = start
    while now < end:
        d = t.deadline(last)
        nxt = pending[0] if pending else None
        if d is None and nxt is None:
            break
        if nxt is not None and (d is None or nxt < d):
            now = last = pending.pop(0)
            continue
        now = d
        t.poll(now, last)
    return last


def test_no_timer_and_no_fire_before_the_first_submission() -> None:
    t, fired = tracker()
    assert t.deadline(5.0) is None
    t.resumed(1.0)          # an Enter on an empty composer at start-up
    assert t.deadline(5.0) is None
    t.poll(100.0, 5.0)
    assert fired == []


def test_fires_once_after_quiet_then_no_timer() -> None:
    t, fired = tracker()
    t.submitted(10.0)
    # the agent thinks: a spinner every second for 6 s, then the reply, then quiet
    run_until_quiet(t, 10.0, [10.1 + k for k in range(7)], end=100.0)
    assert fired == [1]
    assert t.deadline(16.1) is None              # nothing pending: the proxy sleeps
    t.poll(1000.0, 16.1)
    assert fired == [1]                          # never twice for the same wait
    assert t.turns == [{"n": 1, "at": "t10", "quiet_at": "t16.1"}]


def test_gaps_shorter_than_quiet_do_not_fire() -> None:
    t, fired = tracker()
    t.submitted(0.0)
    for k in range(1, 20):                       # output every 1.4 s (codex's longest gap)
        now = k * 1.4
        t.poll(now, now - 1.4 if k > 1 else 0.0)
        assert fired == []
        t.poll(now, now)
    assert fired == []


def test_second_turn_fires_with_its_number() -> None:
    t, fired = tracker()
    t.submitted(0.0)
    run_until_quiet(t, 0.0, [0.5], end=50.0)
    t.submitted(60.0)
    run_until_quiet(t, 60.0, [60.5, 61.0], end=100.0)
    assert fired == [1, 2]
    assert [e["n"] for e in t.turns] == [1, 2]


def test_enter_on_empty_composer_rearms_only_if_the_tool_reacts() -> None:
    t, fired = tracker()
    t.submitted(0.0)
    run_until_quiet(t, 0.0, [0.5], end=50.0)     # a permission prompt shows: wait 1
    t.resumed(60.0)                              # Enter that changes nothing on screen
    t.poll(63.0, 0.5)
    assert fired == [1] and t.deadline(0.5) is None
    t.resumed(70.0)                              # Enter that allows the tool: it works again
    run_until_quiet(t, 70.0, [70.2, 71.0], end=100.0)
    assert fired == [1, 1]                       # the same turn, a new wait
    assert t.turns[0]["waits"] == 2


def test_silent_tool_after_a_submission_is_a_wait() -> None:
    t, fired = tracker()
    t.submitted(0.0)
    t.poll(QUIET, -1.0)
    assert fired == [1]


def test_turns_list_is_capped() -> None:
    t, _ = tracker()
    for k in range(MAX_TURNS_RECORDED + 5):
        t.submitted(float(k))
    record: dict = {}
    t.record_into(record)
    assert len(record["turns"]) == MAX_TURNS_RECORDED
    assert record["turns_total"] == MAX_TURNS_RECORDED + 5


class Result:
    def __init__(self, turn: int, ok: bool) -> None:
        self.turn = turn
        self._ok = ok

    def ok(self) -> bool:
        return self._ok

    def to_record(self) -> dict:
        return {"name": "waiting_for_input", "kind": "lifecycle", "command": f"n {self.turn}",
                "exit_code": 0 if self._ok else 1, "duration_s": 0.0, "timed_out": False, "error": None}


def test_firer_runs_off_the_caller_thread_and_aggregates() -> None:
    threads: list[str] = []
    release = threading.Event()
    started = threading.Event()

    def run(turn: int, reason: str) -> Result:
        threads.append(threading.current_thread().name)
        started.set()
        release.wait(30)
        return Result(turn, ok=turn != 2)

    firer = HookFirer(run)
    firer.fire(1)                 # returns at once although the hook blocks
    assert started.wait(30)
    firer.fire(2)
    firer.fire(3)                 # replaces the queued 2: stale notifications are dropped
    release.set()
    for _ in range(3000):
        if firer.runs == 2:
            break
        time.sleep(0.01)
    firer.close(timeout=30)
    entry = firer.record_entry()
    assert entry is not None
    assert threads and all(name == "wrapagent-waiting" for name in threads)
    assert entry["runs"] == 2 and entry["turn"] == 3 and entry["skipped"] == 1
    assert entry["failed"] == 0 and entry["command"] == "n 3"
    assert "reasons" not in entry                 # only idle waits: nothing new to say


def test_firer_passes_the_reason_and_counts_each() -> None:
    seen: list[tuple[int, str]] = []

    def run(turn: int, reason: str) -> Result:
        seen.append((turn, reason))
        return Result(turn, ok=True)

    firer = HookFirer(run)
    firer.fire(1, "dialog")
    for _ in range(3000):
        if firer.runs == 1:
            break
        time.sleep(0.01)
    firer.fire(1)
    for _ in range(3000):
        if firer.runs == 2:
            break
        time.sleep(0.01)
    firer.close(timeout=30)
    entry = firer.record_entry()
    assert seen == [(1, "dialog"), (1, "idle")]
    assert entry is not None and entry["reasons"] == {"dialog": 1, "idle": 1}


def test_firer_fail_open() -> None:
    def run(turn: int, reason: str) -> Result:
        raise RuntimeError("boom")

    firer = HookFirer(run)
    firer.fire(1)
    for _ in range(3000):
        if firer.runs == 1:
            break
        time.sleep(0.01)
    firer.close(timeout=30)
    entry = firer.record_entry()
    assert entry is not None and entry["failed"] == 1 and "boom" in entry["error"]


def test_firer_without_runs_has_no_entry() -> None:
    firer = HookFirer(lambda turn, reason: Result(turn, True))
    firer.close(timeout=1)
    assert firer.record_entry() is None


def test_injector_and_tracker_sleep_once_the_wait_fired() -> None:
    """The steady state of a whole session: no timer, no wake fd; output only for the followed
    screen (a tool with a screen shape: its emulator runs in a thread of its own)."""
    from wrapagent.inject.adapters import adapter_for
    from wrapagent.inject.injector import SessionInjector

    fired: list[int] = []
    turns = TurnTracker(QUIET, fired.append, to_wall=str)
    now = 100.0
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: "",
                          wake_fd=None, clock=lambda: now, turns=turns, on_reset=lambda: None)
    inj.on_output(b"\x1b[?2004hdemo> ", now)
    now += 0.5
    inj.poll(now)
    assert inj.deadline() is None and inj.wake_fd() is None   # ready, nothing submitted yet
    inj.on_input(b"hello", now)
    inj.poll(now)
    inj.on_input(b"\r", now)
    inj.poll(now)
    assert inj.watch_output is (inj.view is not None)
    inj.last_output = now + 1.0                                # the reply (a plain store)
    assert inj.deadline() == now + 1.0 + QUIET
    now += 1.0 + QUIET
    inj.poll(now)
    assert fired == [1]
    assert inj.deadline() is None and inj.wake_fd() is None and not inj.done


def test_firer_close_drops_a_run_not_started_and_waits_for_the_running_one() -> None:
    release = threading.Event()
    started = threading.Event()
    done: list[int] = []

    def run(turn: int, reason: str) -> Result:
        started.set()
        release.wait(30)
        done.append(turn)
        return Result(turn, ok=True)

    firer = HookFirer(run)
    firer.fire(1)
    assert started.wait(30)
    firer.fire(2)                                  # queued behind the running hook
    closer = threading.Thread(target=firer.close, args=(30,))
    closer.start()
    for _ in range(3000):
        if firer.closed:
            break
        time.sleep(0.01)
    release.set()                                  # the running hook ends while close waits
    closer.join(30)
    assert not closer.is_alive()
    assert done == [1]                             # 2 never ran: the tool had exited
    entry = firer.record_entry()
    assert entry is not None and entry["runs"] == 1 and entry["skipped"] == 1


def test_an_interrupted_turn_is_marked_at_its_stop() -> None:
    t, fired = tracker()
    asked: list[int] = []
    t.interrupted = lambda turn: asked.append(turn) or turn == 1
    assert t.working() is None
    t.submitted(0.0)
    assert t.working() == 1                      # a turn under way: interrupt keys count
    t.poll(10.0, 1.0)
    assert t.working() is None                   # the agent waits
    assert fired == [1] and asked == [1] and t.interrupted_turn == 1
    t.submitted(20.0)
    t.poll(30.0, 21.0)
    assert fired == [1, 2] and t.interrupted_turn == 1
    assert [e.get("interrupted") for e in t.turns] == [True, None]


def test_quiet_while_the_screen_says_the_agent_works_is_no_wait() -> None:
    """A tool frozen mid-turn (a loaded machine) is quiet with its interrupt hint on screen:
    that is still its turn. The wait comes at the first quiet look after the hint went."""
    t, fired = tracker()
    screen = {"working": True}
    looks: list[float] = []

    def working() -> bool:
        looks.append(len(looks))
        return screen["working"]

    t.screen_working = working
    t.submitted(0.0)
    t.poll(0.5 + QUIET, 0.5)                     # output at 0.5, frozen since, hint on screen
    assert fired == [] and t.working() == 1
    assert t.deadline(0.5) == 0.5 + 2 * QUIET    # looked again one quiet period later
    t.poll(0.5 + 2 * QUIET, 0.5)
    assert fired == []
    screen["working"] = False                    # the reply came, the hint went
    last = run_until_quiet(t, 0.5 + 2 * QUIET, [8.0, 9.0], end=100.0)
    assert fired == [1] and last == 9.0
    assert t.turns[0]["quiet_at"] == "t9"
    assert len(looks) == 3


def test_an_enter_that_changed_nothing_is_not_asked_about() -> None:
    """The screen is asked only when the tool drew something since the Enter: an Enter that
    changed nothing is the same wait, whatever the screen says."""
    t, fired = tracker()
    t.screen_working = lambda: True
    t.submitted(0.0)
    t.screen_working = None
    run_until_quiet(t, 0.0, [0.5], end=50.0)
    assert fired == [1]
    same: list[int] = []
    t.on_same_wait = same.append
    t.screen_working = lambda: True
    t.resumed(60.0)                              # an Enter; nothing drawn after it
    t.poll(63.0, 0.5)
    assert same == [1] and fired == [1]


def test_the_tool_drawing_its_working_hint_after_a_wait_resumes_the_turn() -> None:
    """A wait taken while the tool was stalled (nothing drawn yet, no hint): when it then draws
    and its screen says the agent works, the same turn goes on and its real end is a wait."""
    t, fired = tracker()
    screen = {"working": False}
    t.screen_working = lambda: screen["working"]
    t.submitted(0.0)
    t.poll(0.1 + QUIET, 0.1)                     # drew at 0.1, then stalled: a wait
    assert fired == [1] and t.deadline(0.1) is None
    assert t.deadline(5.0) == 5.0 + 0.25         # it drew at 5.0: look once it pauses
    t.poll(5.1, 5.0)
    assert t.working() is None                   # not yet due
    screen["working"] = True
    t.poll(5.25, 5.0)
    assert t.working() == 1 and fired == [1]     # the same turn goes on
    screen["working"] = False
    run_until_quiet(t, 5.25, [6.0, 7.0], end=100.0)
    assert fired == [1, 1] and t.turns[0]["waits"] == 2


def test_a_spinner_that_never_pauses_after_a_wait_is_looked_at_and_resumes_the_turn() -> None:
    """Seen on opencode under load: a wait taken before its turn began (3 s of nothing), then its
    spinner, redrawn every 0.1 s with `esc interrupt` on screen. Output that never pauses is still
    looked at, within 2 x RESUME_LOOK_SECS of its start, and the same turn goes on."""
    t, fired = tracker()
    screen = {"working": False}
    t.screen_working = lambda: screen["working"]
    t.submitted(0.0)
    t.poll(QUIET, 0.0)                           # nothing drawn since the submission, no hint: a wait
    assert fired == [1] and t.working() is None
    screen["working"] = True                     # the turn begins: its hint and its spinner
    now = 10.0
    while t.working() is None and now < 11.0:    # a frame every 0.1 s from 10.0 on
        due = t.deadline(now)
        assert due is not None and due <= 10.0 + 2 * RESUME_LOOK_SECS
        t.poll(now, now)
        now = round(now + 0.1, 3)
    assert t.working() == 1 and now <= 10.0 + 2 * RESUME_LOOK_SECS + 0.1 and fired == [1]


def test_output_after_a_wait_without_the_hint_is_looked_at_once() -> None:
    t, fired = tracker()
    looks: list[int] = []
    t.screen_working = lambda: looks.append(1) or False
    t.submitted(0.0)
    run_until_quiet(t, 0.0, [0.5], end=50.0)
    assert fired == [1] and looks == [1]         # (asked once at the quiet: no hint)
    t.poll(60.25, 60.0)                          # the user's key echoed: one look, no hint
    assert looks == [1, 1] and t.working() is None and t.deadline(60.0) is None
    t.poll(70.0, 60.0)
    assert looks == [1, 1]


def begin_watched() -> tuple[TurnTracker, list[int], dict[str, bool]]:
    """A tracker whose screen watch tells when the turn shows under way (`watch_begin`)."""
    t, fired = tracker()
    pressed = {"interrupt": False}
    t.watch_begin = lambda: True
    t.screen_working = lambda: False
    t.interrupt_pressed = lambda turn: pressed["interrupt"]
    return t, fired, pressed


def test_a_turn_never_shown_under_way_is_no_wait_until_it_is() -> None:
    """A loaded machine froze the tool between the Enter and its first spinner frame for a minute
    (opencode, measured): quiet all along, no hint on screen. Not the agent's stop."""
    t, fired, _ = begin_watched()
    t.submitted(0.0, "fix the tests")
    run_until_quiet(t, 0.0, [0.1], end=60.0)     # the message drawn, then nothing for 60 s
    assert fired == [] and t.working() == 1
    t.saw_working()                              # the spinner, at last (the emulator's thread)
    run_until_quiet(t, 60.0, [60.0 + k for k in range(7)], end=200.0)
    assert fired == [1]
    assert t.turns[0]["quiet_at"] == "t66"


def test_a_turn_never_shown_under_way_ends_after_begin_wait_secs() -> None:
    from wrapagent.session.turns import BEGIN_WAIT_SECS

    t, fired, _ = begin_watched()
    t.submitted(10.0, "hello")
    last = run_until_quiet(t, 10.0, [10.5], end=10.0 + BEGIN_WAIT_SECS - QUIET - 0.01)
    assert fired == [] and t.working() == 1      # every poll so far came before the bound
    run_until_quiet(t, 10.0 + BEGIN_WAIT_SECS - QUIET - 0.01, [], end=10.0 + BEGIN_WAIT_SECS + 2 * QUIET)
    assert fired == [1] and last == 10.5


def test_commands_shell_lines_resumes_and_interrupts_are_not_held_for_the_hint() -> None:
    for text in ("/status", "  /help", "!ls"):
        t, fired, _ = begin_watched()
        t.submitted(0.0, text)
        run_until_quiet(t, 0.0, [0.2], end=50.0)
        assert fired == [1], text
    t, fired, pressed = begin_watched()
    t.submitted(0.0, "do it")
    pressed["interrupt"] = True                  # Esc before the spinner ever showed
    run_until_quiet(t, 0.0, [0.2], end=50.0)
    assert fired == [1]
    t, fired, _ = begin_watched()
    t.saw_working()                              # before any turn: tells nothing of turn 1
    t.submitted(0.0, "go")
    t.saw_working()
    run_until_quiet(t, 0.0, [1.0], end=50.0)
    assert fired == [1]
    t.resumed(60.0)                              # an Enter on an empty composer, the tool reacts
    run_until_quiet(t, 60.0, [60.5], end=100.0)
    assert fired == [1, 1]


def test_a_screen_look_that_says_working_counts_as_the_turn_begun() -> None:
    t, fired, _ = begin_watched()
    screen = {"working": True}
    t.screen_working = lambda: screen["working"]
    t.submitted(0.0, "go")
    t.poll(QUIET + 0.5, 0.5)                     # frozen with the hint on screen
    screen["working"] = False
    run_until_quiet(t, QUIET + 0.5, [5.0], end=50.0)
    assert fired == [1]


def test_the_next_turn_needs_its_own_sight_of_the_hint() -> None:
    t, fired, _ = begin_watched()
    t.submitted(0.0, "one")
    t.saw_working()
    run_until_quiet(t, 0.0, [1.0], end=20.0)
    assert fired == [1]
    t.submitted(20.0, "two")                     # the hint seen for turn 1 says nothing of turn 2
    run_until_quiet(t, 20.0, [20.1], end=60.0)
    assert fired == [1]
