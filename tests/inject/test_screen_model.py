"""Every decision of the screen model on every recorded screen of the real CLIs (tests/screens/).

The expected answer is in the file's name (`<state>-<name>.txt`, see tests/screens/README.md):
a new screen is one file added, and it is tested by every case here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wrapagent.inject.screen_model import ABSENT, EMPTY, TEXT, model_for

CORPUS = Path(__file__).resolve().parent.parent / "screens"
SCREENS = sorted(CORPUS.glob("*/*/*.txt"))
STATES = ("empty", "text", "working", "dialog")


def _id(path: Path) -> str:
    return "/".join(path.parts[-3:])


def _state(path: Path) -> str:
    return path.stem.split("-", 1)[0]


def test_the_corpus_covers_every_cli_at_two_releases() -> None:
    releases = {}
    for path in SCREENS:
        releases.setdefault(path.parts[-3], set()).add(path.parts[-2])
    assert set(releases) == {"codex", "claude", "gemini", "opencode"}
    for tool, seen in releases.items():
        assert len(seen) >= 2, f"{tool}: only {sorted(seen)}"


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_every_screen_is_named_for_its_answer(path: Path) -> None:
    assert _state(path) in STATES, path.name


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_composer(path: Path) -> None:
    """Empty where the user left it empty (look-alike transcripts above it included), text where
    they typed, absent under a dialog."""
    reading = model_for(path.parts[-3]).read(path.read_text(encoding="utf-8"))
    state = _state(path)
    expected = {"empty": EMPTY, "text": TEXT, "dialog": ABSENT}.get(state)
    if expected is not None:
        assert reading.composer == expected, reading
    if state == "text":
        assert reading.composer_text, reading


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_dialog(path: Path) -> None:
    """A dialog exactly where the tool shows one: never on a transcript of look-alikes."""
    reading = model_for(path.parts[-3]).read(path.read_text(encoding="utf-8"))
    assert reading.dialog == (_state(path) == "dialog"), reading


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_working(path: Path) -> None:
    reading = model_for(path.parts[-3]).read(path.read_text(encoding="utf-8"))
    assert reading.working == (_state(path) == "working"), reading


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_may_type_only_into_an_idle_empty_composer(path: Path) -> None:
    reading = model_for(path.parts[-3]).read(path.read_text(encoding="utf-8"))
    assert reading.idle_empty == (_state(path) == "empty"), reading


def _compactions(path: Path) -> int:
    """`auto-compacted` in a name: the screen shows the tool's own notice once (a `lookalike`
    part after it only quotes the words); `compacting`: claude's spinner line while it compacts."""
    return 1 if "auto-compacted" in path.stem or "compacting" in path.stem else 0


def test_the_corpus_has_each_cli_s_compaction_notice_and_its_lookalike() -> None:
    for tool in ("codex", "claude", "gemini", "opencode"):
        mine = [p for p in SCREENS if p.parts[-3] == tool]
        assert any(_compactions(p) for p in mine), tool
        assert any("compacted-lookalike" in p.stem or "then-lookalike" in p.stem for p in mine), tool


@pytest.mark.parametrize("path", SCREENS, ids=_id)
def test_compaction_notices(path: Path) -> None:
    """The tool's own compaction line where it drew one; never a user's message or a reply that
    quotes it (the `lookalike` screens), never any other screen."""
    model = model_for(path.parts[-3])
    assert model.compaction_notices(path.read_text(encoding="utf-8")) == _compactions(path)
