"""Conversations and their messages: resets, compactions, `every_message` guards, turns, one report each.

In a whole session the injector stays attached after the first message: a
submitted reset command starts a new conversation (fresh blocks, wait for
the composer again, a new report), a compaction gives the same conversation
fresh blocks, with `every_message` guards each later message of a
conversation gets blocks too (a report per message), and every other
submission goes to the turn tracker.

`Conversations` owns that bookkeeping: which conversation and message this
is, every report (the record's `injection` and later ones), the messages that
went bare, the compactions seen, and the session's callbacks that compute the
next blocks. It says what a submission starts (`submitted`); the injector
changes state on it and asks this object to open the next report.
"""

from __future__ import annotations

from wrapagent.inject.report import InjectionReport, close_unsubmitted
from wrapagent.inject.states import ARMED, CHATTING, COMMAND, HOLDING, STARTING, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Protocol

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.compaction_watch import CompactionWatch
    from wrapagent.inject.composer import Submission

    class TurnListener(Protocol):
        """Told about submissions; owns the timer that says the agent waits (session/turns.py)."""

        def submitted(self, now: float, text: str = "") -> None: ...
        def resumed(self, now: float) -> None: ...
        def deadline(self, last_output: float) -> float | None: ...
        def poll(self, now: float, last_output: float) -> None: ...

RESET = "reset"
"""A reset command was submitted: a new conversation."""
COMPACTED = "compacted"
"""A compaction command was submitted: the conversation's next message gets fresh blocks."""
NEXT_MESSAGE = "next message"
"""`every_message` guards: the next message of this conversation gets their blocks."""


class Conversations:
    """Which conversation and message, their reports, and what a submission starts (module docstring)."""

    def __init__(self, adapter: Adapter, *, inject: bool, prompt_given: bool,
                 turns: TurnListener | None, compaction_watch: CompactionWatch | None,
                 on_reset: Callable[[], None] | None,
                 on_message: Callable[[int, int], None] | None,
                 on_compaction: Callable[[int, int], None] | None) -> None:
        self.inject = inject
        """False: no blocks at all, only turns are followed (nothing is said of a message's blocks)."""
        self.prompt_given = prompt_given
        """The first message came on the command line: its turn is told at readiness."""
        self.reset_commands = adapter.reset_commands
        self.compact_commands = adapter.compact_commands
        self.turns = turns
        """Told every submission that is no reset or compaction (`session/turns.py`)."""
        self.compaction_watch = compaction_watch
        """Told every submission too: a turn's compaction notice counts, a typed command's not."""
        self.tool = adapter.name
        self.on_reset = on_reset
        """Called when a reset starts a new conversation: its blocks are computed again."""
        self.on_message = on_message
        """`every_message` guards: called with (conversation, message) when a later message is armed."""
        self.on_compaction = on_compaction
        """Called with (conversation, next message) when it was compacted: its blocks are computed again."""
        self.number = 1
        """The conversation (1, then one more per reset)."""
        self.message = 1
        """The message of this conversation the blocks are for."""
        self.report = InjectionReport(status="pending" if inject else "none")
        self.reports = [self.report]
        """Every conversation's and message's report, the first is the record's `injection`."""
        self.bare: list[str] = []
        """This conversation's messages that reached the tool without the blocks, and why."""
        self.compactions: list[dict[str, object]] = []
        """Each compaction seen: conversation, how (the command, or `automatic`), at."""

    def later_armed(self, state: str) -> bool:
        """A later message of this conversation is armed for its blocks (or passing as a command)."""
        return self.message > 1 and state in (ARMED, COMMAND)

    def submitted(self, sub: Submission, before: str, now: float) -> str | None:
        """A submission reached the tool (`before`: the injector's state at its Enter): what it
        starts (RESET, COMPACTED, NEXT_MESSAGE), or None. Turns are told here."""
        if self.compact_commands and sub.is_command_line(self.compact_commands):
            self._watch_turn(mute=True)
            if (before == CHATTING or self.later_armed(before)) and self.on_compaction is not None:
                return COMPACTED
            return None
        self._watch_turn(mute=sub.is_command(self.reset_commands))
        if self.reset_commands and sub.is_command(self.reset_commands):
            if (before == CHATTING or self.later_armed(before)) and self.on_reset is not None:
                return RESET
            return None
        if self.turns is not None:
            if sub.empty:
                if before != WAIT_READY:  # (a new conversation has no turn to resume: the Enter
                    self.turns.resumed(now)  # answered the reset's own question, codex's `/new`)
            else:
                self.turns.submitted(now, sub.text)
        if before == CHATTING and self.message == 1 and not self.inject and not self.prompt_given \
                and self.on_message is not None:
            return NEXT_MESSAGE  # no blocks for the first message, but a later one may get some
        return None

    def submitted_with_blocks(self, log: Callable[[str], None]) -> bool:
        """AWAIT_SUBMIT: the message the blocks went in front of was submitted; the report says
        so. True when the screen never showed them (not delivered): the record and log say so."""
        report = self.report
        if report.status == "none":
            return False  # no blocks for this message
        n, m = report.conversation, report.message
        if report.status == "not delivered":
            log(f"injection: conversation {n}, message {m}: submitted WITHOUT the blocks (not delivered)")
            return True
        report.status = "submitted"
        # Messages of this conversation that went before it, bare (typed before the
        # ready screen): the record says so even though the blocks did arrive later.
        report.notes.extend(f"before this message: {why}" for why in dict.fromkeys(self.bare))
        log("injection: first message submitted with the blocks" if (n, m) == (1, 1) else
            f"injection: conversation {n}, message {m}: submitted with the blocks")
        return False

    def prompt_submitted(self, now: float) -> bool:
        """The tool is up with the command line's prompt submitted: it is the first turn. True:
        `every_message` guards, the next typed message of this conversation gets their blocks."""
        if self.turns is not None:
            self.turns.submitted(now)
        return self.on_message is not None

    def _watch_turn(self, mute: bool) -> None:
        """A submission: a turn is under way (its compaction notice counts), unless it is a
        typed `/compact` or a reset (their notices are no automatic compaction)."""
        watch = self.compaction_watch
        if watch is None:
            return
        if mute:
            watch.mute()
        else:
            watch.submitted()

    def compacted_by_itself(self, state: str, log: Callable[[str], None]) -> bool:
        """The tool compacted by itself (`compaction_watch.py`): True when the next message gets
        the blocks.

        Counted where a typed `/compact` would be: after a message went with its blocks
        (chatting), or while a later message is armed. A message whose blocks are on their
        way now, or a conversation still waiting for its composer, gets them anyway.
        """
        watch = self.compaction_watch
        if watch is None or not watch.take():
            return False
        if state != CHATTING and not self.later_armed(state):
            log(f"injection: the tool compacted conversation {self.number} by itself "
                f"while the blocks were still to come ({state}); nothing more to do")
            return False
        return True

    # -- the next report -------------------------------------------------------------

    def new_conversation(self) -> None:
        """A reset command was submitted: fresh blocks for the next message, as for the first."""
        assert self.on_reset is not None
        self.on_reset()
        if self.message > 1 and self.report.status == "pending":
            self.reports.remove(self.report)  # armed for a later message that never came
        self.number += 1
        self.message = 1
        self._open(conversation=self.number)

    def compacted(self, how: str) -> None:
        """The conversation was compacted: its summary replaced the blocks, so the next message
        gets fresh ones (guards and pre_session run again, `compaction` true), as after a reset,
        in the same conversation."""
        from wrapagent.inject.delivery import now_iso

        assert self.on_compaction is not None
        self.compactions.append({"conversation": self.number, "how": how, "at": now_iso()})
        if self.report.status == "pending":
            self.reports.remove(self.report)  # armed for a later message that never came
        else:
            self.message += 1
        self.on_compaction(self.number, self.message)
        self._open(conversation=self.number, message=self.message)
        self.report.compaction = True

    def next_message(self) -> None:
        """`every_message` guards: the next message of this conversation gets their blocks."""
        assert self.on_message is not None
        self.message += 1
        self.on_message(self.number, self.message)
        self._open(conversation=self.number, message=self.message)

    def after_undelivered(self) -> None:
        """The screen never showed the blocks and the message went without them: the next
        message of this conversation gets the same blocks."""
        self.message += 1
        self._open(conversation=self.number, message=self.message)
        self.report.notes.append("the message before went without the blocks (not delivered): "
                                 "this one gets them")

    def _open(self, **where: int) -> None:
        self.report = InjectionReport(**where)
        self.reports.append(self.report)
        self.bare = []

    def close(self, state: str, blocks: str | None, log: Callable[[str], None]) -> InjectionReport:
        """The tool exited (`state`: the injector's; `blocks`: the message's, if known): an
        injection never delivered or never submitted is said so. Returns the first
        conversation's report (`injection` in the record); `reports` holds every one."""
        report, first = self.report, self.reports[0]
        if report.message > 1 and state in (ARMED, COMMAND, WAIT_READY):
            self.reports.remove(report)  # armed for a later message that never came
            return first
        if report.status == "lost" or state not in (STARTING, WAIT_READY, ARMED, COMMAND, HOLDING):
            return first
        if not self.inject:
            return first
        if blocks == "":
            report.status = "none"
            return first
        unfinished = {STARTING: "the tool never showed its ready screen",
                      HOLDING: "the tool exited while the first key waited for the guards"}.get(state)
        why = close_unsubmitted(report, unfinished=unfinished, bare=self.bare)
        if why:  # said once on stderr after the session, pointing to this log
            log(f"injection: a message reached {self.tool} without the blocks: {why}")
        return first
