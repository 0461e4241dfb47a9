"""The hook event registry (wrapagent/hooks/events.py) is what everything else is built from."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from wrapagent.hooks import events
from wrapagent.hooks.config_model import DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_WAITING_TIMEOUT, EVENTS
from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def test_docs_reference_table_is_the_registrys() -> None:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("<!-- generated from wrapagent/hooks/events.py")
    start = text.index("\n", start) + 1
    end = text.index("<!-- end of generated table -->", start)
    assert text[start:end] == events.reference_table(), (
        "docs/hooks.md's event table differs from the registry; paste "
        "`python -c 'from wrapagent.hooks import events; print(events.reference_table())'`")


def test_config_model_reads_the_registry() -> None:
    assert EVENTS == events.names()
    assert DEFAULT_LIFECYCLE_TIMEOUT == events.default_timeout("post_run")
    assert DEFAULT_WAITING_TIMEOUT == events.default_timeout("waiting_for_input")


def test_every_placeholder_has_a_value_and_each_event_names_known_ones(tmp_path) -> None:
    from wrapagent.hooks.context import GuardContext
    from wrapagent.hooks.hook_runner import hook_variables

    ctx = GuardContext(project_root=tmp_path, cwd=tmp_path, tool="codex", session_id="S",
                       is_resume=False, session_dir=tmp_path, sessions_root=tmp_path)
    assert set(hook_variables(ctx, exit_code=0, turn=1)) == set(events.placeholder_names())
    for event in events.REGISTRY:
        assert set(event.placeholders) <= set(events.placeholder_names()), event.name
        assert event.default_timeout > 0 and event.fires and event.review


def test_starter_config_lists_every_event_and_placeholder() -> None:
    for event in events.REGISTRY:
        assert f"#   [{event.name}]" in STARTER_HOOKS_TOML
        assert f"# [{event.name}]" in STARTER_HOOKS_TOML
    for name in events.placeholder_names():
        assert f"#   {{{name}}}" in STARTER_HOOKS_TOML


_ADD_AN_EVENT = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from wrapagent.hooks import events

    events.REGISTRY.append(events.HookEvent(
        "before_nap", "when the agent takes a nap", ("session_id", "tool"), default_timeout=7.0,
        review="runs when the agent naps", extra_keys=("nap_secs",)))

    from wrapagent.commands.trust import describe_content
    from wrapagent.hooks import config_check
    from wrapagent.hooks.config_loader import load_config, parse_hooks_bytes
    from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML

    root = Path(sys.argv[1])
    content = b'[before_nap]\\ncommand = "echo nap {session_id}"\\nnap_secs = 3\\n'
    hooks, problems = parse_hooks_bytes(root / "hooks.toml", content, is_project=False)
    config_dir = root / "config" / "wrapagent"
    config_dir.mkdir(parents=True)
    (config_dir / "hooks.toml").write_bytes(content)
    env = {"HOME": str(root), "XDG_CONFIG_HOME": str(root / "config"), "XDG_STATE_HOME": str(root / "state")}
    config = load_config(root, env=env)
    print(json.dumps({
        "problems": [str(p) for p in problems],
        "timeout": hooks.lifecycle["before_nap"].timeout_secs,
        "check": config_check.describe(config),
        "check_json": config_check.as_json(config)["lifecycle"].get("before_nap"),
        "review": describe_content(root / "hooks.toml", content),
        "starter": STARTER_HOOKS_TOML,
        "table": events.reference_table(),
    }))
''')


def test_adding_an_event_to_the_registry_is_enough(tmp_path) -> None:
    """One entry in the registry: the config accepts its table (with its own keys and default
    timeout), `config check`, the trust review, the starter file and the docs table show it."""
    proc = subprocess.run([sys.executable, "-c", _ADD_AN_EVENT, str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["problems"] == []
    assert out["timeout"] == 7.0
    assert "before_nap" in out["check"] and "echo nap {session_id}" in out["check"]
    assert out["check_json"]["command"] == "echo nap {session_id}"
    assert "before_nap: sh -c: echo nap {session_id}" in out["review"]
    assert "runs when the agent naps" in out["review"]
    assert "#   [before_nap]" in out["starter"] and "# [before_nap]" in out["starter"]
    assert "| `[before_nap]` | when the agent takes a nap |" in out["table"]


def test_an_unknown_event_table_is_still_refused(tmp_path) -> None:
    """The registry is the list: a table it does not name is an unknown key, as before."""
    from wrapagent.hooks.config_loader import parse_hooks_bytes

    _, problems = parse_hooks_bytes(tmp_path / "hooks.toml", b'[before_nap]\ncommand = "true"\n',
                                    is_project=False)
    assert any("before_nap" in str(p) for p in problems)
