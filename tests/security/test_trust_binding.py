"""Trust binds exactly the file the user reviewed, in exactly that project.

- Borrowed trust: a repository whose `.wrapagent` (or `.wrapagent/hooks.toml`)
  is a relative link to a neighbour's trusted file must not run the
  neighbour's hooks in its own tree (where `./scripts/check.sh` is its own).
- Fail-open race: a project file that appears while wrapagent starts is
  untrusted; trust is decided on the bytes actually read.
- The review (`wrapagent trust`) and the loader parse the same way (BOM) and
  the review lists every setting that takes effect (`[checkpoints]`).

wrapagent is started as a user does (`python -m wrapagent TOOL…`, stdin not
a terminal), with HOME/XDG isolated by tests/conftest.py.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wrapagent.commands.trust import cmd_trust, describe_content
from wrapagent.hooks.config_loader import LAYER_PROJECT_HOOKS, load_config
from wrapagent.hooks.trust import TRUSTED, UNTRUSTED, TrustStore

pytestmark = pytest.mark.timeout(120)

# A trusted hooks file whose command is relative to the project it runs in.
GOOD_HOOKS = b'[pre_run]\ncommand = "sh ./scripts/check.sh"\n'


def make_project(root: Path, name: str, markers: Path) -> Path:
    """A git project whose scripts/check.sh leaves `markers/<name>-ran`."""
    (root / ".git").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "scripts" / "check.sh").write_text(f'touch "{markers}/{name}-ran"\n')
    return root


def store() -> TrustStore:
    return TrustStore(env=os.environ, warn=lambda message: None)


def quiet_global_hooks() -> None:
    """No session commit, no checkpoints: starts stay cheap and touch nothing else."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[session_complete]\nenabled = false\n[checkpoints]\nenabled = false\ntranscripts = false\n")


def wrapagent(cwd: Path, *tool: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *tool], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


@pytest.fixture
def neighbours(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(good, evil, markers): side by side, as `git clone` leaves them; good's hooks trusted."""
    markers = tmp_path / "markers"
    markers.mkdir()
    good = make_project(tmp_path / "good", "good", markers)
    (good / ".wrapagent").mkdir()
    (good / ".wrapagent" / "hooks.toml").write_bytes(GOOD_HOOKS)
    store().trust(good / ".wrapagent" / "hooks.toml", GOOD_HOOKS)
    evil = make_project(tmp_path / "evil", "evil", markers)
    quiet_global_hooks()
    return good, evil, markers


def link_folder(evil: Path) -> None:
    (evil / ".wrapagent").symlink_to("../good/.wrapagent")


def link_file(evil: Path) -> None:
    (evil / ".wrapagent").mkdir()
    (evil / ".wrapagent" / "hooks.toml").symlink_to("../../good/.wrapagent/hooks.toml")


LINKS = [pytest.param(link_folder, id="wrapagent-folder-link"), pytest.param(link_file, id="hooks-toml-link")]


@pytest.mark.parametrize("make_link", LINKS)
def test_borrowed_trust_does_not_run_hooks(neighbours, make_link):
    good, evil, markers = neighbours
    ran = wrapagent(good, "sh", "-c", "echo tool ran")
    assert ran.returncode == 0 and ran.stdout == "tool ran\n"
    assert (markers / "good-ran").exists(), ran.stderr  # the set-up is sound: trusted hooks run

    make_link(evil)
    proc = wrapagent(evil, "sh", "-c", "echo tool ran")
    assert not (markers / "evil-ran").exists(), proc.stderr
    assert proc.returncode == 0 and proc.stdout == "tool ran\n"  # the tool runs without the project layer
    said = [line for line in proc.stderr.splitlines() if "symbolic link" in line]
    assert len(said) == 1 and str(evil / ".wrapagent" / "hooks.toml") in said[0], proc.stderr


@pytest.mark.parametrize("make_link", LINKS)
def test_borrowed_trust_in_the_loader_and_the_store(neighbours, make_link):
    good, evil, _ = neighbours
    make_link(evil)
    config = load_config(evil, env=os.environ)
    layer = next(l for l in config.layers if l.kind == LAYER_PROJECT_HOOKS)
    assert layer.exists and not layer.used and "pre_run" not in config.lifecycle
    assert "symbolic link" in layer.problems[0].message
    # The key is the path as reviewed in its own project, never where a link leads.
    assert store().check(evil / ".wrapagent" / "hooks.toml", GOOD_HOOKS) == UNTRUSTED
    assert store().check(good / ".wrapagent" / "hooks.toml", GOOD_HOOKS) == TRUSTED


@pytest.mark.parametrize("make_link", LINKS)
def test_trust_command_refuses_a_linked_file(neighbours, make_link):
    _, evil, _ = neighbours
    make_link(evil)
    out, err = io.StringIO(), io.StringIO()
    code = cmd_trust(None, revoke=False, list_=False, stdin=io.StringIO("y\n"), stdout=out, stderr=err,
                     env=os.environ, cwd=evil)
    assert code == 1 and "already trusted" not in out.getvalue()
    assert "symbolic link" in err.getvalue() and len(err.getvalue().splitlines()) == 1


def test_old_store_entries_keep_working(tmp_path):
    """A trust.json written before (keyed by the resolved file path) still trusts an unlinked file."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".wrapagent").mkdir()
    file = root / ".wrapagent" / "hooks.toml"
    file.write_bytes(GOOD_HOOKS)
    import hashlib

    path = Path(os.environ["XDG_STATE_HOME"]) / "wrapagent" / "trust.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "files": {os.path.realpath(file): {
        "sha256": hashlib.sha256(GOOD_HOOKS).hexdigest(), "trusted_at": "2026-01-01T00:00:00+00:00"}}}))
    config = load_config(root, env=os.environ)
    assert config.lifecycle["pre_run"].command == "sh ./scripts/check.sh"


# --------------------------------------------------------------------------- the flicker race

FLICKER = textwrap.dedent("""\
    import os, sys
    folder, content, started = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
    target, spare = os.path.join(folder, "hooks.toml"), os.path.join(folder, ".spare")
    with open(spare, "wb") as f:
        f.write(content)
    open(started, "w").close()
    while True:  # appear whole (a hard link is atomic), vanish, again: as fast as it gets
        os.link(spare, target)
        os.unlink(target)
""")
@pytest.fixture
def flicker(tmp_path: Path):
    """(project, marker): an untrusted hooks file appears and vanishes in a loop while the test runs."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".wrapagent").mkdir()
    marker = tmp_path / "untrusted-pre_run-ran"
    content = f'[pre_run]\ncommand = "touch {marker}"\n'
    started = tmp_path / "flicker-started"
    proc = subprocess.Popen([sys.executable, "-c", FLICKER, str(project / ".wrapagent"), content, str(started)])
    try:
        deadline = time.monotonic() + 60
        while not started.exists():  # poll the condition (generous limit), never sleep-then-check
            assert proc.poll() is None and time.monotonic() < deadline, "the flicker loop did not start"
            time.sleep(0.01)
        yield project, marker
    finally:
        proc.kill()
        proc.wait()


def test_flicker_race_in_the_loader(flicker):
    project, _ = flicker
    loads = seen = 0
    # At least 3000 loads (~1 ms each), and on until the file was there for 100 of them.
    while loads < 3000 or seen < 100:
        assert loads < 100_000, f"the file was seen in only {seen} of {loads} loads"
        config = load_config(project, env=os.environ)
        layer = next(l for l in config.layers if l.kind == LAYER_PROJECT_HOOKS)
        loads += 1
        seen += layer.exists
        assert not layer.used and "pre_run" not in config.lifecycle, layer


def test_flicker_race_untrusted_pre_run_never_runs(flicker):
    project, marker = flicker
    quiet_global_hooks()
    for _ in range(40):
        proc = wrapagent(project, "sh", "-c", "echo tool ran")
        assert proc.returncode == 0 and proc.stdout == "tool ran\n", proc.stderr
        assert not marker.exists(), proc.stderr


# --------------------------------------------------------------------------- review == loader

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(("content", "used"), [
    pytest.param(BOM + b'[pre_run]\ncommand = "echo from a BOM file"\n', True, id="bom"),
    pytest.param(BOM + BOM + b'[pre_run]\ncommand = "echo two BOMs"\n', False, id="two-boms"),
    pytest.param(b'[pre_run]\ncommand = "echo \xff"\n', False, id="not-utf8"),
])
def test_review_and_loader_agree(tmp_path, content, used):
    project = tmp_path / "proj"
    (project / ".wrapagent").mkdir(parents=True)
    file = project / ".wrapagent" / "hooks.toml"
    file.write_bytes(content)
    review = describe_content(file, content)
    config = load_config(project, env=os.environ, is_trusted=lambda p, d: d == content)
    assert ("pre_run" in config.lifecycle) is used
    assert ("Does not parse" not in review) is used
    if used:
        assert f"pre_run: sh -c: {config.lifecycle['pre_run'].command}" in review


def test_review_lists_settings_that_take_effect(tmp_path):
    content = b"[checkpoints]\nenabled = false\ntranscripts = false\n\n[[prompt_guard]]\nname = 'g'\nbuiltin = 'date'\n"
    review = describe_content(tmp_path / "hooks.toml", content)
    assert "checkpoints.enabled = false" in review and "checkpoints.transcripts = false" in review
    assert "replace your global prompt guards" in review
    assert "Ignored keys" not in review
    assert "not the scripts" in review and "speed bump, not a sandbox" in review
    # and the loader does take them from a trusted project file
    project = tmp_path / "proj"
    (project / ".wrapagent").mkdir(parents=True)
    (project / ".wrapagent" / "hooks.toml").write_bytes(content)
    config = load_config(project, env=os.environ, is_trusted=lambda p, d: True)
    assert config.checkpoints.enabled is False and config.checkpoints.transcripts is False


@pytest.mark.parametrize("content, shown", [
    (b'[stop_check]\ncommand = "sh ./scripts/continue.sh"\n', "sh -c: sh ./scripts/continue.sh"),
    (b"[stop_check]\nenabled = false\n", "stop_check: disabled"),
    (b"[send]\nenabled = true\n", "send.enabled = true"),
], ids=["stop-check-command", "stop-check-off", "send-on"])
def test_review_shows_stop_check_and_send(tmp_path, content, shown):
    """What the loader takes from a trusted project file, the review shows: a `[stop_check]`
    command runs `sh -c` every time the agent stops; `[send]` lets other programs type in."""
    review = describe_content(tmp_path / "hooks.toml", content)
    assert shown in review, review
    # and the loader does take it from a trusted project file
    project = tmp_path / "proj"
    (project / ".wrapagent").mkdir(parents=True)
    (project / ".wrapagent" / "hooks.toml").write_bytes(content)
    config = load_config(project, env=os.environ, is_trusted=lambda p, d: True)
    assert not config.has_errors and config.layers[2].used


def test_bom_file_reviewed_trusted_and_run(tmp_path):
    """At a terminal: the review shows the BOM file's command, and once trusted the loader runs it."""
    import pexpect

    marker = tmp_path / "bom-pre_run-ran"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".wrapagent").mkdir()
    (project / ".wrapagent" / "hooks.toml").write_bytes(BOM + f'[pre_run]\ncommand = "touch {marker}"\n'.encode())
    child = pexpect.spawn(sys.executable, ["-m", "wrapagent", "trust"], env=dict(os.environ), cwd=str(project),
                          timeout=30, encoding="utf-8")
    shown = child.expect_exact([f"pre_run: sh -c: touch {marker}", "Does not parse", "Trust this file? [y/N] "])
    assert shown == 0, child.before
    child.expect_exact("Trust this file? [y/N] ")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    quiet_global_hooks()
    proc = wrapagent(project, "sh", "-c", "echo tool ran")
    assert proc.stdout == "tool ran\n" and marker.exists(), proc.stderr
