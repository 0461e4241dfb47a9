"""wrapagent/gitcmd.py: every git call names its repository, inherits no location variable,
runs no hook of the user's, never prompts, and dies whole at its timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wrapagent import gitcmd


def _git(cwd: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q")
    _git(r, "config", "user.name", "t")
    _git(r, "config", "user.email", "t@t")
    (r / "a.txt").write_text("a\n")
    _git(r, "add", "a.txt")
    _git(r, "commit", "-qm", "one")
    return r


def test_location_vars_cover_what_git_lists_as_local():
    """`git rev-parse --local-env-vars` is git's own list; a newer git adding one must fail here."""
    listed = set(subprocess.run(["git", "rev-parse", "--local-env-vars"], capture_output=True, text=True,
                                check=True).stdout.split())
    assert listed and listed <= gitcmd.LOCATION_VARS, sorted(listed - gitcmd.LOCATION_VARS)


def test_env_drops_every_location_variable_and_keeps_the_rest():
    base = {name: "/elsewhere" for name in gitcmd.LOCATION_VARS}
    base.update(GIT_CONFIG_KEY_0="core.hooksPath", GIT_CONFIG_VALUE_0="/x", GIT_PUSH_OPTION_0="y",
                HOME="/home/u", PATH="/bin", GIT_CONFIG_GLOBAL="/g")
    out = gitcmd.env(base)
    assert not [k for k in out if k in gitcmd.LOCATION_VARS and k not in gitcmd._QUIET]
    assert not [k for k in out if k.startswith(gitcmd.LOCATION_PREFIXES)]
    assert out["HOME"] == "/home/u" and out["GIT_CONFIG_GLOBAL"] == "/g"
    assert out["GIT_TERMINAL_PROMPT"] == "0" and out["GIT_EDITOR"] == ":"
    assert gitcmd.env(base, index="/tmp/i")["GIT_INDEX_FILE"] == "/tmp/i"


def test_inherited_git_dir_and_index_do_not_reach_git(repo: Path, tmp_path: Path, monkeypatch):
    """As inside a pre-commit hook of another repository: git must still see `repo`."""
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    top = gitcmd.run(repo, ["rev-parse", "--show-toplevel"], check=True).text().strip()
    assert Path(top) == repo.resolve()
    files = gitcmd.run(repo, ["ls-files"], check=True).text().split()
    assert files == ["a.txt"]


def test_explicit_git_dir_never_discovers_upward(tmp_path: Path):
    """A broken `.git` with `--git-dir` named is an error, not the enclosing repository."""
    outer = tmp_path / "home"
    outer.mkdir()
    _git(outer, "init", "-q")
    inner = outer / "sessions"
    (inner / ".git").mkdir(parents=True)  # empty: not a repository
    res = gitcmd.run(inner, ["rev-parse", "--git-dir"], git_dir=inner / ".git")
    assert res.code != 0
    res = gitcmd.run(inner, ["rev-parse", "--absolute-git-dir"])  # discovery, for contrast
    assert res.code == 0 and Path(res.text().strip()) == (outer / ".git").resolve()


def test_no_hook_of_the_users_runs(repo: Path, tmp_path: Path):
    marker = tmp_path / "hook-ran"
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-index-change", "reference-transaction", "post-commit"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
        (hooks / name).chmod(0o755)
    (repo / "b.txt").write_text("b\n")
    gitcmd.run(repo, ["add", "b.txt"], check=True)
    gitcmd.run(repo, ["commit", "-qm", "two"], check=True, identity=True)
    gitcmd.run(repo, ["update-ref", "refs/wrapagent/x", "HEAD"], check=True)
    assert not marker.exists(), marker.read_text()
    # the hooks are real: plain git runs them
    _git(repo, "update-ref", "refs/wrapagent/y", "HEAD")
    assert "reference-transaction" in marker.read_text()
    assert b"hooksPath" not in (repo / ".git" / "config").read_bytes()


def test_never_prompts(repo: Path):
    """Prompts off, stdin empty, and a session of its own (no /dev/tty to ask on)."""
    script = "!sh -c 'echo prompt=$GIT_TERMINAL_PROMPT; ps -o sid= -p $$; cat; echo stdin-done'"
    res = gitcmd.run(repo, ["probe"], config=[f"alias.probe={script}"], timeout=60, check=True)
    lines = res.text().split()
    assert lines[0] == "prompt=0" and lines[-1] == "stdin-done"
    assert int(lines[1]) != os.getsid(0)


def test_timeout_kills_the_whole_process_group(repo: Path, tmp_path: Path):
    """An alias running a shell that starts a sleeper: both are gone once GitTimeout is raised."""
    pidfile = tmp_path / "pid"
    script = f"!sh -c 'sleep 300 & echo $! > {pidfile}; wait'"
    with pytest.raises(gitcmd.GitTimeout):
        gitcmd.run(repo, ["slow"], config=[f"alias.slow={script}"], timeout=1.0)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        # a zombie until reaped by init counts as gone
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail("the sleeper git started outlived the timeout")


def test_check_raises_with_the_reason(repo: Path):
    with pytest.raises(gitcmd.GitError, match="rev-parse"):
        gitcmd.run(repo, ["rev-parse", "--verify", "nosuchref"], check=True)


def test_the_reason_is_gits_fatal_line_not_the_hint_after_it(repo: Path):
    """A held ref lock: git says `fatal: cannot lock ref …`, then a paragraph of hints ending in
    "remove the file manually to continue." Before, that last hint was all the user saw."""
    branch = gitcmd.run(repo, ["symbolic-ref", "HEAD"], check=True).text().strip()
    (repo / ".git" / f"{branch}.lock").write_bytes(b"")
    with pytest.raises(gitcmd.GitError) as failed:
        gitcmd.run(repo, ["commit", "-q", "--allow-empty", "-m", "x"], check=True, identity=True)
    assert "fatal: " in str(failed.value) and "lock" in str(failed.value)


def test_limit_truncates_stdout(repo: Path):
    big = repo / "big.txt"
    big.write_text("x" * 300_000)
    res = gitcmd.run(repo, ["cat-file", "-p", gitcmd.run(repo, ["hash-object", "-w", "big.txt"],
                                                          check=True).text().strip()], limit=1000)
    assert res.truncated and len(res.stdout) == 1000
    res = gitcmd.run(repo, ["rev-parse", "HEAD"], limit=1000)
    assert not res.truncated and res.ok and len(res.text().strip()) == 40


def test_missing_git_is_a_git_error(repo: Path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(gitcmd.GitError) as info:
        gitcmd.run(repo, ["status"])
    assert info.value.code is None


def test_importing_gitcmd_loads_nothing_heavy():
    code = ("import sys; before=set(sys.modules); import wrapagent.gitcmd; "
            "print(sorted(m for m in set(sys.modules)-before if not m.startswith('wrapagent')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
