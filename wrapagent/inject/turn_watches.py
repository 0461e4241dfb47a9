"""The agent's turns as the injector follows them: when it waits, a dialog mid-turn, the user's interrupts.

The turn tracker (`session/turns.py`) decides when the agent waits; the
dialog watch (`dialog_watch.py`) sees a dialog shown mid-turn; the interrupt
watch (`interrupts.py`) sees the keys that reach the tool and the tool's
cancel notice. None of them changes what the injector types: they are told
what reached the tool and asked for their deadlines, so they live here,
apart from the injector's state machine, which only passes them its time,
its output and the keys it forwards.
"""

from __future__ import annotations

from wrapagent.inject.keys import REPLY, tokenize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.adapters.base import Adapter
    from wrapagent.inject.composer import Composer
    from wrapagent.inject.conversations import TurnListener
    from wrapagent.inject.dialog_watch import DialogTurn, DialogWatch
    from wrapagent.inject.interrupts import InterruptWatch


class TurnWatches:
    """The turn tracker, the dialog watch and the interrupt watch, fed by the injector."""

    def __init__(self, adapter: Adapter, composer: Composer, turns: TurnListener | None,
                 interrupts: InterruptWatch | None) -> None:
        self.adapter = adapter
        self.composer = composer
        """The user's keys as the injector follows them: does the composer hold a command."""
        self.turns = turns
        self.interrupts = interrupts
        """Told every key that reaches the tool: did the user interrupt the agent (`interrupts.py`)."""
        self.dialogs: DialogWatch | None = None
        """Set by the session when waiting_for_input is configured and the screen is followed."""
        self.last_user_key = float("-inf")
        """When the user's latest key came (kept while `dialogs` is set)."""
        self.begun: BeginScan | None = None
        """Set by the session for a tool whose turns all show its working hint (`turns.py`
        `watch_begin`): the output after a submission, looked at until the hint shows."""

    def key(self, data: bytes, now: float) -> None:
        """The user's latest key (a terminal's reply to a query is none): a dialog shown after
        it may be its doing (`dialog_watch.py`)."""
        if self.dialogs is not None and any(tok.kind != REPLY for tok in tokenize(data)):
            self.last_user_key = now

    def dialog_turn(self, turns, between_messages: Callable[[], bool]) -> DialogTurn:
        """The turn under way as the dialog watch sees it: the tracker's, the user's keys."""
        from wrapagent.inject.dialog_watch import DialogTurn

        prefixes = self.adapter.command_prefixes
        return DialogTurn(turns.working, lambda: turns.started_at,
                          lambda: any(turns.text.lstrip().startswith(p) for p in prefixes),
                          lambda: self.last_user_key, between_messages)

    def deadline(self, last_output: float) -> float | None:
        """The earliest of the tracker's and the dialog watch's deadlines."""
        if self.turns is None:
            return None
        theirs = self.turns.deadline(last_output)
        if self.dialogs is not None:
            seen = self.dialogs.deadline(last_output)
            if seen is not None and (theirs is None or seen < theirs):
                theirs = seen
        return theirs

    def poll(self, now: float, last_output: float) -> None:
        if self.turns is None:
            return
        if self.dialogs is not None:
            self.dialogs.poll(now, last_output)
        self.turns.poll(now, last_output)

    def holds_command(self) -> bool:
        """The composer holds a command (its keys are no interrupt of the agent's turn)."""
        return self.interrupts is not None and self.composer.holds_command(self.adapter.command_prefixes)

    def to_tool(self, out: bytes, now: float, command: bool) -> bool:
        """Bytes on their way to the tool: the interrupt watch sees the keys that really reach it.
        True when it now looks for the tool's cancel notice in the output."""
        if self.interrupts is None or not out:
            return False
        self.interrupts.keys(out, now, command)
        return self.interrupts.wants_output

    def output(self, data: bytes) -> None:
        if self.interrupts is not None and self.interrupts.wants_output:
            self.interrupts.output(data)
        if self.begun is not None:
            self.begun.output(data)

    def notice_seen(self) -> bool:
        """The interrupt watch no longer needs the tool's output (the stop was seen)."""
        return self.interrupts is not None and not self.interrupts.wants_output


BEGIN_TAIL_CHARS = 64
"""Text kept from one output chunk to the next: a hint cut between two chunks is still seen."""


class BeginScan:
    """Sees a submitted turn begin in the tool's output: its working hint drawn after the Enter.

    The followed screen shows the hint only once the emulator caught up, after a pause in the
    output; a quick reply (the hint drawn for 0.1 s, then replaced: codex, measured) never
    pauses with it on screen. The output's text (escape sequences as spaces, `interrupts.py`)
    holds it all the same. Looked at only while the tracker waits to see the turn begun: from
    a submission to its hint, at most BEGIN_WAIT_SECS. Text that merely quotes the hint (a
    reply) also means the turn began.
    """

    def __init__(self, patterns: tuple[str, ...], turns) -> None:
        import re

        from wrapagent.inject.interrupts import output_text

        self._text = output_text
        self._patterns = [re.compile(p) for p in patterns]
        self.turns = turns
        """`session/turns.TurnTracker`: `awaits_begin`, `saw_working`."""
        self._tail = ""

    def output(self, data: bytes) -> None:
        if not self.turns.awaits_begin:
            self._tail = ""
            return
        text = self._tail + self._text(data)
        if any(p.search(text) for p in self._patterns):
            self._tail = ""
            self.turns.saw_working()
            return
        self._tail = text[-BEGIN_TAIL_CHARS:]
