"""How a `wrapagent TOOL …` launch runs: exec'd directly, proxied bare, or as a full session.

The first module of every aliased start, so it is small and imports only
what the path taken needs. The bare proxy (`--no-hooks` on a terminal)
starts the tool first (`proxy.spawn`) and imports the copy loop while the
tool's exec runs: the user waits for neither.
"""

import os
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Callable, Mapping, Sequence


class RunOptions:
    """What `__main__` parsed. A plain class: `dataclasses` costs ~20 ms to import."""

    def __init__(self, tool: str, args: "list[str]", *, no_hooks: bool = False,
                 strict: bool = False, shim_dir: "str | None" = None,
                 display_name: "str | None" = None, argv_override: "list[str] | None" = None,
                 config_factory: "Callable[[Path, Mapping[str, str]], object] | None" = None,
                 tool_version: "str | None" = None) -> None:
        self.tool = tool
        self.args = args
        self.no_hooks = no_hooks
        self.strict = strict
        self.shim_dir = shim_dir
        self.display_name = display_name
        """Name used for the session record and adapter (`demo` for the demo agent)."""
        self.argv_override = argv_override
        """Run this argv instead of resolving `tool` (the demo agent)."""
        self.config_factory = config_factory
        self.tool_version = tool_version
        """The release of a tool wrapagent brings itself (the demo agent: wrapagent's); else looked up."""


def _exec_direct(path: str, argv: "Sequence[str]", env: "Mapping[str, str]") -> int:
    """Replace wrapagent with the tool: WRAPAGENT_DISABLE=1, nesting limit, bare pipe mode.

    Python starts with SIGPIPE and SIGXFSZ ignored, and ignored dispositions
    survive exec: put them back, or `yes | head -1` under wrapagent complains.
    """
    from wrapagent.proxy.spawn import default_signals, exec_error

    default_signals()
    try:
        os.execve(path, list(argv), dict(env))
    except OSError as exc:
        raise exec_error(path, exc.errno) from None
    return 126  # not reached


def _unusable_env(env: "dict[str, str]") -> None:
    """One warning line per wrapagent variable it cannot use, which is then dropped; the tool runs.

    Removed from `env`, so that nothing later (the record, the checkpoint
    rules, hooks) meets it, and the tool's own environment gets clean ones:
    - `WRAPAGENT_DEPTH`, anything `int` does not take or a negative value:
      counts as 0 (as `resolve.nested_depth` reads it);
    - `WRAPAGENT_SESSION_ID` (the parent session) that cannot be an id
      (`ids.looks_like_id`): the session is recorded without a parent.
    Set only inside a wrapped session, so the usual start checks two absent keys.
    """
    depth = env.get("WRAPAGENT_DEPTH")
    if depth and not (len(depth) < 8 and depth.isdigit()) and not _whole_number(depth):
        _say(f"WRAPAGENT_DEPTH={_shown(depth)} is not a nesting depth (a whole number from 0); counted as 0")
        del env["WRAPAGENT_DEPTH"]
    parent = env.get("WRAPAGENT_SESSION_ID")
    if parent:
        from wrapagent.history.ids import looks_like_id

        if not looks_like_id(parent):
            _say(f"WRAPAGENT_SESSION_ID={_shown(parent)} is not a session id; this session is recorded "
                 "without a parent")
            del env["WRAPAGENT_SESSION_ID"]


def _whole_number(value: str) -> bool:
    try:
        return int(value) >= 0
    except ValueError:  # not a number, or more digits than int() takes
        return False


def _shown(value: str) -> str:
    from wrapagent.visible import field

    shown = field(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _say(line: str) -> None:
    import sys

    try:
        sys.stderr.write(f"wrapagent: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def run(opts: "RunOptions") -> int:
    """Resolve the tool, then exec it, proxy it bare, or run it as a session (`lifecycle`)."""
    from wrapagent.session import resolve

    env = dict(os.environ)
    skip = [opts.shim_dir] if opts.shim_dir else []
    if opts.argv_override is not None:
        executable = opts.argv_override[0]
        argv = list(opts.argv_override) + list(opts.args)
    else:
        executable = resolve.find_real_executable(opts.tool, env=env, extra_skip_dirs=skip)
        argv = [executable, *opts.args]
    if env.get("WRAPAGENT_DISABLE") == "1":
        return _exec_direct(executable, argv, env)
    _unusable_env(env)
    child_env = {**env, **resolve.child_env_additions(skip, env=env)}
    if resolve.check_depth(env):
        return _exec_direct(executable, argv, child_env)
    interactive = os.isatty(0) and os.isatty(1)  # not `terminal.is_tty`: that module loads after the fork
    if opts.no_hooks:
        if not interactive:
            return _exec_direct(executable, argv, child_env)
        from wrapagent.proxy import spawn

        child = spawn.start(argv, env=child_env)
        from wrapagent.proxy import pty_loop  # imported while the tool's exec runs

        return pty_loop.proxy(child).exit_code
    from wrapagent.session.lifecycle import Session

    return Session(opts, env, child_env, executable, argv, interactive).run()
