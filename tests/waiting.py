"""Waiting for a condition in a test, the one way: poll it, with a generous deadline.

Tests never sleep for a fixed time to let something happen: on a loaded
machine any fixed time is too short once, and on an idle one it is wasted
every time. They wait for what they need (a file, a process gone, a line in
a log) and fail with what they waited for when it never comes.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 60.0
"""Generous: a loaded 2-core machine starts a Python program in seconds, not milliseconds."""


def wait_for(predicate: Callable[[], T], what: str = "the condition", timeout: float = DEFAULT_TIMEOUT,
             poll: float = 0.02) -> T:
    """Call `predicate` until it returns something true, and return that; AssertionError after `timeout` s."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"never happened within {timeout:g} s: {what}")
        time.sleep(poll)
