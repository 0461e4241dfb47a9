"""Subcommands (`demo`, `config`, `doctor`, `shims`, `init`, `sessions`, `trust`).

Only reached when the first word is a subcommand name, so argparse's import
cost never lands on the path of a wrapped tool.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Mapping, Sequence


USAGE = """\
usage: wrapagent [OPTIONS] TOOL [TOOL-ARGS...]
       wrapagent SUBCOMMAND [...]

Run TOOL (codex, claude, gemini, opencode, or any program) under wrapagent:
a transparent terminal proxy that fires lifecycle hooks and prepends your
guards' context to the first message. Everything after TOOL goes to the tool.

options (before TOOL):
  --no-hooks        bare proxy: no hooks, no injection, no session record
  --strict          exit 2 before launch if the configuration has errors
  --shim-dir DIR    (used by shims) skip DIR when looking for the real TOOL
  --                the next word is TOOL even if it is a subcommand name
  -h, --help        this help;  --version  the version

subcommands:
  demo              the built-in demo agent, with your config (no CLI needed)
  config check      validate every config layer, show the merged result
  config init       write a commented starter hooks.toml
  doctor [--probe TOOL] [--json]
                    why didn't my guard show up?
  shims install|uninstall|status [TOOL...]
  init bash|zsh|fish
                    alias lines for your shell rc
  sessions list|show ID|path|diff ID|undo ID|prune|resume ID
                    recorded sessions; what one changed, undoing it, resuming it
  trust [PATH] [--revoke] [--list]
  send [--session ID|last] [--guard NAME] [--wait [--timeout S]] TEXT
                    the next user message of a running session (TEXT or stdin)

environment: WRAPAGENT_DISABLE=1 runs the real tool directly.
"""


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"wrapagent {prog}", description=description)


def cmd_demo(args: Sequence[str], *, strict: bool) -> int:
    """Run the built-in demo agent under wrapagent, with the user's config.

    With no guard and no pre_session configured anywhere, the demo uses the
    starter config's guards instead (and says so), so a newcomer sees the
    blocks without writing a file first.
    """
    from wrapagent.session.launch import RunOptions, run

    return run(RunOptions(tool="demo", display_name="demo", args=list(args), strict=strict,
                          argv_override=[sys.executable, "-m", "wrapagent.commands.demo_agent"],
                          config_factory=_demo_config))


def _demo_config(project_root: Path, env: Mapping[str, str]):
    from wrapagent.hooks import config_loader as config_mod

    cfg = config_mod.load_config(project_root, env=env)
    if cfg.guards or cfg.pre_session is not None or any(l.exists for l in cfg.layers):
        return cfg
    from wrapagent.values import replace  # Config is a values.Frozen, not a dataclass

    starter = _starter_guards()
    sys.stderr.write("wrapagent demo: no wrapagent config found, showing the starter guards "
                     "(`wrapagent config init` writes them to a file you can edit)\n")
    return replace(cfg, guards=starter)


def _starter_guards():
    """The guards of the starter hooks.toml, parsed by the real loader."""
    import tempfile

    from wrapagent.hooks import config_loader as config_mod
    from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML

    with tempfile.TemporaryDirectory() as tmp:
        cfg_dir = Path(tmp) / "wrapagent"
        cfg_dir.mkdir()
        (cfg_dir / "hooks.toml").write_text(STARTER_HOOKS_TOML)
        cfg = config_mod.load_config(Path(tmp), env={"XDG_CONFIG_HOME": tmp, "HOME": tmp})
    guards = list(cfg.guards)
    # branch_protection says nothing off main and dirty_tree only speaks on
    # resume; the date makes sure the demo always shows at least one block.
    guards.append(config_mod.GuardSpec(name="date", command=None, builtin="date", args=(),
                                       timeout_secs=5, source="<demo>"))
    return tuple(guards)


def cmd_config(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("config", "Validate or create wrapagent's configuration.")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("check", help="validate every layer and print the merged result")
    init = sub.add_parser("init", help="write a commented starter hooks.toml")
    init.add_argument("--project", action="store_true",
                      help="write <project>/.wrapagent/hooks.toml instead of the global file")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    ns = parser.parse_args(list(args))
    from wrapagent.hooks import config_loader as config_mod
    from wrapagent import paths

    root = paths.find_project_root(Path.cwd())
    if ns.action == "check":
        cfg = config_mod.load_config(root)
        from wrapagent.hooks.config_check import describe

        print(describe(cfg))
        return 1 if cfg.has_errors else 0
    from wrapagent.hooks.starter_config import write_starter

    target = paths.project_hooks_file(root) if ns.project else paths.global_hooks_file()
    written = write_starter(target, force=ns.force)
    print(f"wrote {written}")
    if ns.project:
        print(f"project hooks run only once trusted: wrapagent trust {written}")
    return 0


def cmd_shims(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("shims", "Install shims so `codex` means `wrapagent codex`.")
    parser.add_argument("action", choices=("install", "uninstall", "status"))
    parser.add_argument("tools", nargs="*")
    parser.add_argument("--dir", dest="shim_dir", default=None, help="shims folder")
    ns = parser.parse_args(list(args))
    from wrapagent.commands.shims import cmd_shims as run_shims

    return run_shims(ns.action, ns.tools, ns.shim_dir, sys.stdout)


def cmd_init(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("init", "Print alias lines for your shell rc.")
    parser.add_argument("shell", choices=("bash", "zsh", "fish"))
    ns = parser.parse_args(list(args))
    from wrapagent.commands.shims import cmd_init as run_init

    return run_init(ns.shell, sys.stdout)


def cmd_trust(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("trust", "Review and trust a project's .wrapagent/hooks.toml.")
    parser.add_argument("path", nargs="?")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--revoke", action="store_true")
    group.add_argument("--list", action="store_true", dest="list_")
    ns = parser.parse_args(list(args))
    from wrapagent.commands.trust import cmd_trust as run_trust

    return run_trust(ns.path, revoke=ns.revoke, list_=ns.list_, stdin=sys.stdin,
                     stdout=sys.stdout, stderr=sys.stderr)


def cmd_sessions(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.sessions import main as sessions_main

    return sessions_main(list(args))


def cmd_send(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.send import main as send_main

    return send_main(list(args))


def cmd_doctor(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.doctor import main as doctor_main

    return doctor_main(list(args))


def cmd_help(args: Sequence[str], *, strict: bool) -> int:
    sys.stdout.write(USAGE)
    return 0


COMMANDS = {
    "demo": cmd_demo,
    "config": cmd_config,
    "shims": cmd_shims,
    "init": cmd_init,
    "trust": cmd_trust,
    "sessions": cmd_sessions,
    "doctor": cmd_doctor,
    "send": cmd_send,
    "help": cmd_help,
}


def run_subcommand(name: str, args: Sequence[str], *, strict: bool = False) -> int:
    return COMMANDS[name](args, strict=strict)
