"""Conversations and their messages: resets, `every_message` guards, turns, one report each.

In a whole session the injector stays attached after the first message: a
submitted reset command starts a new conversation (fresh blocks, wait for
the composer again, a new report), with `every_message` guards each later
message of a conversation gets blocks too (a report per message), and every
other submission goes to the turn tracker. A mixin of `SessionInjector`:
it shares the injector's state.
"""

from __future__ import annotations

from wrapagent.inject.report import InjectionReport
from wrapagent.inject.states import ARMED, CHATTING, COMMAND, DONE, WAIT_READY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.inject.composer import Submission


class Conversations:
    """What follows a submission (part of `SessionInjector`)."""

    def _submitted(self, sub: Submission, before: str, now: float) -> None:
        """A submission reached the child: a reset starts a new conversation, the rest are turns."""
        if not self.whole_session:
            return
        if self.adapter.compact_commands and sub.is_command_line(self.adapter.compact_commands):
            self._watch_turn(mute=True)
            later = self._message > 1 and before in (ARMED, COMMAND)
            if (before == CHATTING or later) and self.on_compaction is not None:
                self._compacted(sub.text.strip().split()[0], now)
            return
        self._watch_turn(mute=sub.is_command(self.adapter.reset_commands))
        if self.adapter.reset_commands and sub.is_command(self.adapter.reset_commands):
            later = self._message > 1 and before in (ARMED, COMMAND)  # armed for a later message
            if (before == CHATTING or later) and self.on_reset is not None:
                self._new_conversation(sub.text.strip(), now)
            return
        if self.turns is not None:
            if sub.empty:
                if before != WAIT_READY:  # (a new conversation has no turn to resume: the Enter
                    self.turns.resumed(now)  # answered the reset's own question, codex's `/new`)
            else:
                self.turns.submitted(now, sub.text)
        if before == CHATTING and self._message == 1 and not self.inject and not self.prompt_given \
                and self.on_message is not None:
            self._next_message()  # no blocks for the first message, but a later one may get some

    def _prompt_submitted(self, now: float) -> None:
        """The tool is up with the command line's prompt submitted: it is the first turn, and with
        `every_message` guards the next typed message of this conversation gets their blocks."""
        if self.turns is not None:
            self.turns.submitted(now)
        if self.on_message is not None:
            self._next_message()

    def _new_conversation(self, command: str, now: float) -> None:
        """A reset command was submitted: fresh blocks for the next message, as for the first."""
        assert self.on_reset is not None
        self.on_reset()
        if self._message > 1 and self.report.status == "pending":
            self.reports.remove(self.report)  # armed for a later message that never came
        self._conversation += 1
        self._message = 1
        self._open_report(conversation=self._conversation)
        self._wait_ready_again(now)
        self.log(f"injection: {command} started conversation {self.report.conversation}; re-armed")

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

    def _check_compaction(self, now: float) -> None:
        """The tool compacted by itself (`compaction_watch.py`): the next message gets the blocks.

        Counted where a typed `/compact` would be: after a message went with its blocks
        (chatting), or while a later message is armed. A message whose blocks are on their
        way now, or a conversation still waiting for its composer, gets them anyway.
        """
        watch = self.compaction_watch
        if watch is None or not watch.take():
            return
        later = self._message > 1 and self.state in (ARMED, COMMAND)
        if self.state != CHATTING and not later:
            self.log(f"injection: the tool compacted conversation {self._conversation} by itself "
                     f"while the blocks were still to come ({self.state}); nothing more to do")
            return
        self._compacted("automatic", now)

    def _compacted(self, how: str, now: float) -> None:
        """The conversation was compacted: its summary replaced the blocks, so the next message
        gets fresh ones (guards and pre_session run again, `compaction` true), as after a reset,
        in the same conversation.

        After a typed command the tool redraws (and may ask something) before its composer is
        back: wait for it as after a reset. An automatic compaction happened inside a turn, the
        composer never left: the next message is armed at once (a message the user has begun
        typing meanwhile goes as it is, and the one after it gets them)."""
        from wrapagent.inject.delivery import now_iso

        assert self.on_compaction is not None
        self.compactions.append({"conversation": self._conversation, "how": how, "at": now_iso()})
        if self.report.status == "pending":
            self.reports.remove(self.report)  # armed for a later message that never came
        else:
            self._message += 1
        self.on_compaction(self._conversation, self._message)
        self._open_report(conversation=self._conversation, message=self._message)
        self.report.compaction = True
        if how == "automatic":
            self._arm()
        else:
            self._wait_ready_again(now)
        self.log(f"injection: conversation {self._conversation} compacted ({how}); "
                 "the next message gets the blocks")

    def _next_message(self) -> None:
        """`every_message` guards: the next message of this conversation gets their blocks."""
        assert self.on_message is not None
        self._message += 1
        self.on_message(self._conversation, self._message)
        self._open_report(conversation=self._conversation, message=self._message)
        self.state = ARMED

    def _after_undelivered(self) -> None:
        """The screen never showed the blocks and the message went without them: the next
        message of this conversation gets the same blocks, once the composer shows again
        (whatever took them, a dialog most likely, is answered by then)."""
        self._message += 1
        self._open_report(conversation=self._conversation, message=self._message)
        self.report.notes.append("the message before went without the blocks (not delivered): "
                                 "this one gets them")
        self._wait_ready_again(self.clock())

    def _open_report(self, **where: int) -> None:
        """A fresh report and a fresh hold for the next delivery (a new conversation or message)."""
        self.report = InjectionReport(**where)
        self.reports.append(self.report)
        self._bare = []
        self._in_paste = False
        self.delivery.forget()

    def _wait_ready_again(self, now: float) -> None:
        """After a reset the tool may show a dialog first: keys pass until the composer is back
        (`readiness.Readiness.wait_again`)."""
        self.state = WAIT_READY
        if self.readiness.wait_again(now, *self._size):
            self.watch_output = True

    def _finish(self) -> None:
        """This conversation's injection is over: stay for the session, or be dropped."""
        self.readiness.close()
        self.watch_output = self._keep_watching
        if self.whole_session:
            self.state = CHATTING
            if self.on_message is not None:
                self._next_message()
            return
        self.state = DONE
        # else once the last replayed key went and its gap to the next is kept (`_due_replay`)
        self.done = self._keys.next_due() is None
