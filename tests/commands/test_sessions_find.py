"""`last` is the newest session of an agent: a program that is no agent (`wrapagent diff …`) is passed over."""

from __future__ import annotations

from pathlib import Path

from checkpoint_world import isolated_env, make_repo, run_session, sessions, write
from wrapagent.commands.sessions_find import is_agent_session


def test_which_sessions_are_an_agents():
    assert is_agent_session({"tool": "codex", "transport": "codex"})
    assert is_agent_session({"tool": "demo", "transport": "demo"})
    assert is_agent_session({"tool": "/opt/bin/aider", "transport": "aider"})
    assert not is_agent_session({"tool": "diff", "transport": "diff"})
    assert not is_agent_session({"tool": "sh", "transport": "sh"})
    assert not is_agent_session({})


def test_undo_show_and_diff_last_pass_over_a_newer_non_agent_session(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    agent = run_session(repo, env, lambda r: write(r / "agent.txt", "the agent's\n"))
    run_session(repo, env, lambda r: write(r / "diff.out", "diff's\n"), tool="diff", transport="diff")

    code, out, err = sessions(env, repo, "show", "last")
    assert code == 0 and out.startswith(f"session {agent['id']}\n")
    assert "1 newer session(s) of programs that are no agents (diff) are left out" in err

    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert not (repo / "agent.txt").exists()
    assert (repo / "diff.out").read_text() == "diff's\n"  # not the agent's: left alone
    assert f"undid session {agent['id']}" in out and "(diff)" in err


def test_last_tilde_n_counts_agent_sessions_only(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    older = run_session(repo, env, lambda r: write(r / "one.txt", "1\n"))
    run_session(repo, env, lambda r: write(r / "x.txt", "x\n"), tool="sh", transport="sh")
    run_session(repo, env, lambda r: write(r / "two.txt", "2\n"))
    code, out, _ = sessions(env, repo, "show", "last~1")
    assert code == 0 and out.startswith(f"session {older['id']}\n")


def test_only_non_agent_sessions_here_undo_refuses_saying_why(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    run_session(repo, env, lambda r: write(r / "diff.out", "diff's\n"), tool="diff", transport="diff")
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and out == ""
    assert "no session recorded in this project" in err
    assert "besides 1 of programs that are no agents, not counted: diff" in err
    assert (repo / "diff.out").exists()


def test_a_configured_agent_counts(tmp_path: Path, monkeypatch) -> None:
    """A program the configuration names as an agent is `last` like a known one."""
    from wrapagent.commands import sessions_find

    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    run_session(repo, env, lambda r: write(r / "a.txt", "codex's\n"))
    mine = run_session(repo, env, lambda r: write(r / "b.txt", "mine\n"), tool="my-agent", transport="my-agent")
    code, out, _ = sessions(env, repo, "show", "last")
    assert code == 0 and not out.startswith(f"session {mine['id']}\n")
    monkeypatch.setattr(sessions_find, "configured_agents", lambda env, cwd: ("my-agent",))
    code, out, err = sessions(env, repo, "show", "last")
    assert code == 0 and out.startswith(f"session {mine['id']}\n") and err == ""


def test_configured_agents_reads_the_configuration_without_a_word(tmp_path: Path, capsys) -> None:
    from wrapagent.commands.sessions_find import configured_agents

    env = isolated_env(tmp_path / "iso")
    repo = make_repo(tmp_path / "proj", env)
    (repo / ".wrapagent").mkdir()
    (repo / ".wrapagent" / "hooks.toml").write_text('[pre_run]\ncommand = "echo untrusted"\n')
    assert isinstance(configured_agents(env, repo), tuple)
    assert capsys.readouterr() == ("", "")
