"""Reading a config file is bounded: a regular file only, at most 1 MiB, once.

Whatever sits at a config path (`/dev/zero`, `/dev/stdin`, `/dev/tty`, a
FIFO, a huge file), for the project layer and for both global files, must
give one line naming the file and let the tool run, with the prompt piped to
wrapagent still reaching the tool. Each case runs under a time limit (and a
memory limit, so the code before this change fails instead of eating the
machine's memory on `/dev/zero`): a hang fails, it does not block the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MAX_CONFIG_BYTES = 1024 * 1024  # the promised limit (README), not imported: the test states it

pytestmark = pytest.mark.timeout(90)

PROMPT = "the prompt piped to the tool\n"
TOOL = ("sh", "-c", "cat; echo tool ran")


def limit_memory() -> None:
    """preexec_fn: at most 1 GiB of address space (Linux enforces it; macOS ignores it)."""
    import resource
    import signal

    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    except (ValueError, OSError):
        pass


def config_path(layer: str, project: Path) -> Path:
    if layer == "project":
        return project / ".wrapagent" / "hooks.toml"
    return Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / ("hooks.toml" if layer == "global-hooks" else "config.toml")


def place(kind: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind in ("zero", "stdin", "tty"):
        path.symlink_to(f"/dev/{kind}")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "big":  # valid TOML, one byte over the limit
        head = b'[pre_run]\ncommand = "true"\n'
        path.write_bytes(head + b"#" * (MAX_CONFIG_BYTES - len(head)) + b"\n")
        assert path.stat().st_size == MAX_CONFIG_BYTES + 1


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


LAYERS = ["project", "global-hooks", "global-config"]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("kind", ["zero", "stdin", "fifo", "big"])
def test_config_path_cannot_stop_or_starve_the_tool(project, layer, kind):
    path = config_path(layer, project)
    place(kind, path)
    proc = subprocess.run([sys.executable, "-m", "wrapagent", *TOOL], cwd=project, input=PROMPT,
                          capture_output=True, text=True, timeout=30, preexec_fn=limit_memory)
    assert proc.stdout == PROMPT + "tool ran\n", proc.stderr[-2000:]
    assert proc.returncode == 0
    said = [line for line in proc.stderr.splitlines() if str(path) in line]
    assert len(said) == 1, proc.stderr[-2000:]
    if kind == "big":
        assert "1 MiB" in said[0]
    elif layer == "project":
        assert "symbolic link" in said[0] or "FIFO" in said[0]
    else:
        assert "not a regular file" in said[0]


@pytest.mark.parametrize("layer", LAYERS)
def test_dev_tty_does_not_block_the_start(project, layer, run_wrapagent):
    if not os.path.exists("/dev/tty") or not os.path.exists("/dev/ptmx"):
        pytest.skip("no terminal devices here")
    import pexpect

    path = config_path(layer, project)
    place("tty", path)
    child = run_wrapagent("sh", "-c", "echo tool ran", cwd=project, timeout=30)
    index = child.expect([b"tool ran", pexpect.TIMEOUT, pexpect.EOF], timeout=30)
    output = child.before or b""
    assert index == 0, f"the tool did not run: {output[-2000:]!r}"
    assert child.finish() == 0
    text = (output + child.output).decode(errors="replace")
    said = [line for line in text.splitlines() if str(path) in line]
    assert len(said) == 1, text


def test_at_the_limit_is_read(project):
    """Exactly 1 MiB is still a config file (the limit is inclusive)."""
    from wrapagent.hooks.config_loader import load_config

    path = config_path("global-hooks", project)
    place("big", path)
    with path.open("r+b") as f:
        f.truncate(MAX_CONFIG_BYTES)
    config = load_config(project, env=os.environ)
    assert config.lifecycle["pre_run"].command == "true" and not config.has_errors


@pytest.mark.parametrize("render", ["text", "json"])
def test_config_check_does_not_read_the_project_file_again(project, render):
    """`config check` reports trust as the loader decided it on the bytes it read: a FIFO
    swapped in after the load (a checkout, a sync tool) must not block the report."""
    import threading

    from wrapagent.hooks.config_check import as_json, describe
    from wrapagent.hooks.config_loader import load_config

    path = config_path("project", project)
    path.parent.mkdir(parents=True)
    path.write_text('[pre_run]\ncommand = "true"\n')
    config = load_config(project, env=os.environ)
    assert config.layers[2].trusted is False
    path.unlink()
    os.mkfifo(path)
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append((describe if render == "text" else as_json)(config)),
                              daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # unblock the reader so the thread ends with the test
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    assert out, "config check blocked reading the project file again"
    assert "untrusted" in str(out[0]).lower() or "NOT TRUSTED" in str(out[0])


@pytest.mark.parametrize("kind", ["zero", "fifo"])
@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_trust_list_reads_trusted_files_bounded(project, kind, json_out):
    """A trusted repository whose hooks file became a link to /dev/zero or a FIFO after a
    pull: `trust --list` (text and --json) still answers, saying the file is not used."""
    import json

    from wrapagent.hooks.trust import TrustStore

    path = config_path("project", project)
    path.parent.mkdir(parents=True)
    path.write_text('[pre_run]\ncommand = "true"\n')
    TrustStore(env=os.environ).trust(path, path.read_bytes())
    path.unlink()
    place(kind, path)
    args = ["trust", "--list", *(["--json"] if json_out else [])]
    try:
        proc = subprocess.run([sys.executable, "-m", "wrapagent", *args], cwd=project, capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("trust --list blocked on the trusted hooks file")
    assert proc.returncode == 0, proc.stderr[-2000:]
    if json_out:
        (entry,) = [f for f in json.loads(proc.stdout)["files"] if f["path"].startswith(str(project))]
        assert entry["state"] == "not used"
    else:
        assert "not used" in proc.stdout
