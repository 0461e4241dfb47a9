"""config: layers, validation with file/line/key, merging, trust, describe."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wrapagent.hooks.config_check import describe
from wrapagent.hooks.config_loader import (
    DEFAULT_SESSION_COMPLETE,
    EVENTS,
    Config,
    GuardSpec,
    LifecycleHook,
    PreSessionHook,
    Problem,
    config_without_files,
    load_config,
)
from wrapagent.values import FrozenError


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def global_hooks(env: dict[str, str], text: str) -> Path:
    return _write(Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml", text)


def global_config(env: dict[str, str], text: str) -> Path:
    return _write(Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "config.toml", text)


def project_hooks(project: Path, text: str) -> Path:
    return _write(project / ".wrapagent" / "hooks.toml", text)


def trusted(_path: Path, _data: bytes) -> bool:
    return True


def load(project: Path, env: dict[str, str], is_trusted=trusted) -> Config:
    return load_config(project, env=env, is_trusted=is_trusted)


def layer(config: Config, kind: str):
    return next(l for l in config.layers if l.kind == kind)


def problems(config: Config, severity: str | None = None) -> list[Problem]:
    return [p for p in config.problems if severity is None or p.severity == severity]


# --------------------------------------------------------------------------- no files


def test_no_files(project, env):
    config = load(project, env)
    assert dict(config.lifecycle) == {} and config.guards == () and config.pre_session is None
    assert [l.kind for l in config.layers] == ["global-hooks", "global-config", "project-hooks"]
    assert all(not l.exists and not l.used and l.problems == () for l in config.layers)
    assert config.problems == () and not config.has_errors
    assert config.hook_for("pre_run") is None and config.hook_for("post_run") is None
    default = config.hook_for("session_complete")
    assert default == LifecycleHook("session_complete", DEFAULT_SESSION_COMPLETE, True, 30.0, "<default>")
    assert EVENTS == ("pre_run", "post_run", "session_complete", "waiting_for_input")


def test_the_config_without_files_is_what_loading_finds_when_there_is_none(project, env):
    """A launch that found no file starts the tool on the defaults and makes its config later."""
    assert config_without_files(str(project), env=env) == load(project, env)


def test_the_config_without_files_does_not_look_again(project, env):
    """A file that appears after the launch looked must not change what the tool was started on."""
    global_hooks(env, '[pre_run]\ncommand = "true"\n')
    project_hooks(project, '[post_run]\ncommand = "true"\n')
    config = config_without_files(str(project), env=env)
    assert config.hook_for("pre_run") is None and config.hook_for("post_run") is None
    assert not any(l.exists for l in config.layers)
    assert [l.path for l in config.layers] == [l.path for l in load(project, env).layers]


def test_no_files_does_not_import_tomllib(project, env):
    code = (
        "import sys; from pathlib import Path; from wrapagent.hooks.config_loader import load_config; "
        f"load_config(Path({str(project)!r}), env={env!r}, is_trusted=lambda p, d: True); "
        "assert 'tomllib' not in sys.modules and 'tomli' not in sys.modules; "
        "assert 'subprocess' not in sys.modules and 'json' not in sys.modules; "
        "assert 'wrapagent.hooks.config_tables' not in sys.modules"  # the table parsers: only for a file
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_config_is_frozen(project, env):
    config = load(project, env)
    with pytest.raises(FrozenError):
        config.guards = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.lifecycle["pre_run"] = None  # type: ignore[index]


# --------------------------------------------------------------------------- parsing and merging


def test_global_hooks_parsed_with_defaults(project, env):
    path = global_hooks(
        env,
        """
        [pre_run]
        command = "echo pre {tool}"

        [post_run]
        enabled = false

        [[prompt_guard]]
        name = "branch-protection"
        command = "/path/guard.sh"
        timeout_secs = 5

        [[prompt_guard]]
        name = "status"
        builtin = "git_status"
        """,
    )
    config = load(project, env)
    assert config.problems == ()
    assert config.lifecycle["pre_run"] == LifecycleHook("pre_run", "echo pre {tool}", True, 30.0, str(path))
    assert config.lifecycle["post_run"].enabled is False
    assert config.hook_for("post_run") is None
    assert config.guards[0] == GuardSpec("branch-protection", "/path/guard.sh", None, (), 5.0, str(path))
    status = config.guards[1]
    assert status.builtin == "git_status" and status.command is None and status.timeout_secs == 10.0
    assert dict(status.args), "validate_args fills the defaults in"
    assert layer(config, "global-hooks").used


def test_project_overrides_per_event_and_replaces_guards(project, env):
    gpath = global_hooks(
        env,
        """
        [pre_run]
        command = "global pre"
        [post_run]
        command = "global post"
        [[prompt_guard]]
        name = "g1"
        command = "g1"
        [[prompt_guard]]
        name = "g2"
        command = "g2"
        """,
    )
    ppath = project_hooks(
        project,
        """
        [post_run]
        command = "project post"
        timeout_secs = 2.5
        [[prompt_guard]]
        name = "p1"
        command = "p1"
        """,
    )
    config = load(project, env)
    assert config.lifecycle["pre_run"].source == str(gpath)
    assert config.lifecycle["post_run"] == LifecycleHook("post_run", "project post", True, 2.5, str(ppath))
    assert [g.name for g in config.guards] == ["p1"]
    assert layer(config, "project-hooks").trusted is True


def test_project_empty_guard_list_replaces_global(project, env):
    global_hooks(env, '[[prompt_guard]]\nname = "g"\ncommand = "g"\n')
    project_hooks(project, "prompt_guard = []\n")
    assert load(project, env).guards == ()


def test_project_without_guard_key_keeps_global(project, env):
    global_hooks(env, '[[prompt_guard]]\nname = "g"\ncommand = "g"\n')
    project_hooks(project, '[pre_run]\ncommand = "p"\n')
    assert [g.name for g in load(project, env).guards] == ["g"]


def test_project_can_disable_a_global_event(project, env):
    global_hooks(env, '[pre_run]\ncommand = "global"\n')
    project_hooks(project, "[pre_run]\nenabled = false\n")
    config = load(project, env)
    assert config.problems == ()
    assert config.hook_for("pre_run") is None


def test_session_complete_configured_disabled_and_partial(project, env):
    global_hooks(env, '[session_complete]\ncommand = "my commit"\ntimeout_secs = 60\n')
    hook = load(project, env).hook_for("session_complete")
    assert hook.command == "my commit" and hook.timeout_secs == 60 and hook.source != "<default>"

    global_hooks(env, "[session_complete]\nenabled = false\n")
    assert load(project, env).hook_for("session_complete") is None

    global_hooks(env, "[session_complete]\ntimeout_secs = 5\n")
    config = load(project, env)
    assert config.problems == ()
    hook = config.hook_for("session_complete")
    assert hook.command == DEFAULT_SESSION_COMPLETE and hook.timeout_secs == 5


def test_pre_session(project, env):
    path = global_config(
        env,
        """
        [hooks.pre_session]
        command = "mempal timeline --language en --limit 30"
        enabled = true
        transports = ["codex", "Claude-Code", "gemini-cli", "codex"]
        timeout_seconds = 3
        """,
    )
    config = load(project, env)
    assert config.problems == ()
    assert config.pre_session == PreSessionHook(
        "mempal timeline --language en --limit 30", True, ("codex", "claude", "gemini"), 3.0, str(path)
    )
    pre = config.pre_session
    assert pre.applies_to("codex") and pre.applies_to("claude") and pre.applies_to("claude-code")
    assert pre.applies_to("gemini") and not pre.applies_to("opencode")


def test_pre_session_defaults_apply_to_all(project, env):
    global_config(env, '[hooks.pre_session]\ncommand = "x"\n')
    pre = load(project, env).pre_session
    assert pre.transports == () and pre.enabled and pre.timeout_seconds == 10.0
    assert pre.applies_to("codex") and pre.applies_to("anything")
    global_config(env, '[hooks.pre_session]\ncommand = "x"\ntransports = []\n')
    assert load(project, env).pre_session.applies_to("opencode")


def test_pre_session_unknown_transport_warns(project, env):
    global_config(env, '[hooks.pre_session]\ncommand = "x"\ntransports = ["codx"]\n')
    config = load(project, env)
    (warning,) = problems(config)
    assert warning.severity == "warning" and warning.key == "hooks.pre_session.transports" and warning.line == 3
    assert config.pre_session.transports == ("codx",)


@pytest.mark.parametrize(
    "text, key",
    [
        ('[hooks.pre_session]\ncommand = "evil"\n', "hooks.pre_session"),
        ('[pre_session]\ncommand = "evil"\n', "pre_session"),
    ],
)
def test_project_cannot_define_pre_session(project, env, text, key):
    project_hooks(project, text)
    config = load(project, env)
    assert config.pre_session is None
    (warning,) = problems(config)
    assert warning.severity == "warning" and warning.key == key and "global-only" in warning.message
    assert warning.line == 1
    assert layer(config, "project-hooks").used


def test_pre_session_in_global_hooks_file_is_ignored_with_warning(project, env):
    global_hooks(env, '[hooks.pre_session]\ncommand = "x"\n')
    config = load(project, env)
    assert config.pre_session is None
    assert "config.toml" in problems(config, "warning")[0].message


# --------------------------------------------------------------------------- validation


def test_unknown_keys_are_warnings_with_line(project, env):
    path = global_hooks(
        env,
        """
        [pre_run]
        command = "x"
        timout_secs = 3

        [pre_rum]
        command = "y"

        [[prompt_guard]]
        name = "g"
        command = "g"
        colour = "red"
        """,
    )
    config = load(project, env)
    assert not config.has_errors
    found = {(p.key, p.line) for p in problems(config, "warning")}
    assert found == {("pre_run.timout_secs", 3), ("pre_rum", 5), ("prompt_guard[0].colour", 11)}
    typo = next(p for p in config.problems if p.key == "pre_run.timout_secs")
    assert "timeout_secs" in typo.message and typo.path == str(path)
    assert config.lifecycle["pre_run"].command == "x"


def test_invalid_toml_error_names_line_and_other_layers_apply(project, env):
    path = global_hooks(env, '[pre_run]\ncommand = "x"\ntimeout_secs = = 3\n')
    global_config(env, '[hooks.pre_session]\ncommand = "p"\n')
    project_hooks(project, '[post_run]\ncommand = "post"\n')
    config = load(project, env)
    (error,) = problems(config, "error")
    assert error.path == str(path) and error.line == 3 and "invalid TOML" in error.message
    assert config.has_errors
    assert "pre_run" not in config.lifecycle
    assert config.lifecycle["post_run"].command == "post"
    assert config.pre_session.command == "p"
    assert not layer(config, "global-hooks").used and layer(config, "global-hooks").exists


@pytest.mark.parametrize(
    "text, key, line, fragment",
    [
        ('[pre_run]\ncommand = "x"\ntimeout_secs = "30"\n', "pre_run.timeout_secs", 3, "number"),
        ('[pre_run]\ncommand = "x"\ntimeout_secs = true\n', "pre_run.timeout_secs", 3, "number"),
        ('[pre_run]\ncommand = "x"\ntimeout_secs = -1\n', "pre_run.timeout_secs", 3, "positive"),
        ('[pre_run]\ncommand = "x"\ntimeout_secs = 0\n', "pre_run.timeout_secs", 3, "positive"),
        ('[pre_run]\nenabled = "yes"\ncommand = "x"\n', "pre_run.enabled", 2, "boolean"),
        ("[post_run]\ncommand = 5\n", "post_run.command", 2, "string"),
        ('[post_run]\ncommand = ""\n', "post_run.command", 2, "empty"),
        ("# comment\n[post_run]\ntimeout_secs = 3\n", "post_run.command", 2, "missing"),
        ('pre_run = "echo"\n', "pre_run", 1, "table"),
        ('prompt_guard = "x"\n', "prompt_guard", 1, "array"),
        ('[[prompt_guard]]\ncommand = "x"\n', "prompt_guard[0].name", 1, "missing"),
        ('[[prompt_guard]]\nname = "a"\ncommand = "x"\n\n[[prompt_guard]]\nname = "b"\n', "prompt_guard[1]", 5, "neither"),
        (
            '[[prompt_guard]]\nname = "a"\ncommand = "x"\nbuiltin = "date"\n',
            "prompt_guard[0]",
            1,
            "both",
        ),
        ('[[prompt_guard]]\nname = "a"\nbuiltin = "git_statuz"\n', "prompt_guard[0].builtin", 3, "git_status"),
        ('[[prompt_guard]]\nname = "a"\nbuiltin = "date"\nargs = 3\n', "prompt_guard[0].args", 4, "table"),
        (
            '[[prompt_guard]]\nname = "a"\nbuiltin = "git_status"\nargs = { nope = 1 }\n',
            "prompt_guard[0].args.nope",
            4,
            "unknown option",
        ),
        ('[[prompt_guard]]\nname = "a"\ncommand = "x"\ntimeout_secs = "5"\n', "prompt_guard[0].timeout_secs", 4, "number"),
    ],
)
def test_type_errors_name_file_line_key_and_drop_the_file(project, env, text, key, line, fragment):
    project_hooks(project, '[pre_run]\ncommand = "kept only if valid"\n')
    path = global_hooks(env, text)
    config = load(project, env)
    errors = problems(config, "error")
    assert errors, config.problems
    error = errors[0]
    assert (error.path, error.key, error.line) == (str(path), key, line), error
    assert fragment in error.message, error.message
    assert config.has_errors
    g = layer(config, "global-hooks")
    # An invalid [[prompt_guard]] entry skips that entry only; other errors drop the file.
    entry_error = key.startswith("prompt_guard[")
    assert g.exists and g.used is entry_error
    assert [x.name for x in config.guards] == (["a"] if key == "prompt_guard[1]" else [])
    # The other layer still applies.
    assert config.lifecycle["pre_run"].command == "kept only if valid"


def test_pre_session_type_errors(project, env):
    global_config(env, '[hooks.pre_session]\ncommand = "x"\ntransports = "codex"\ntimeout_seconds = "1"\n')
    config = load(project, env)
    assert {(p.key, p.line) for p in problems(config, "error")} == {
        ("hooks.pre_session.transports", 3),
        ("hooks.pre_session.timeout_seconds", 4),
    }
    assert config.pre_session is None


def test_pre_session_timeout_secs_spelling_hint(project, env):
    global_config(env, '[hooks.pre_session]\ncommand = "x"\ntimeout_secs = 3\n')
    (warning,) = load(project, env).problems
    assert warning.key == "hooks.pre_session.timeout_secs" and "timeout_seconds" in warning.message


def test_lifecycle_hooks_in_config_toml_get_a_hint(project, env):
    global_config(env, '[hooks.pre_run]\ncommand = "x"\n[other]\na = 1\n')
    config = load(project, env)
    assert {p.key for p in problems(config, "warning")} == {"hooks.pre_run", "other"}
    assert "hooks.toml" in next(p for p in config.problems if p.key == "hooks.pre_run").message


def test_duplicate_guard_names_warn(project, env):
    global_hooks(env, '[[prompt_guard]]\nname = "a"\ncommand = "x"\n[[prompt_guard]]\nname = "a"\ncommand = "y"\n')
    config = load(project, env)
    (warning,) = config.problems
    assert warning.key == "prompt_guard[1].name" and warning.line == 5
    assert len(config.guards) == 2


def test_args_with_command_guard_is_warning(project, env):
    global_hooks(env, '[[prompt_guard]]\nname = "a"\ncommand = "x"\nargs = { a = 1 }\n')
    config = load(project, env)
    (warning,) = config.problems
    assert warning.severity == "warning" and warning.key == "prompt_guard[0].args"
    assert config.guards[0].args == ()


def test_non_utf8_and_directory_are_errors(project, env):
    path = Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"[pre_run]\ncommand = '\xff'\n")
    (error,) = load(project, env).problems
    assert error.severity == "error" and "UTF-8" in error.message
    path.unlink()
    path.mkdir()
    (error,) = load(project, env).problems
    assert error.severity == "error" and "directory" in error.message


def test_bom_is_accepted(project, env):
    path = Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xef\xbb\xbf[pre_run]\ncommand = "x"\n')
    assert load(project, env).lifecycle["pre_run"].command == "x"


def test_problem_str():
    assert str(Problem("/f.toml", "error", "bad", 3, "pre_run.command")) == "/f.toml:3: pre_run.command: bad"
    assert str(Problem("/f.toml", "warning", "bad", None, "k")) == "/f.toml: k: bad"
    assert str(Problem("/f.toml", "error", "bad", 7)) == "/f.toml:7: bad"
    assert str(Problem("/f.toml", "error", "bad")) == "/f.toml: bad"


# --------------------------------------------------------------------------- trust


def test_untrusted_project_layer_is_skipped(project, env):
    global_hooks(env, '[pre_run]\ncommand = "global"\n[[prompt_guard]]\nname = "g"\ncommand = "g"\n')
    path = project_hooks(project, '[pre_run]\ncommand = "project"\nprompt_guard = []\n')
    seen = []

    def untrusted(p: Path, data: bytes) -> bool:
        seen.append((p, data))
        return False

    config = load(project, env, is_trusted=untrusted)
    assert seen == [(path, path.read_bytes())]
    p = layer(config, "project-hooks")
    assert p.exists and p.trusted is False and not p.used
    assert config.lifecycle["pre_run"].command == "global"
    assert [g.name for g in config.guards] == ["g"]
    assert not config.has_errors


def test_untrusted_file_is_still_validated(project, env):
    project_hooks(project, "[pre_run]\ncommand = 1\n")
    config = load(project, env, is_trusted=lambda p, d: False)
    assert config.has_errors and problems(config, "error")[0].key == "pre_run.command"


def test_global_files_are_not_trust_checked(project, env):
    global_hooks(env, '[pre_run]\ncommand = "g"\n')
    calls = []
    config = load(project, env, is_trusted=lambda p, d: calls.append(p) or False)
    assert calls == [] and config.lifecycle["pre_run"].command == "g"
    assert layer(config, "global-hooks").trusted is None


def test_trust_callback_failure_skips_project(project, env):
    project_hooks(project, '[pre_run]\ncommand = "p"\n')

    def broken(p, d):
        raise OSError("store unreadable")

    config = load(project, env, is_trusted=broken)
    assert "pre_run" not in config.lifecycle
    assert layer(config, "project-hooks").trusted is False
    assert "store unreadable" in problems(config, "warning")[0].message


def test_default_trust_store(project, env):
    from wrapagent.hooks.trust import TrustStore

    path = project_hooks(project, '[pre_run]\ncommand = "p"\n')
    config = load_config(project, env=env)
    assert layer(config, "project-hooks").trusted is False and "pre_run" not in config.lifecycle

    TrustStore(env=env).trust(path, path.read_bytes())
    config = load_config(project, env=env)
    assert layer(config, "project-hooks").trusted is True
    assert config.lifecycle["pre_run"].command == "p"

    path.write_text('[pre_run]\ncommand = "changed"\n')
    assert layer(load_config(project, env=env), "project-hooks").trusted is False


# --------------------------------------------------------------------------- describe


def test_describe_reports_layers_problems_and_sources(project, env):
    gpath = global_hooks(
        env,
        """
        [pre_run]
        command = "echo pre"
        timeout_secs = 12
        [post_run]
        enabled = false
        [[prompt_guard]]
        name = "status"
        builtin = "git_status"
        """,
    )
    cpath = global_config(env, '[hooks.pre_session]\ncommand = "mempal"\ntransports = ["gemini-cli"]\nbogus = 1\n')
    ppath = project_hooks(project, '[pre_run]\ncommand = "project pre"\n')
    text = describe(load(project, env, is_trusted=lambda p, d: False))
    assert str(gpath) in text and str(cpath) in text and str(ppath) in text
    assert "NOT TRUSTED" in text and "wrapagent trust" in text
    assert f"{cpath}:4: hooks.pre_session.bogus: unknown key" in text
    assert "echo pre" in text and "timeout 12s" in text and f"from {gpath}" in text
    assert "post_run          (disabled" in text
    assert DEFAULT_SESSION_COMPLETE in text and "from <default>" in text
    assert "1. status: builtin git_status" in text
    assert "mempal" in text and "for gemini" in text
    assert "project pre" not in text


def test_describe_empty(project, env):
    text = describe(load(project, env))
    assert "not found" in text and "Validation: no problems" in text
    assert "Prompt guards: (none)" in text and "pre_session: (none)" in text


def test_describe_errors(project, env):
    global_hooks(env, "[pre_run\n")
    text = describe(load(project, env))
    assert "NOT USED: 1 error(s)" in text and "error: " in text and ":1: invalid TOML" in text


# --------------------------------------------------------------------------- links


def test_global_file_may_be_a_link(project, env, tmp_path):
    """Dotfile managers link ~/.config files: the user's own choice, followed (still a regular file)."""
    real = _write(tmp_path / "dotfiles" / "hooks.toml", '[pre_run]\ncommand = "g"\n')
    link = Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    config = load(project, env)
    assert config.lifecycle["pre_run"].command == "g" and not config.problems


def test_project_file_is_never_a_link(project, env):
    """Even to a file in the same project: a trusted link could be re-pointed at a neighbour's file."""
    _write(project / "config" / "hooks.toml", '[pre_run]\ncommand = "p"\n')
    (project / ".wrapagent").mkdir()
    (project / ".wrapagent" / "hooks.toml").symlink_to("../config/hooks.toml")
    config = load(project, env)  # even with a trust callback that trusts everything
    p = layer(config, "project-hooks")
    assert p.exists and not p.used and p.trusted is None and "pre_run" not in config.lifecycle
    (error,) = problems(config, "error")
    assert "hooks.toml is a symbolic link (to '../config/hooks.toml')" in error.message


def test_a_plain_file_named_wrapagent_is_no_project_layer(project, env):
    (project / ".wrapagent").write_text("not a folder")
    p = layer(load(project, env), "project-hooks")
    assert not p.exists and not p.problems


def test_agents_programs_global_only(project, env):
    """`[agents] programs`: more programs wrapagent types into; a project file cannot add any
    (it would have the guards' text typed into a shell it names)."""
    global_hooks(env, '[agents]\nprograms = ["mytui", " other "]\n')
    project_hooks(project, '[agents]\nprograms = ["bash"]\n')
    config = load(project, env)
    assert config.agents == ("mytui", "other")
    assert any(p.severity == "warning" and "global-only" in p.message for p in problems(config))


def test_agents_programs_must_be_names(project, env):
    global_hooks(env, '[agents]\nprograms = "mytui"\n')
    config = load(project, env)
    assert config.agents == ()
    assert any("agents.programs" in str(p) for p in problems(config, "error"))
