"""The Quick start's first command, `./install.sh`, on an externally managed Python.

Debian 12, Ubuntu 24.04 and Homebrew mark their `python3` as externally
managed (PEP 668): `pip install .` into it stops with
`externally-managed-environment`. The test runs the README's first command in
a clean copy of the repository, with a new HOME, the default PATH and such a
`python3` (the system's own when it is one, as on Debian and Ubuntu, else a
copy of this interpreter whose stdlib folder holds the EXTERNALLY-MANAGED
marker), and follows it down to the demo showing the blocks of a first message.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pexpect
import pytest

from tests.demo_sessions import wait_until_armed

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MARKER = "EXTERNALLY-MANAGED"
README_FIRST_COMMAND = "./install.sh"


def _stdlib_of(python: str) -> Path | None:
    result = subprocess.run([python, "-I", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                            capture_output=True, text=True, timeout=60)
    return Path(result.stdout.strip()) if result.returncode == 0 else None


def _system_python() -> str | None:
    """The default PATH's python3 when it is externally managed (and can make a virtualenv)."""
    python = shutil.which("python3", path=DEFAULT_PATH)
    if python is None:
        return None
    stdlib = _stdlib_of(python)
    if stdlib is None or not (stdlib / MARKER).is_file():
        return None
    venv_ok = subprocess.run([python, "-I", "-c", "import venv, ensurepip"], capture_output=True, timeout=60)
    return python if venv_ok.returncode == 0 else None


def _fake_managed_python(folder: Path) -> Path | None:
    """A copy of this interpreter whose stdlib is a folder of links plus the PEP 668 marker.

    The copied binary finds its prefix from its own location (lib/pythonX.Y/os.py
    beside it), so pip sees the marker in `sysconfig.get_path("stdlib")`, as on
    a distribution's Python. None where this interpreter's layout does not allow it.
    """
    binary = Path(os.path.realpath(sys.executable))
    stdlib = Path(sysconfig.get_path("stdlib", vars={"installed_base": sys.base_prefix,
                                                     "base": sys.base_prefix}))
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if not (stdlib / "os.py").is_file() or stdlib.name != version:
        return None
    (folder / "bin").mkdir(parents=True)
    fake_stdlib = folder / "lib" / version
    fake_stdlib.mkdir(parents=True)
    shutil.copy2(binary, folder / "bin" / "python3")
    for entry in stdlib.iterdir():
        (fake_stdlib / entry.name).symlink_to(entry)
    (fake_stdlib / MARKER).write_text("[externally-managed]\nError=managed by the system (test)\n")
    python = folder / "bin" / "python3"
    return python if _stdlib_of(str(python)) == fake_stdlib else None


def _clean_copy(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked, plus new files not ignored)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"],
                            capture_output=True, check=True, timeout=60).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if not src.is_file() or src.is_symlink():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / name)
    return dest


@pytest.fixture
def managed_python(tmp_path) -> tuple[str, str]:
    """(python3, PATH): an externally managed python3 first on an otherwise default PATH."""
    system = _system_python()
    if system is not None:
        return system, DEFAULT_PATH
    fake = _fake_managed_python(tmp_path / "managed-python")
    if fake is None:
        pytest.skip("no externally managed python3 here, and this interpreter cannot be copied as one")
    return str(fake), f"{fake.parent}:{DEFAULT_PATH}"


@pytest.mark.timeout(900)
def test_readme_first_command_installs_and_shows_the_demo_blocks(tmp_path, managed_python):
    python, path = managed_python
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"\n{README_FIRST_COMMAND} " in readme.split("## Next steps")[0]
    src = _clean_copy(tmp_path / "wrapagent-src")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": path, "TERM": "xterm", "LANG": "C.UTF-8"}
    # The environment reproduces the problem: the old first command fails here.
    old = subprocess.run([python, "-m", "pip", "install", "--dry-run", "."], cwd=src, env=env,
                         capture_output=True, text=True, timeout=300)
    assert old.returncode != 0

    child = pexpect.spawn("/bin/sh", ["-c", README_FIRST_COMMAND], cwd=str(src), env=env,
                          dimensions=(40, 120), timeout=600, encoding="utf-8", codec_errors="replace")
    child.delaybeforesend = None
    try:
        child.expect_exact("installed: ")
        child.expect_exact("not on your PATH")
        child.expect_exact('export PATH="$HOME/.local/bin:$PATH"')
        child.expect_exact("demo> ", timeout=120)
        wait_until_armed(home / ".local" / "state", timeout=120)
        for ch in "hello":
            child.send(ch)
            time.sleep(0.03)
        time.sleep(0.3)
        child.send("\r")
        child.expect(r"<prompt-guard name=\"\w+\">", timeout=60)
        child.expect_exact("end of message 1", timeout=60)
        child.send("/quit\r")
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before

    launcher = home / ".local" / "bin" / "wrapagent"
    assert os.access(launcher, os.X_OK)
    # Nothing went into the externally managed interpreter.
    probe = subprocess.run([python, "-I", "-c", "import wrapagent"], cwd=tmp_path, env=env,
                           capture_output=True, timeout=60)
    assert probe.returncode != 0
    # The launcher works from any folder with the default PATH, as the install said.
    version = subprocess.run([str(launcher), "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert re.fullmatch(r"wrapagent \S+\n", version.stdout), version


@pytest.mark.timeout(900)
def test_uninstall_removes_only_what_the_virtualenv_route_created(tmp_path, managed_python):
    python, path = managed_python
    src = _clean_copy(tmp_path / "wrapagent-src")
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": path, "PYTHON": python, "LANG": "C.UTF-8"}
    done = subprocess.run(["./install.sh", "--with", "venv"], cwd=src, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "not on a terminal" in done.stderr  # no demo without a terminal, and it says how
    venv = home / ".local" / "share" / "wrapagent" / "venv"
    assert (home / ".local" / "bin" / "wrapagent").resolve() == (venv / "bin" / "wrapagent").resolve()

    gone = subprocess.run(["./install.sh", "--uninstall"], cwd=src, env=env, capture_output=True,
                          text=True, timeout=120)
    assert gone.returncode == 0, gone.stderr
    assert not venv.exists() and not (home / ".local" / "bin" / "wrapagent").exists()
    assert (home / ".local" / "bin").is_dir()


FAKE_LAUNCHER = '#!/bin/sh\n[ "$1" = --version ] && echo "wrapagent 0.0-fake" && exit 0\necho "demo ran: $*"\n'


@pytest.mark.parametrize("tool, bin_query", [
    ("pipx", 'if [ "$1" = environment ]; then echo "$BIN"; exit 0; fi'),
    ("uv", 'if [ "$1 $2" = "tool dir" ]; then echo "$BIN"; exit 0; fi'),
])
def test_pipx_or_uv_when_present_is_used_and_no_virtualenv_made(tmp_path, tool, bin_query):
    """With pipx (or uv) on PATH the install is theirs: the right command, their bin folder, no venv of ours."""
    src = _clean_copy(tmp_path / "wrapagent-src")
    home, tools = tmp_path / "home", tmp_path / "tools"
    home.mkdir()
    tools.mkdir()
    bin_dir = tmp_path / f"{tool}-bin"
    calls = tmp_path / "calls"
    fake = tools / tool
    fake.write_text("#!/bin/sh\n" + bin_query + "\n"
                    f'echo "$*" >> {calls}\nmkdir -p "$BIN"\n'
                    f"printf '%s' '{FAKE_LAUNCHER}' > \"$BIN/wrapagent\"\nchmod +x \"$BIN/wrapagent\"\n")
    fake.chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{tools}:{bin_dir}:{DEFAULT_PATH}", "BIN": str(bin_dir),
           "PYTHON": sys.executable, "LANG": "C.UTF-8"}
    done = subprocess.run(["./install.sh"], cwd=src, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    install = {"pipx": f"install --force --python {sys.executable} .",
               "uv": f"tool install --force --python {sys.executable} ."}[tool]
    assert calls.read_text().splitlines() == [install]
    assert f"installed: {bin_dir}/wrapagent (wrapagent 0.0-fake)" in done.stderr
    assert "not on your PATH" not in done.stderr  # its bin folder is on PATH here
    assert not (home / ".local" / "share" / "wrapagent").exists()
