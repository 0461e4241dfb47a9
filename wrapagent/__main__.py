"""Entry point: `wrapagent [OPTIONS] TOOL [TOOL-ARGS…]` or `wrapagent SUBCOMMAND …`.

Kept tiny on purpose: this runs on every start of an aliased `codex`, so
argument splitting is hand-written (argparse costs ~15 ms) and everything
else is imported only by the path that needs it.
"""

import sys
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

if TYPE_CHECKING:
    from typing import Sequence


SUBCOMMANDS = ("demo", "config", "doctor", "shims", "init", "sessions", "send", "undo", "redo", "trust", "uninstall",
               "completion",
               "_complete", "help")


def _split(argv: "Sequence[str]") -> "tuple[dict, str | None, list[str]]":
    """wrapagent's options, then TOOL, then the tool's arguments untouched."""
    opts: dict = {"no_hooks": False, "strict": False, "shim_dir": None, "force_tool": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            opts["force_tool"] = True
            i += 1
            break
        if arg == "--no-hooks":
            opts["no_hooks"] = True
        elif arg == "--strict":
            opts["strict"] = True
        elif arg == "--shim-dir":
            if i + 1 >= len(argv):
                raise _Usage("--shim-dir needs a directory")
            opts["shim_dir"] = argv[i + 1]
            i += 1
        elif arg.startswith("--shim-dir="):
            opts["shim_dir"] = arg.split("=", 1)[1]
        elif arg in ("-h", "--help"):
            opts["help"] = True
        elif arg.startswith("--color=") or arg.startswith("--colour="):
            opts["color"] = arg.split("=", 1)[1]
        elif arg in ("-V", "--version"):
            opts["version"] = True
        elif arg.startswith("-"):
            raise _Usage(f"unknown option {arg} (options go before TOOL; see wrapagent --help)")
        else:
            break
        i += 1
    if i >= len(argv):
        return opts, None, []
    return opts, argv[i], list(argv[i + 1:])


_SESSION_ACTIONS = ("show", "diff", "undo", "resume", "prune", "list", "path")
"""`sessions` actions that are also program names (`diff`): `wrapagent diff last` gets a hint."""


class _Usage(Exception):
    pass


def main(argv: "Sequence[str] | None" = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except _Usage as exc:
        from wrapagent.visible import visible

        sys.stderr.write(visible(f"wrapagent: {exc}") + "\n")  # it quotes the argument: inert
        return 2
    except BrokenPipeError:
        # The reader went away (`wrapagent doctor --json | head -1`): stop
        # quietly, as git does, with the status a SIGPIPE death gives.
        return 141
    except Exception as exc:
        # `wrapagent.errors` is imported here, not up front: the launch path
        # raises it only on failure and every start saves its import.
        from wrapagent.errors import WrapagentError

        if not isinstance(exc, WrapagentError):
            raise
        from wrapagent.visible import visible  # a tool name or path in the message is printed inert

        sys.stderr.write(f"wrapagent: {visible(exc.message)}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("wrapagent: interrupted\n")
        return 130


def _main(argv: "list[str]") -> int:
    opts, tool, rest = _split(argv)
    if opts.get("version"):
        from wrapagent import __version__

        print(f"wrapagent {__version__}")
        return 0
    if opts.get("help"):
        from wrapagent.cli import USAGE

        sys.stdout.write(USAGE)
        return 0
    if tool is None:
        from wrapagent.cli import USAGE

        sys.stderr.write(USAGE)  # a usage error: stderr, exit 2, like any CLI
        return 2
    if not opts["force_tool"] and tool in SUBCOMMANDS:
        from wrapagent.cli import run_subcommand

        return run_subcommand(tool, rest, strict=opts["strict"], color=opts.get("color"))
    if not opts["force_tool"] and tool in _SESSION_ACTIONS and rest:
        from wrapagent.commands.typo import session_hint

        hint = session_hint(tool, rest)
        if hint:
            sys.stderr.write(hint + "\n")
    from wrapagent.session.launch import RunOptions, run

    try:
        return run(RunOptions(tool=tool, args=rest, no_hooks=opts["no_hooks"],
                              strict=opts["strict"], shim_dir=opts["shim_dir"]))
    except Exception as exc:
        if not opts["force_tool"]:
            _typo_instead(exc, tool, rest)
        raise


def _typo_instead(exc: Exception, tool: str, rest: "list[str]") -> None:
    """A first word that is neither a subcommand nor on PATH: raise "did you mean" when one is close.

    Asked only after the PATH lookup failed, so a real program always runs
    and a wrapped tool's start pays nothing for it.
    """
    from wrapagent.errors import ToolNotFound

    if not (isinstance(exc, ToolNotFound) and exc.searched_path):
        return
    from wrapagent.commands.typo import not_found_message

    message = not_found_message(tool, rest)
    if message is not None:
        raise ToolNotFound(message) from None


def entry() -> None:
    """Console-script entry: run, flush, and leave without interpreter teardown.

    Everything wrapagent must do (terminal restored, record saved, hooks
    run) is done when `main` returns; tearing the interpreter down after
    that only delays the user's prompt (~15-30 ms measured).
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    import os

    os._exit(code)


if __name__ == "__main__":
    entry()
