#!/usr/bin/env python3
"""wrapagent's PTY loop with an interceptor attached for the whole run, for ptybench.

    python bench/steady_proxy.py light  CMD…   # full mode's steady state
    python bench/steady_proxy.py screen CMD…   # before the first message: the screen reader runs
    python bench/steady_proxy.py followed CMD… # stop check / send: the screen followed in a thread

`light` is what a full-mode session costs once the first message went in:
the interceptor stays attached (contract v2) with `watch_output` false, so
each output chunk costs the loop one `time.monotonic()` and one attribute
store, and every input chunk goes through the real key tokenizer
(`wrapagent.inject.keys.tokenize`), counting submits and spotting `/clear`
as the conversation-reset watcher must. No timer, no wake fd.

`screen` keeps `watch_output` true and feeds every output chunk to the
injector's real terminal emulator (`wrapagent.inject.screen.Screen`, pyte):
the cost until the tool is ready and the first message is delivered.

Bench-only: no config, hooks, session record or commit; those are start-up
and exit costs, measured by the `wrapagent-full` row instead.
"""

from __future__ import annotations

import os
import sys

from wrapagent.proxy import pty_loop


class LightInterceptor:
    """The steady state of the v2 contract: input tokenized, output only timestamped."""

    def __init__(self) -> None:
        from wrapagent.inject import keys

        self._keys = keys
        self.done = False
        self.watch_output = False
        self.last_output = 0.0
        self.submits = 0
        self.resets = 0
        self._line = bytearray()

    def on_input(self, data: bytes, now: float) -> bytes:
        keys = self._keys
        for tok in keys.tokenize(data):
            if tok.kind == keys.ENTER:
                self.submits += 1
                if bytes(self._line).strip() == b"/clear":
                    self.resets += 1
                self._line.clear()
            elif tok.kind == keys.TEXT:
                self._line += tok.data
        return data

    def on_output(self, data: bytes, now: float) -> None:
        self.last_output = now  # not called while watch_output is false

    def poll(self, now: float) -> bytes:
        return b""

    def deadline(self) -> float | None:
        return None

    def wake_fd(self) -> int | None:
        return None


class ScreenInterceptor(LightInterceptor):
    """Before the first message: every output chunk goes through the terminal emulator."""

    def __init__(self) -> None:
        super().__init__()
        from wrapagent.inject.screen import Screen

        size = pty_loop.terminal.get_winsize(0) or (24, 80, 0, 0)
        self.screen = Screen(size[0], size[1])
        self.watch_output = True

    def on_output(self, data: bytes, now: float) -> None:
        self.last_output = now
        self.screen.feed(data)


class FollowedInterceptor(LightInterceptor):
    """After the first message with a stop check or `wrapagent send` configured: every output chunk
    is handed to the screen follower (`followed_screen.FollowedScreen`, pyte in a thread of its own)."""

    def __init__(self) -> None:
        super().__init__()
        from wrapagent.inject.followed_screen import FollowedScreen

        size = pty_loop.terminal.get_winsize(0) or (24, 80, 0, 0)
        self.followed = FollowedScreen(size[0], size[1])
        self.watch_output = True

    def on_output(self, data: bytes, now: float) -> None:
        self.last_output = now
        self.followed.feed(data)


MODES = {"light": LightInterceptor, "screen": ScreenInterceptor, "followed": FollowedInterceptor}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in MODES:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    icpt = MODES[argv[0]]()
    result = pty_loop.run(argv[1:], env=dict(os.environ), interceptor=icpt)
    return result.exit_code


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
