"""Subcommands (`demo`, `config`, `doctor`, `shims`, `init`, `sessions`, `trust`).

Only reached when the first word is a subcommand name, so argparse's import
cost never lands on the path of a wrapped tool.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

from wrapagent.commands.cliparse import parse


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
  -h, --help        this help
  -V, --version     the version
  --color=WHEN      colour in wrapagent's own output: auto (a terminal, unless
                    NO_COLOR is set), always, never; also after a subcommand

subcommands:
  demo              the built-in demo agent, with your config (no CLI needed)
  config check      validate every config layer, show the merged result
  config init       write a commented starter hooks.toml
  doctor [--probe TOOL] [--json]
                    why didn't my guard show up?
  shims install|uninstall|status [TOOL...]
  init bash|zsh|fish
                    alias lines for your shell rc
  completion bash|zsh|fish
                    tab completion: eval "$(wrapagent completion bash)" in ~/.bashrc
  sessions list|show ID|path|diff ID|undo ID|prune|resume ID
                    recorded sessions; what one changed, undoing it, resuming it
  undo | redo [--dry-run] [--force] [--quiet]
                    undo the newest turn of the newest session here (again: the one before);
                    redo puts back what the last undo removed
  sessions replay ID|export ID --format cast|md|json|search TEXT
                    play a session again, its conversation as Markdown, where was that said
  trust [PATH] [--revoke] [--list]
  send [--session ID|last] [--guard NAME] [--wait [--timeout S]] TEXT
                    the next message of a running session (TEXT or stdin; needs [send] enabled)
  uninstall [--yes] [--dry-run] [--config]
                    remove the shims, then (asked) the state folder and checkpoint refs

environment: WRAPAGENT_DISABLE=1 runs the real tool directly.
"""


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"wrapagent {prog}", description=description)


DEMO_HELP = """\
usage: wrapagent demo [-p] [PROMPT]

Run wrapagent's built-in demo agent under wrapagent, with your configuration:
type a message, press Enter, and it shows exactly what it received (the
injected blocks first). /quit or Ctrl-D leaves. No coding CLI needed.

With no wrapagent configuration yet, it uses the guards `wrapagent config init`
writes (branch_protection, dirty_tree, git_status); outside a git repository,
where those say nothing, it adds `date` and says so.

The demo is a real wrapped session: `wrapagent sessions list` shows it, and in
a git repository it takes checkpoints into wrapagent's own store (the
repository is only read).

  PROMPT   the first message, given on the command line
  -p       read the first message from stdin
  --       everything after it goes to the demo agent (`demo -- --help`)
"""


def cmd_demo(args: Sequence[str], *, strict: bool) -> int:
    """Run the built-in demo agent under wrapagent, with the user's config.

    With no guard and no pre_session configured anywhere, the demo uses the
    starter config's guards instead (and says so), so a newcomer sees the
    blocks without writing a file first. `--help` is wrapagent's, not a
    message for the agent: a newcomer typing it wants to know what the demo is.
    """
    args = list(args)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(DEMO_HELP)
        return 0
    if args and args[0] == "--":
        args = args[1:]
    from wrapagent.commands.own_process import module_argv  # never the current folder's code
    from wrapagent import __version__
    from wrapagent.session.launch import RunOptions, run

    seen: dict[str, bool] = {}

    def config_factory(project_root: Path, env: Mapping[str, str]):
        seen["in_git"] = _in_git_repository(project_root)
        return _demo_config(project_root, env)

    code = run(RunOptions(tool="demo", display_name="demo", args=args, strict=strict,
                          argv_override=module_argv("wrapagent.commands.demo_agent"),
                          config_factory=config_factory, tool_version=__version__))
    if code == 0 and "in_git" in seen and sys.stdin.isatty() and sys.stdout.isatty():
        sys.stderr.write(demo_next_steps(seen["in_git"]))
    return code


def demo_next_steps(in_git: bool) -> str:
    """What to look at after the demo: the session it just recorded, and how to make it yours.

    Printed after an interactive demo, once its screen is gone: the demo is
    the newcomer's first session, and these commands are how a real one is
    looked back at. diff and undo need the checkpoints only a git repository has.
    """
    lines = ["wrapagent demo: that was a recorded session; look back at it with",
             "  wrapagent sessions show last     what ran, what was injected, every hook's outcome"]
    if in_git:
        lines += ["  wrapagent sessions diff last     what it changed in the work tree",
                  "  wrapagent sessions undo last     put those files back as they were"]
    else:
        lines.append("  (in a git repository also `sessions diff last` and `sessions undo last`: its checkpoints)")
    lines.append("Your own guards: wrapagent config init")
    return "\n".join(lines) + "\n"


def _demo_config(project_root: Path, env: Mapping[str, str]):
    from wrapagent.hooks import config_loader as config_mod

    cfg = config_mod.load_config(project_root, env=env)
    if cfg.guards or cfg.pre_session is not None or any(l.exists for l in cfg.layers):
        return cfg
    from wrapagent.values import replace  # Config is a values.Frozen, not a dataclass

    in_git = _in_git_repository(project_root)
    guards = _starter_guards(add_date=not in_git)
    names = ", ".join(g.name for g in guards if g.source != "<demo>")
    note = ("" if in_git else "; outside a git repository these say nothing, so the demo adds `date`")
    sys.stderr.write(f"wrapagent demo: no wrapagent config found, showing the starter guards "
                     f"that `wrapagent config init` writes ({names}){note}\n")
    return replace(cfg, guards=guards)


def _in_git_repository(project_root: Path) -> bool:
    """Whether the git guards have something to say (the root holds `.git`)."""
    return os.path.lexists(os.path.join(project_root, ".git"))


def _starter_guards(*, add_date: bool = False):
    """The guards of the starter hooks.toml, parsed by the real loader.

    `add_date` appends the `date` built-in: branch_protection, dirty_tree and
    git_status are all silent outside a git repository, and a demo that shows
    no block teaches nothing.
    """
    import tempfile

    from wrapagent.hooks import config_loader as config_mod
    from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML

    with tempfile.TemporaryDirectory() as tmp:
        cfg_dir = Path(tmp) / "wrapagent"
        cfg_dir.mkdir()
        (cfg_dir / "hooks.toml").write_text(STARTER_HOOKS_TOML)
        cfg = config_mod.load_config(Path(tmp), env={"XDG_CONFIG_HOME": tmp, "HOME": tmp})
    guards = list(cfg.guards)
    if add_date:
        guards.append(config_mod.GuardSpec(name="date", command=None, builtin="date", args=(),
                                           timeout_secs=5, source="<demo>"))
    return tuple(guards)


def cmd_config(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("config", "Validate or create wrapagent's configuration.")
    sub = parser.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="validate every layer and print the merged result")
    check.add_argument("--json", action="store_true", help="the same facts as a JSON object")
    init = sub.add_parser("init", help="write a commented starter hooks.toml")
    init.add_argument("--project", action="store_true",
                      help="write <project>/.wrapagent/hooks.toml instead of the global file")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    ns = parse(parser, args)
    from wrapagent.hooks import config_loader as config_mod
    from wrapagent import paths

    root = paths.find_project_root(Path.cwd())
    if ns.action == "check":
        cfg = config_mod.load_config(root)
        from wrapagent.hooks.config_check import as_json, describe

        if ns.json:
            import json

            print(json.dumps(as_json(cfg), indent=2))  # ASCII: every hidden character a \u escape
        else:
            from wrapagent.visible import visible

            print(visible(describe(cfg)))  # a project file's commands and names, printed inert
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
    parser.add_argument("--dir", dest="shim_dir", default=None, metavar="DIR", help="shims folder")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{install,uninstall,status}")
    for action, text in (("install", "write a shim per TOOL (default: codex claude gemini opencode)"),
                         ("uninstall", "remove the shims (default: every wrapagent shim there)"),
                         ("status", "which shims exist, what each runs, whether PATH makes it win")):
        p = sub.add_parser(action, help=text, description=text)
        p.add_argument("tools", nargs="*", metavar="TOOL")
        # Also accepted after the action; SUPPRESS keeps a --dir given before it.
        p.add_argument("--dir", dest="shim_dir", default=argparse.SUPPRESS, metavar="DIR",
                       help="shims folder")
        if action == "status":
            p.add_argument("--json", action="store_true", help="machine-readable output")
    ns = parse(parser, args)
    from wrapagent.commands.shims import cmd_shims as run_shims

    return run_shims(ns.action, ns.tools, ns.shim_dir, sys.stdout, json_out=getattr(ns, "json", False))


def cmd_init(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("init", "Print alias lines for your shell rc.")
    parser.add_argument("shell", choices=("bash", "zsh", "fish"))
    ns = parse(parser, args)
    from wrapagent.commands.shims import cmd_init as run_init

    return run_init(ns.shell, sys.stdout)


def cmd_trust(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("trust", "Review and trust a project's .wrapagent/hooks.toml: it shows every "
                     "command the file would run and asks on the terminal. Any edit needs trust again.")
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="the hooks file or its project (default: this project)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--revoke", action="store_true",
                       help="forget the trust of PATH (default: this project's file)")
    group.add_argument("--list", action="store_true", dest="list_",
                       help="every trusted file, and whether it changed since trusted")
    parser.add_argument("--json", action="store_true", help="with --list: machine-readable output")
    ns = parse(parser, args)
    if ns.json and not ns.list_:
        parser.error("--json goes with --list")
    from wrapagent.commands.trust import cmd_trust as run_trust

    if ns.json:
        from wrapagent.commands.trust_json import trust_list_json

        return trust_list_json(sys.stdout)
    return run_trust(ns.path, revoke=ns.revoke, list_=ns.list_, stdin=sys.stdin,
                     stdout=sys.stdout, stderr=sys.stderr)


def cmd_sessions(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.sessions import main as sessions_main

    return sessions_main(list(args))


def cmd_undo(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.turn_undo import main as turn_main

    return turn_main("undo", list(args))


def cmd_redo(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.turn_undo import main as turn_main

    return turn_main("redo", list(args))


def cmd_send(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.send import main as send_main

    return send_main(list(args))


def cmd_doctor(args: Sequence[str], *, strict: bool) -> int:
    from wrapagent.commands.doctor import main as doctor_main

    return doctor_main(list(args))


def cmd_uninstall(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("uninstall", "Remove what wrapagent created: its shims at once; after a yes at "
                     "the terminal (or --yes), the state folder (session records, checkpoint stores, "
                     "trust.json) and the checkpoint refs earlier releases left, exactly as their records "
                     "name them. Then remove the package with pip, pipx or uv.")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask before removing the history")
    parser.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    parser.add_argument("--config", action="store_true",
                        help="also remove your configuration (~/.config/wrapagent)")
    parser.add_argument("--dir", dest="shim_dir", default=None, metavar="DIR", help="shims folder")
    ns = parse(parser, args)
    from wrapagent.commands.uninstall import cmd_uninstall as run_uninstall

    return run_uninstall(yes=ns.yes, dry_run=ns.dry_run, with_config=ns.config, shim_dir=ns.shim_dir,
                         stdin=sys.stdin, out=sys.stdout)


def cmd_completion(args: Sequence[str], *, strict: bool) -> int:
    parser = _parser("completion", "Print the shell completion script (subcommands, options, tool "
                     "names, session ids). bash: eval \"$(wrapagent completion bash)\" in ~/.bashrc; "
                     "zsh: the same in ~/.zshrc after compinit; fish: wrapagent completion fish | source.")
    parser.add_argument("shell", choices=("bash", "zsh", "fish"))
    ns = parse(parser, args)
    from wrapagent.commands.completion import cmd_completion as run_completion

    return run_completion(ns.shell, sys.stdout)


def cmd_complete(args: Sequence[str], *, strict: bool) -> int:
    """Hidden: what the completion scripts call on Tab (see commands/completion.py)."""
    from wrapagent.commands.completion import cmd_complete as run_complete

    return run_complete(args, sys.stdout)


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
    "send": cmd_send,
    "undo": cmd_undo,
    "redo": cmd_redo,
    "doctor": cmd_doctor,
    "uninstall": cmd_uninstall,
    "completion": cmd_completion,
    "_complete": cmd_complete,
    "help": cmd_help,
}


def run_subcommand(name: str, args: Sequence[str], *, strict: bool = False,
                   color: str | None = None) -> int:
    from wrapagent.commands import colour

    try:
        if color is not None:
            colour.set_mode(color)
        args = colour.take_option(list(args)) if name not in ("_complete",) else list(args)
    except ValueError as exc:
        from wrapagent.visible import visible

        sys.stderr.write(visible(f"wrapagent: {exc}") + "\n")
        return 2
    return COMMANDS[name](args, strict=strict)
