"""The tool's screen followed for the whole session, read by the screen model when the keys cannot tell.

The user's keys tell the composer's content only while every key is one the
composer model can read (`composer.py`). A mode key, ↑, Esc, a key that answers
a dialog: after those, only the screen can say whether the composer is empty
again. So in a whole session the screen is emulated all along, in a thread of its
own (`FollowedScreen`: the output path only appends to a buffer), and read at the
few moments a decision needs it: the first key of a message, a key after the
composer became unknown, an Enter while it is unknown.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.inject.followed_screen import FollowedScreen
    from wrapagent.inject.screen_model import ScreenModel, ScreenReading

READ_TIMEOUT_SECS = 0.3
"""At most this long (on the proxy's input path) for the emulator to catch up before a read;
it lags only after a burst of output. Not caught up: no reading, and the composer stays
what it was (unknown stays unknown: nothing typed, no reset inferred)."""

SETTLE_SECS = 0.15
"""After a key the keys cannot read, the screen is trusted only once the tool drew something
since, or this long passed: a reading taken before the tool reacted would show the old composer."""


class ComposerScreen:
    """One followed screen and the tool's screen model (see module docstring)."""

    def __init__(self, model: ScreenModel, screen: FollowedScreen, *, owned: bool) -> None:
        self.model = model
        self.screen = screen
        self.owned = owned
        """True: this object feeds and closes the screen; else the outgoing queue does."""

    @classmethod
    def create(cls, model: ScreenModel, rows: int, cols: int,
               shared: FollowedScreen | None) -> ComposerScreen:
        if shared is not None:
            return cls(model, shared, owned=False)
        from wrapagent.inject.followed_screen import FollowedScreen

        return cls(model, FollowedScreen(rows, cols), owned=True)

    def feed(self, data: bytes) -> None:
        if self.owned:
            self.screen.feed(data)

    def resize(self, rows: int, cols: int) -> None:
        if self.owned:
            self.screen.resize(rows, cols)

    def observe(self, observer: Callable[[str], None], hints: tuple[bytes, ...] = ()) -> None:
        """`observer` gets the screen's text each time the emulator caught up (its own thread),
        and right after output holding one of `hints`."""
        self.screen.observe(observer, hints)

    def read(self, timeout: float = READ_TIMEOUT_SECS) -> ScreenReading | None:
        """The model's reading of the screen as drawn so far; None when the emulator lags."""
        text = self.screen.text(timeout=timeout)
        return None if text is None else self.model.read(text)

    def close(self) -> None:
        if self.owned:
            self.screen.close()
