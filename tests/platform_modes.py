"""Tests that import `platform_mode` run twice: as on Linux, and in the mode macOS uses.

`WRAPAGENT_PLATFORM=darwin` makes wrapagent's `wrapagent/portable.py` take the
macOS paths on Linux (select() instead of poll(), psutil instead of /proc),
so those paths run in CI although no macOS machine does. The variable is
inherited by the wrapagent processes the tests start; in-process tests
get `portable` patched by the fixture.

Imported by the test modules that drive wrapagent through a PTY: tests/proxy,
tests/inject/test_injection_pty.py, tests/session/test_turns_pty.py (an
autouse fixture applies to the module that imports it); not in conftest.py,
so that the other tests run once.
"""

from __future__ import annotations

import pytest

PLATFORM_MODES = ("linux", "darwin")


@pytest.fixture(autouse=True, params=PLATFORM_MODES)
def platform_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from wrapagent import portable

    mode = request.param
    monkeypatch.setenv("WRAPAGENT_PLATFORM", mode)
    monkeypatch.setattr(portable, "DARWIN", mode == "darwin")
    monkeypatch.setattr(portable, "USE_POLL", mode != "darwin")
    return mode
