"""The starter hooks.toml parses, enables the right guards, and documents the rest."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from wrapagent.hooks.builtins import BUILTIN_NAMES, validate_args
from wrapagent.errors import WrapagentError
from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML, write_starter

GUARD_KEYS = {"name", "command", "builtin", "args", "timeout_secs"}
EVENT_KEYS = {"enabled", "command", "timeout_secs"}
EVENTS = ("pre_run", "post_run", "session_complete", "waiting_for_input")
PLACEHOLDERS = ("session_id", "session_dir", "sessions_root", "tool", "project_root", "cwd", "exit_code",
                "turn")

# A commented-out TOML line: "# [section]", "# [[array]]" or "# key = value".
_COMMENTED_TOML = re.compile(r"^# (?=\[\[?[a-z_]+\]\]?$|[a-z_]+ = )")


def uncommented() -> str:
    """The starter with every documented example switched on."""
    return "\n".join(_COMMENTED_TOML.sub("", line) for line in STARTER_HOOKS_TOML.splitlines())


def check_guard(guard: dict) -> None:
    assert set(guard) <= GUARD_KEYS, guard
    assert isinstance(guard["name"], str) and guard["name"]
    assert ("command" in guard) != ("builtin" in guard), guard
    if "builtin" in guard:
        validate_args(guard["builtin"], guard.get("args", {}))
    if "timeout_secs" in guard:
        assert isinstance(guard["timeout_secs"], (int, float)) and guard["timeout_secs"] > 0


def test_starter_enables_exactly_the_three_cheap_guards() -> None:
    data = tomllib.loads(STARTER_HOOKS_TOML)
    assert set(data) == {"prompt_guard"}  # lifecycle hooks stay commented out
    guards = data["prompt_guard"]
    assert [(g["name"], g["builtin"]) for g in guards] == [
        ("branch_protection", "branch_protection"),
        ("dirty_tree", "dirty_tree"),
        ("git_status", "git_status"),
    ]
    for guard in guards:
        check_guard(guard)


def test_every_commented_example_is_valid_when_uncommented() -> None:
    data = tomllib.loads(uncommented())
    guards = data["prompt_guard"]
    for guard in guards:
        check_guard(guard)
    assert {g["builtin"] for g in guards if "builtin" in g} == set(BUILTIN_NAMES)
    assert any("command" in g for g in guards)
    names = [g["name"] for g in guards]
    assert len(names) == len(set(names))
    for event in EVENTS:
        table = data[event]
        extra = {"quiet_secs"} if event == "waiting_for_input" else set()
        assert set(table) == EVENT_KEYS | extra
        assert table["enabled"] is True
        assert isinstance(table["command"], str) and table["command"]
        assert table["timeout_secs"] > 0


def test_placeholders_and_sections_are_documented() -> None:
    for name in PLACEHOLDERS:
        assert f"{{{name}}}" in STARTER_HOOKS_TOML, name
    for event in EVENTS:
        assert f"# [{event}]" in STARTER_HOOKS_TOML
    for key in ("enabled", "command", "timeout_secs"):
        assert f"#   {key}" in STARTER_HOOKS_TOML


def test_default_session_complete_is_shown_verbatim() -> None:
    from wrapagent.hooks import config_loader as config

    default = config.DEFAULT_SESSION_COMPLETE
    assert tomllib.loads(uncommented())["session_complete"]["command"] == default


def test_write_starter_creates_parents(tmp_path: Path) -> None:
    target = tmp_path / "cfg" / "wrapagent" / "hooks.toml"
    assert write_starter(target) == target
    assert target.read_text(encoding="utf-8") == STARTER_HOOKS_TOML
    assert [p.name for p in target.parent.iterdir()] == ["hooks.toml"]  # no temp file left


def test_write_starter_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "hooks.toml"
    target.write_text("# mine\n")
    with pytest.raises(WrapagentError) as err:
        write_starter(target)
    message = str(err.value)
    assert message == f"{target} already exists; use --force to overwrite it"
    assert "\n" not in message
    assert target.read_text() == "# mine\n"


def test_write_starter_force_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "hooks.toml"
    target.write_text("# mine\n")
    write_starter(target, force=True)
    assert target.read_text(encoding="utf-8") == STARTER_HOOKS_TOML


def test_write_starter_force_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "hooks.toml"
    real.parent.mkdir()
    real.write_text("# old\n")
    link = tmp_path / "hooks.toml"
    link.symlink_to(real)
    with pytest.raises(WrapagentError):
        write_starter(link)
    write_starter(link, force=True)
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == STARTER_HOOKS_TOML


def test_write_starter_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WrapagentError, match="is a directory"):
        write_starter(tmp_path, force=True)


def test_write_starter_reports_unwritable_path_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(WrapagentError) as err:
        write_starter(blocker / "sub" / "hooks.toml")
    assert str(err.value).startswith(f"cannot write {blocker / 'sub' / 'hooks.toml'}: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("variant", ["as shipped", "all examples uncommented"])
def test_real_loader_accepts_the_starter_without_problems(tmp_path: Path, variant: str) -> None:
    config = pytest.importorskip("wrapagent.hooks.config_loader")
    load_config = getattr(config, "load_config", None)
    if load_config is None:
        pytest.skip("wrapagent.hooks.config_loader has no load_config")
    text = STARTER_HOOKS_TOML if variant == "as shipped" else uncommented()
    hooks = tmp_path / "xdg" / "wrapagent" / "hooks.toml"
    hooks.parent.mkdir(parents=True)
    hooks.write_text(text, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    cfg = load_config(project, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)})
    assert [str(p) for p in cfg.problems] == []
    expected = 3 if variant == "as shipped" else len(tomllib.loads(text)["prompt_guard"])
    assert len(cfg.guards) == expected


def _git(repo: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.parametrize("branch, dirty, code", [
    ("main", True, 2), ("main", False, 0), ("feature", True, 0), ("master", True, 2),
])
def test_pre_run_example_refuses_a_dirty_protected_branch(tmp_path: Path, branch: str, dirty: bool,
                                                          code: int) -> None:
    """The commented pre_run example, as wrapagent would run it (substituted, sh -c, in the project root)."""
    from wrapagent.hooks.context import GuardContext
    from wrapagent.hooks.hook_runner import run_command, substitute, hook_variables

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", branch)
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    if dirty:
        (repo / "new.txt").write_text("x\n")
    command = tomllib.loads(uncommented())["pre_run"]["command"]
    ctx = GuardContext(project_root=repo, cwd=repo, tool="codex", session_id="01S")
    result = run_command(substitute(command, hook_variables(ctx)), name="pre_run", kind="lifecycle",
                         cwd=repo, env={"PATH": "/usr/bin:/bin"}, timeout=30, log=lambda m: None)
    assert result.exit_code == code
    if code == 2:
        assert result.refuses()
        assert result.message() == (f"on {branch} with uncommitted changes: commit or stash them, "
                                    "or switch to a branch")


def test_pre_run_example_is_silent_outside_a_repository(tmp_path: Path) -> None:
    from wrapagent.hooks.hook_runner import run_command

    command = tomllib.loads(uncommented())["pre_run"]["command"]
    env = {"PATH": "/usr/bin:/bin", "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    result = run_command(command, name="pre_run", kind="lifecycle", cwd=tmp_path, env=env, timeout=30,
                         log=lambda m: None)
    assert result.exit_code == 0
