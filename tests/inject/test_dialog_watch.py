"""DialogWatch: a dialog read on the followed screen mid-turn fires once, at the first pause."""

from __future__ import annotations

from wrapagent.inject.dialog_watch import CHECK_SECS, DialogWatch
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


def make(turn: int | None = 1):
    view, fired, state = View(), [], {"turn": turn}
    watch = DialogWatch(view, lambda: state["turn"], fired.append)  # type: ignore[arg-type]
    return view, fired, state, watch


def test_fires_once_per_dialog_at_the_first_pause() -> None:
    view, fired, _, watch = make()
    view.text = DIALOG
    assert watch.deadline(10.0) == 10.0 + CHECK_SECS
    watch.poll(10.0, 10.0)                       # output still flowing: not yet
    assert view.reads == 0 and fired == []
    watch.poll(10.0 + CHECK_SECS, 10.0)
    assert fired == [1] and watch.showing
    assert watch.deadline(10.0) is None          # nothing new drawn: no timer
    watch.poll(20.0, 11.0)                       # redrawn, the same dialog: not again
    assert fired == [1]
    view.text = WORKING                          # answered
    watch.poll(30.0, 12.0)
    assert not watch.showing
    view.text = DIALOG                           # a second dialog in the same turn
    watch.poll(40.0, 13.0)
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
    view, fired, state, watch = make(turn=None)
    view.text = DIALOG
    assert watch.deadline(10.0) is None
    watch.poll(99.0, 10.0)
    assert view.reads == 0 and fired == []
