"""Phase 1 of a session, before anything runs: the tool, its adapter, the config, the prompt plan.

Nothing here writes a file or starts a process; what it decides (which
order the session runs in, where the first message's blocks go) is read by
the later phases (`starting`, `conversation`, `finishing`) from the values
it returns. Imports stay lazy: this runs before the tool starts.
"""

import os
import sys


def stderr_line(line: str) -> None:
    """One line for the user on stderr (never while the tool's screen is up), printed inert.

    It names the tool, paths and what hooks said: `visible` escapes what
    could act on the terminal (docs/security.md).
    """
    from wrapagent.visible import field

    try:
        sys.stderr.write(field(line.rstrip("\n")) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Launch:
    """What wrapagent knows before the session starts (`opts`: a launch.RunOptions).

    `child_env` is the tool's environment as the launcher built it; the
    session id and the adapter's additions are added by the start phase,
    which hands the final one on in `Live.child_env`.
    """

    __slots__ = ("opts", "env", "child_env", "executable", "argv", "interactive", "name", "_adapter",
                 "cwd_str", "root_str")

    def __init__(self, opts, env: dict[str, str], child_env: dict[str, str],
                 executable: str, argv: list[str], interactive: bool) -> None:
        self.opts = opts
        self.env = env
        self.child_env = child_env
        self.executable = executable
        self.argv = argv
        self.interactive = interactive
        self.name = opts.display_name or os.path.basename(opts.tool)
        self._adapter = None
        self.cwd_str = os.getcwd()
        self.root_str = self.cwd_str  # the project root once `load_config` found it

    @property
    def adapter(self):
        """The tool's adapter, loaded on first use: a tool that starts first starts without it."""
        if self._adapter is None:
            from wrapagent.inject.adapters import adapter_for

            self._adapter = adapter_for(self.name)
        return self._adapter

    # Paths for hooks, checkpoints and transcripts; plain strings before the
    # tool starts (pathlib costs ~20 ms to import).

    @property
    def cwd(self):
        from pathlib import Path

        return Path(self.cwd_str)

    @property
    def project_root(self):
        from pathlib import Path

        return Path(self.root_str)


def find_project_root(launch: Launch) -> None:
    """`launch.root_str`: the git project the tool starts in, else its folder (`paths.project_root_of`)."""
    from wrapagent.paths import project_root_of

    launch.root_str = project_root_of(launch.cwd_str)


def config_can_wait(launch: Launch) -> bool:
    """The config is the defaults and they let the tool go first: it loads once the tool runs.

    True when no config file exists (global hooks and config, the project's
    `.wrapagent`), nothing replaces the loader (`config_factory`), and, with
    the defaults, nothing of the session has to come before the tool
    (`tool_goes_first`: a terminal, not a git project). The loader, its
    config model and its table of events are then loaded once the tool's
    first output is on the screen (`defaults_config`): with no file there is
    no problem to report, no trust to ask about, nothing for `--strict`.
    Call `find_project_root` first.
    """
    if not launch.interactive or launch.opts.config_factory is not None \
            or os.path.exists(os.path.join(launch.root_str, ".git")):
        return False
    from wrapagent.paths import global_config_path, global_hooks_path

    env = launch.env
    return not any(os.path.lexists(path) for path in (
        global_hooks_path(env), global_config_path(env), os.path.join(launch.root_str, ".wrapagent")))


def defaults_config(launch: Launch):
    """The config when `config_can_wait` found no file: the defaults, the files' layers absent."""
    from wrapagent.hooks.config_loader import config_without_files

    return config_without_files(launch.root_str, env=launch.env)


def load_config(launch: Launch):
    """The effective config of the project (and `launch.root_str` set to its root); problems on stderr."""
    from wrapagent.hooks import config_loader as config_mod

    find_project_root(launch)
    if launch.opts.config_factory is not None:
        cfg = launch.opts.config_factory(launch.project_root, launch.env)
    else:
        cfg = config_mod.load_config(launch.root_str, env=launch.env)
    unused = {layer.path for layer in cfg.layers if not layer.used}
    for problem in cfg.problems:
        level = "error" if problem.severity == "error" else "warning"
        suffix = ("" if problem.severity != "error" else " (this file's hooks are not used)"
                  if problem.path in unused else " (that prompt guard is skipped)")
        stderr_line(f"wrapagent: config {level}: {problem}{suffix}")
    for layer in cfg.layers:
        if layer.exists and layer.trusted is False:
            from pathlib import Path

            from wrapagent.hooks.trust import untrusted_notice

            # Decided on the bytes the loader read: the file is not read again.
            stderr_line(untrusted_notice(Path(layer.path), changed=layer.trust == "changed"))
    if launch.opts.strict and cfg.has_errors:
        from wrapagent.errors import WrapagentError

        raise WrapagentError("invalid configuration (--strict): fix the errors above", 2)
    return cfg


def wants_injection(launch: Launch, cfg) -> bool:
    """Blocks are configured for this tool: guards, or an enabled pre_session that applies to it."""
    pre = cfg.pre_session
    return bool(cfg.guards) or bool(pre is not None and pre.enabled and pre.command
                                    and pre.applies_to(launch.adapter.name))


def prompt_plan(launch: Launch):
    """Where the first message's blocks go (argv, stdin, the interactive composer, nowhere)."""
    from wrapagent.inject.adapters.base import PromptPlan

    adapter = launch.adapter
    from wrapagent.proxy.terminal import is_tty  # the loop's module: loaded after the tool starts

    stdin_piped = not is_tty(0)
    plan = adapter.plan_prompt(launch.opts.args, stdin_piped=stdin_piped)
    # Plans index the tool's argv as if argv[0] were the tool; the demo
    # agent runs as `python -m wrapagent.commands.demo_agent`, so shift.
    shift = len(launch.argv) - len(launch.opts.args) - 1
    if shift:
        from wrapagent.values import replace  # PromptPlan is a values.Frozen

        plan = replace(plan, index=None if plan.index is None else plan.index + shift,
                       args=tuple(a + shift for a in plan.args))
    if stdin_piped and plan.kind == "interactive" and adapter.piped_stdin_is_prompt:
        plan = PromptPlan("stdin", oneshot=True)
    if plan.kind == "interactive" and not launch.interactive:
        plan = PromptPlan("none", reason="no terminal and no prompt argument")
    if plan.kind == "none" and launch.interactive and not plan.oneshot \
            and not plan.reason.startswith("subcommand"):
        plan = PromptPlan("interactive", reason=f"argv left alone ({plan.reason})")
    return plan


def tool_goes_first(launch: Launch, cfg) -> bool:
    """Nothing of this session has to happen before the tool starts.

    Before the tool come: pre_run (it may refuse the launch), the `before`
    checkpoint of a git project, and an interceptor (injection, resets,
    waiting_for_input, the stop check: it must see the tool's first output). Without any of
    them (the default configuration outside a git project) the tool starts
    first and the record is written while it starts: the user does not wait
    for wrapagent's own imports and files.
    """
    if not launch.interactive or cfg.hook_for("pre_run") is not None \
            or cfg.hook_for("waiting_for_input") is not None or cfg.stop_check is not None or cfg.send \
            or wants_injection(launch, cfg):
        return False
    if not os.path.exists(os.path.join(launch.root_str, ".git")):
        # No repository, so no `before` snapshot whatever the settings (the first reason of
        # `checkpoints.before_skip_reason`, decided here without loading checkpoints and git's module).
        return True
    from wrapagent.history import checkpoints
    from wrapagent.session.resolve import nested_depth

    env = launch.env
    return checkpoints.before_skip_reason(
        cfg.checkpoints, depth=nested_depth(env),  # garbage counts as 0 (`launch` warned)
        parent=env.get("WRAPAGENT_SESSION_ID") or None, project_root=launch.root_str) is not None
