"""The wrapped tool's version (`session/tool_version.py`): found without costing start-up.

A cache hit starts no process; the cache follows the binary (mtime); npm
installs answer from their package.json; `TOOL --version` runs from `/`,
is killed when it hangs, and only a release number gets out of what it
printed. End to end, the record gets `tool_version` and a hanging
`--version` changes neither the tool's exit code nor leaves a process.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from wrapagent.session import tool_version as tv

from waiting import wait_for


def write_exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def counting_tool(folder: Path, version: str) -> Path:
    """A fake codex whose `--version` prints `version` and counts its runs in runs.txt."""
    return write_exe(folder / "codex", f'#!/bin/sh\nif [ "$1" = --version ]; then echo x >> {folder}/runs.txt; '
                                       f'pwd > {folder}/cwd.txt; echo "codex-cli {version}"; exit 0; fi\nexit 0\n')


def runs(folder: Path) -> int:
    try:
        return len((folder / "runs.txt").read_text().splitlines())
    except FileNotFoundError:
        return 0


@pytest.fixture
def no_process(monkeypatch: pytest.MonkeyPatch):
    """Starting any process fails the test."""
    def forbidden(*args, **kwargs):
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    for name in ("posix_spawn", "posix_spawnp", "fork", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, forbidden)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --------------------------------------------------------------------------- the cache


def test_a_cache_hit_starts_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = counting_tool(tmp_path, "0.140.0")
    env = dict(os.environ)
    first = tv.find_version(str(tool), env, may_run=True)
    assert first == {"version": "0.140.0", "source": "--version", "error": None}
    assert runs(tmp_path) == 1
    assert (tmp_path / "cwd.txt").read_text().strip() == "/"  # never the project folder
    def forbidden(*args, **kwargs):
        raise AssertionError(f"a process was started: {args!r}")
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    assert tv.find_version(str(tool), env, may_run=True) == {"version": "0.140.0", "source": "cache", "error": None}
    # The same through a session's lookup (thread, no delay).
    lookup = tv.Lookup(str(tool), env, may_run=True, delay=0).start()
    assert lookup.result(wait=30) == "0.140.0"
    assert runs(tmp_path) == 1


def test_the_cache_follows_the_binary_mtime(tmp_path: Path) -> None:
    tool = counting_tool(tmp_path, "1.2.3")
    env = dict(os.environ)
    assert tv.find_version(str(tool), env, may_run=True)["version"] == "1.2.3"
    size = tool.stat().st_size
    counting_tool(tmp_path, "1.2.4")  # an upgrade in place: same size, another mtime
    later = tool.stat().st_mtime_ns + 2_000_000_000
    os.utime(tool, ns=(later, later))
    assert tool.stat().st_size == size
    assert tv.find_version(str(tool), env, may_run=True) == {"version": "1.2.4", "source": "--version", "error": None}
    assert runs(tmp_path) == 2
    cache = json.loads(Path(tv.cache_path(env)).read_text())
    assert cache[str(tool.resolve())]["mtime_ns"] == later


def test_a_link_is_cached_as_the_binary_it_points_to(tmp_path: Path, no_process) -> None:
    real = tmp_path / "lib" / "node_modules" / "@openai" / "codex"
    write_exe(real / "bin" / "codex.js", "#!/usr/bin/env node\n")
    (real / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.140.0",
                                                   "bin": {"codex": "bin/codex.js"}}))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").symlink_to(real / "bin" / "codex.js")
    env = dict(os.environ)
    assert tv.find_version(str(tmp_path / "bin" / "codex"), env, may_run=True)["version"] == "0.140.0"
    cache = json.loads(Path(tv.cache_path(env)).read_text())
    assert list(cache) == [str((real / "bin" / "codex.js").resolve())]


def test_a_binary_that_never_answers_is_asked_a_bounded_number_of_times(tmp_path: Path) -> None:
    tool = write_exe(tmp_path / "codex", f'#!/bin/sh\necho x >> {tmp_path}/runs.txt\necho "no idea"\n')
    env = dict(os.environ)
    for _ in range(tv.MAX_FAILURES + 2):
        assert tv.find_version(str(tool), env, may_run=True)["version"] is None
    assert runs(tmp_path) == tv.MAX_FAILURES
    assert tv.find_version(str(tool), env, may_run=True, trust_failures=False)["version"] is None  # doctor asks
    assert runs(tmp_path) == tv.MAX_FAILURES + 1


def test_an_unknown_tool_is_never_run(tmp_path: Path, no_process) -> None:
    tool = counting_tool(tmp_path, "1.0.0")
    assert tv.find_version(str(tool), dict(os.environ), may_run=False)["version"] is None


# --------------------------------------------------------------------------- npm and native installs


def npm_layout(base: Path) -> Path:
    """node_modules as npm lays out codex, claude and opencode (checked against real installs)."""
    nm = base / "node_modules"
    codex = nm / "@openai" / "codex"
    write_exe(codex / "bin" / "codex.js", "#!/usr/bin/env node\n")
    (codex / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.140.0",
                                                    "bin": {"codex": "bin/codex.js"}}))
    native = nm / "@openai" / "codex-linux-x64"
    write_exe(native / "vendor" / "x86_64-unknown-linux-musl" / "codex" / "codex", "\x7fELF")
    (native / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.140.0-linux-x64",
                                                     "os": ["linux"], "cpu": ["x64"]}))
    claude = nm / "@anthropic-ai" / "claude-code"
    write_exe(claude / "bin" / "claude.exe", "\x7fELF")
    (claude / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": "2.0.1",
                                                     "bin": {"claude": "bin/claude.exe"}}))
    (nm / ".bin").mkdir()
    (nm / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    (nm / ".bin" / "claude").symlink_to("../@anthropic-ai/claude-code/bin/claude.exe")
    return nm


def test_npm_installs_answer_from_their_package_json(tmp_path: Path, no_process) -> None:
    nm = npm_layout(tmp_path)
    env = dict(os.environ)
    assert tv.find_version(str(nm / ".bin" / "codex"), env, may_run=True) == {
        "version": "0.140.0", "source": "package.json", "error": None}
    assert tv.find_version(str(nm / ".bin" / "claude"), env, may_run=True)["version"] == "2.0.1"
    native = nm / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "codex" / "codex"
    assert tv.from_install(str(native)) == ("0.140.0", "package.json")  # the platform suffix dropped


def test_claude_native_install_is_named_by_its_version(tmp_path: Path, no_process) -> None:
    binary = write_exe(tmp_path / "share" / "claude" / "versions" / "2.1.30", "\x7fELF")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").symlink_to(binary)
    assert tv.find_version(str(tmp_path / "bin" / "claude"), dict(os.environ), may_run=True) == {
        "version": "2.1.30", "source": "install folder", "error": None}


@pytest.mark.parametrize("where, expected", [
    ("opt/homebrew/Cellar/codex/0.140.0_1/bin/codex", "0.140.0"),
    ("usr/local/Caskroom/codex/0.141.2/codex", "0.141.2"),
    ("opt/homebrew/Cellar/codex/HEAD-abc123/bin/codex", None),
])
def test_homebrew_installs_are_named_by_their_folder(tmp_path: Path, no_process, where: str,
                                                     expected: str | None) -> None:
    binary = write_exe(tmp_path / where, "\x7fELF")
    assert tv.find_version(str(binary), dict(os.environ), may_run=False)["version"] == expected


def test_a_projects_own_package_json_is_not_the_tools(tmp_path: Path) -> None:
    """A script of the user's under their project's package.json is not that package's release."""
    project = tmp_path / "proj"
    (project).mkdir()
    (project / "package.json").write_text(json.dumps({"name": "mine", "version": "9.9.9"}))
    tool = counting_tool(project / "scripts", "1.0.0")
    assert tv.from_install(str(tool)) == (None, "package.json")
    assert tv.find_version(str(tool), dict(os.environ), may_run=True)["version"] == "1.0.0"  # it ran
    # ... unless the package says the script is its binary.
    (project / "package.json").write_text(json.dumps({"name": "mine", "version": "9.9.9",
                                                      "bin": {"codex": "scripts/codex"}}))
    assert tv.from_install(str(tool)) == ("9.9.9", "package.json")


def test_a_package_json_version_with_escapes_is_rejected(tmp_path: Path, no_process) -> None:
    nm = npm_layout(tmp_path)
    pkg = nm / "@openai" / "codex" / "package.json"
    pkg.write_text(json.dumps({"name": "@openai/codex", "version": "0.1.0\x1b]0;pwned\x07",
                               "bin": {"codex": "bin/codex.js"}}))
    assert tv.find_version(str(nm / ".bin" / "codex"), dict(os.environ), may_run=False)["version"] is None


# --------------------------------------------------------------------------- what `--version` printed


@pytest.mark.parametrize("printed, expected", [
    (b"codex-cli 0.169.0\n", "0.169.0"),
    (b"2.1.330 (Claude Code)\n", "2.1.330"),
    (b"0.61.0\n", "0.61.0"),
    (b"opencode v1.18.33-beta.2\n", "1.18.33-beta.2"),
    (b"\x1b]0;pwned\x07\x1b[31m1.2.3\x1b[0m\n", "1.2.3"),
    (b"\x1b]52;c;ZXZpbA==\x07tool 4.5.6\x1b[2J\x1b[H\n", "4.5.6"),
    (b"warning: node 18 is old\ncodex-cli 0.170.0\n", "0.170.0"),
    (b"oops: no such flag\n", None),
    (b"\x1b[2J\x1b[H\x9b31m\x00\xff\xfe", None),
    (b"1.2.3\x1b[?1049h-evil", "1.2.3"),
    (b"v1.2.3-" + b"a" * 300, None),
    (b"build 20241105 commit abc123\n", None),
    (b"", None),
])
def test_only_a_release_number_gets_out_of_the_output(printed: bytes, expected: str | None) -> None:
    found = tv.parse_version_output(printed)
    assert found == expected
    if found is not None:
        assert all(ch.isalnum() or ch in ".-" for ch in found)


def test_a_tool_printing_escapes_on_version_gives_a_clean_number(tmp_path: Path) -> None:
    tool = write_exe(tmp_path / "codex", "#!/bin/sh\nprintf '\\033]0;pwned\\007\\033[2Jcodex \\033[31m3.4.5\\033[0m\\n'\n")
    assert tv.find_version(str(tool), dict(os.environ), may_run=True)["version"] == "3.4.5"
    garbage = write_exe(tmp_path / "gemini", "#!/bin/sh\nprintf '\\033]52;c;ZXZpbA==\\007\\033[2J nope\\n'\n")
    result = tv.find_version(str(garbage), dict(os.environ), may_run=True)
    assert result["version"] is None and "\x1b" not in json.dumps(result, ensure_ascii=False)


# --------------------------------------------------------------------------- a hanging `--version`


def hanging_tool(folder: Path) -> Path:
    return write_exe(folder / "codex", f'#!/bin/sh\nif [ "$1" = --version ]; then echo $$ > {folder}/version.pid; '
                                       f'exec sleep 300; fi\nexit 0\n')


def test_a_hanging_version_is_killed_at_its_timeout(tmp_path: Path) -> None:
    tool = hanging_tool(tmp_path)
    result = tv.find_version(str(tool), dict(os.environ), may_run=True, timeout=0.5)
    assert result == {"version": None, "source": None, "error": "`codex --version` did not finish within 0.5s"}
    assert gone(int((tmp_path / "version.pid").read_text()))


def test_a_hanging_version_is_killed_when_the_session_ends(tmp_path: Path) -> None:
    tool = hanging_tool(tmp_path)
    lookup = tv.Lookup(str(tool), dict(os.environ), may_run=True, delay=0, timeout=300).start()
    wait_for(lambda: (tmp_path / "version.pid").exists() and (tmp_path / "version.pid").read_text().strip())
    pid = int((tmp_path / "version.pid").read_text())
    assert lookup.result(wait=0.2) is None
    wait_for(lambda: gone(pid))
    assert not lookup.thread.is_alive()
    # Cut short by the session, not the binary's fault: no failure is counted against it.
    assert not Path(tv.cache_path(os.environ)).exists()


def test_a_short_session_runs_nothing_at_its_end(tmp_path: Path) -> None:
    """The delay before `--version` is cut by the session's end: no run, the user does not wait for one."""
    tool = counting_tool(tmp_path, "1.0.0")
    lookup = tv.Lookup(str(tool), dict(os.environ), may_run=True, delay=300).start()
    assert lookup.result(wait=30) is None
    assert runs(tmp_path) == 0


# --------------------------------------------------------------------------- end to end


def only_record() -> dict:
    (path,) = Path(os.environ["XDG_STATE_HOME"]).glob("wrapagent/projects/*/*/session.json")
    return json.loads(path.read_text())


def test_the_record_gets_the_version_of_the_tool_that_ran(tmp_path: Path, run_wrapagent) -> None:
    """A git project (the usual order: `before` checkpoint, then the tool): tool_version recorded."""
    bindir = tmp_path / "bin"
    counting_tool(bindir, "0.140.0")
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    tool = write_exe(bindir / "codex", f'#!/bin/sh\nif [ "$1" = --version ]; then echo x >> {bindir}/runs.txt; '
                                       f'echo "codex-cli 0.140.0"; exit 0; fi\n'
                                       f'while [ ! -s {bindir}/runs.txt ]; do sleep 0.05; done\necho ran; exit 4\n')
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    child = run_wrapagent("codex", env=env, cwd=work)
    child.expect(b"ran")
    assert child.finish() == 4
    record = only_record()
    assert record["exit_code"] == 4 and record["tool_version"] == "0.140.0"
    assert record["executable"] == str(tool)


def test_a_hanging_version_changes_nothing_for_the_tool(tmp_path: Path, run_wrapagent) -> None:
    """Tool first (no git, no hooks): the tool waits until its `--version` hangs, then exits 3."""
    bindir = tmp_path / "bin"
    write_exe(bindir / "codex", f'#!/bin/sh\nif [ "$1" = --version ]; then echo $$ > {bindir}/version.pid; '
                                f'exec sleep 300; fi\n'
                                f'while [ ! -s {bindir}/version.pid ]; do sleep 0.05; done\necho ran; exit 3\n')
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    child = run_wrapagent("codex", env=env, cwd=tmp_path)
    child.expect(b"ran")
    assert child.finish() == 3
    record = only_record()
    assert record["exit_code"] == 3 and record["tool_version"] is None
    assert gone(int((bindir / "version.pid").read_text()))


def test_version_runs_with_no_signal_blocked(tmp_path: Path) -> None:
    """Started from a thread that blocks the proxy's signals, `--version` still gets an empty mask."""
    import signal
    import threading

    import sys

    # Python, not sh: dash blocks signals around its own waits, and the mask read would be its.
    tool = write_exe(tmp_path / "codex", f"#!{sys.executable}\n"
                                         f"status = open('/proc/self/status').read()\n"
                                         f"open({str(tmp_path / 'mask.txt')!r}, 'w').write(status.split('SigBlk:')[1])\n"
                                         "print('codex-cli 1.0.0')\n")
    if not Path("/proc/self/status").exists():
        pytest.skip("reads the mask from /proc")
    found: list = []

    def starter() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
        lookup = tv.Lookup(str(tool), dict(os.environ), may_run=True, delay=0).start()
        wait_for(lambda: lookup.found is not None)  # the session's end would cut the delay short
        found.append(lookup.result())

    thread = threading.Thread(target=starter)
    thread.start()
    thread.join(60)
    assert found == ["1.0.0"]
    assert int((tmp_path / "mask.txt").read_text().split()[0], 16) == 0


def damaged_cache(env: dict, tool: Path, corrupt: str) -> None:
    path = Path(tv.cache_path(env))
    path.parent.mkdir(parents=True, exist_ok=True)
    if corrupt == "nested":
        path.write_text("[" * 100_000)
    else:
        st = tool.resolve().stat()
        path.write_text(json.dumps({str(tool.resolve()): {"mtime_ns": st.st_mtime_ns, "size": st.st_size,
                                                          "version": None, "failures": "x"}}))


@pytest.mark.parametrize("corrupt", ["nested", "failures"])
def test_a_corrupt_cache_is_started_afresh(tmp_path: Path, corrupt: str) -> None:
    """A damaged cache is no cache: before, a deeply nested one raised RecursionError and a
    non-number `failures` ValueError out of `find_version` (doctor's traceback; every session's
    version lost for good, the cache never rewritten)."""
    tool = counting_tool(tmp_path, "0.140.0")
    env = dict(os.environ)
    damaged_cache(env, tool, corrupt)
    assert tv.find_version(str(tool), env, may_run=True)["version"] == "0.140.0"
    assert tv.cached(str(tool), env) == (True, "0.140.0")
    silent = write_exe(tmp_path / "other" / "codex", "#!/bin/sh\necho no idea\n")
    damaged_cache(env, silent, corrupt)
    assert tv.find_version(str(silent), env, may_run=True)["version"] is None
    assert tv.cached(str(silent), env) == (False, None)


def test_a_session_that_fails_does_not_leave_its_version_run_behind(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """wrapagent failing (or a SIGTERM's unwinding) while `--version` runs: `after` never comes,
    so before, nothing ended the lookup and a hanging `--version` outlived wrapagent."""
    from wrapagent.session import starting
    from wrapagent.session.launch import RunOptions
    from wrapagent.session.lifecycle import Session

    tool = hanging_tool(tmp_path / "bin")
    work = tmp_path / "work"
    work.mkdir()

    def failing_run_tool(live):
        live.version_lookup = tv.Lookup(str(tool), dict(os.environ), may_run=True, delay=0, timeout=300).start()
        wait_for(lambda: (tmp_path / "bin" / "version.pid").exists()
                 and (tmp_path / "bin" / "version.pid").read_text().strip())
        raise RuntimeError("wrapagent failed while the tool ran")

    monkeypatch.setattr(starting, "run_tool", failing_run_tool)
    monkeypatch.chdir(work)
    env = dict(os.environ)
    session = Session(RunOptions(tool="codex", args=[]), env, dict(env), str(tool), [str(tool)], False)
    with pytest.raises(RuntimeError):
        session.run()
    pid = int((tmp_path / "bin" / "version.pid").read_text())
    try:
        wait_for(lambda: gone(pid), timeout=10)
    finally:
        if not gone(pid):
            os.kill(pid, 9)
