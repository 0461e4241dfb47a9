"""DialogWatch: a dialog the agent shows mid-turn fires once, at the first pause; one the user's
own key opened (a command's picker or question, a key typed since the turn began) never does."""

from __future__ import annotations

from wrapagent.inject.dialog_watch import CHECK_SECS, DialogTurn, DialogWatch
from wrapagent.inject.screen_model import model_for

DIALOG = "demo> hi (ask)\nallow the demo tool to run? press Enter to allow\n"
WORKING = "demo> hi (ask)\nallowed\n"


class View:
    """A followed screen whose text the test sets; None: the emulator lags."""

    def __init__(self) -> None:
        self.model = model_for("demo")
        self.text: str | None = WORKING
        self.reads = 0

    def read(self, timeout: float):
        self.reads += 1
        return None if self.text is None else self.model.read(self.text)


class Turn:
    """The turn under way, as the tracker and the injector would say it."""

    def __init__(self, turn: int | None) -> None:
        self.turn = turn
        self.started = 1.0
        self.text = "hi (ask)"
        self.key = 1.0          # the Enter that submitted it
        self.between = True     # the injector is between messages

    def view(self) -> DialogTurn:
        return DialogTurn(lambda: self.turn, lambda: self.started, lambda: self.text.startswith("/"),
                          lambda: self.key, lambda: self.between)


def make(turn: int | None = 1):
    view, fired, state = View(), [], Turn(turn)
    watch = DialogWatch(view, state.view(), fired.append)  # type: ignore[arg-type]
    return view, fired, state, watch


def test_fires_once_per_dialog_at_the_first_pause() -> None:
    view, fired, turn, watch = make()
    view.text = DIALOG
    assert watch.deadline(10.0) == 10.0 + CHECK_SECS
    watch.poll(10.0, 10.0)                       # output still flowing: not yet
    assert view.reads == 0 and fired == []
    watch.poll(10.0 + CHECK_SECS, 10.0)
    assert fired == [1] and watch.showing
    assert watch.deadline(10.0) is None          # nothing new drawn: no timer
    watch.poll(20.0, 11.0)                       # redrawn, the same dialog: not again
    assert fired == [1]
    turn.started = turn.key = 25.0               # answered with Enter: the turn resumed
    view.text = WORKING
    watch.poll(30.0, 26.0)
    assert not watch.showing
    view.text = DIALOG                           # a second dialog in the same turn
    watch.poll(40.0, 27.0)
    assert fired == [1, 1] and watch.fired == 2


def test_a_lagging_emulator_is_retried_later_not_in_a_loop() -> None:
    view, fired, _, watch = make()
    view.text = None
    watch.poll(10.0 + CHECK_SECS, 10.0)
    assert fired == [] and watch.deadline(10.0) == 10.0 + 2 * CHECK_SECS
    view.text = DIALOG
    watch.poll(10.0 + 2 * CHECK_SECS, 10.0)
    assert fired == [1]


def test_no_turn_under_way_no_reading() -> None:
    view, fired, _, watch = make(turn=None)
    view.text = DIALOG
    assert watch.deadline(10.0) is None
    watch.poll(99.0, 10.0)
    assert view.reads == 0 and fired == []


def test_a_commands_dialog_is_the_users() -> None:
    """`/model`, `/new`…: the picker or question that follows is the user's, answers included."""
    view, fired, turn, watch = make()
    turn.text = "/model"
    view.text = DIALOG
    assert watch.deadline(10.0) is None
    watch.poll(99.0, 10.0)
    turn.started = turn.key = 50.0               # a pick in it resumes the command's turn
    watch.poll(99.0, 60.0)
    assert view.reads == 0 and fired == []


def test_a_key_since_the_turn_began_may_have_opened_it() -> None:
    """Esc Esc (claude's rewind list), `?` (a shortcuts overlay): typed after the submission."""
    view, fired, turn, watch = make()
    turn.key = 5.0
    view.text = DIALOG
    watch.poll(99.0, 10.0)
    assert fired == [] and view.reads == 0
    turn.started = turn.key = 20.0               # the next submission: the agent's dialogs count again
    watch.poll(99.0, 30.0)
    assert fired == [1]


def test_not_while_the_user_owns_the_composer() -> None:
    """Between a reset and its composer (codex's `/new` question), or while keys are held."""
    view, fired, turn, watch = make()
    turn.between = False
    view.text = DIALOG
    watch.poll(99.0, 10.0)
    assert fired == [] and view.reads == 0


def test_showing_belongs_to_the_turn_it_fired_in() -> None:
    """The quiet wait of a later turn is fired even if no reading saw the dialog go."""
    view, fired, turn, watch = make()
    view.text = DIALOG
    watch.poll(99.0, 10.0)
    assert fired == [1] and watch.showing
    turn.key = 100.0                             # Esc closed it: no resume, no reading
    turn.started, turn.turn = 101.0, 2           # the next message
    assert not watch.showing
