"""Start wrapagent's own Python code in a new process, never code from the current folder.

`python -m wrapagent` looks in the current folder first: run in a cloned
repository that ships `wrapagent/__main__.py` (or `wrapagent.py`), it runs
that repository's code, with no trust prompt. `sessions resume` (which
enters the session's folder) and `wrapagent demo` start their process with
`module_argv` instead:

    python -I /real/path/to/wrapagent/commands/own_process.py MODULE ARGS…

`-I` (isolated mode) keeps the current folder, the script's folder and
PYTHON* variables out of `sys.path`; this file, run as that script, puts the
package's real location first and runs MODULE as `__main__`. The user's
site-packages, which `-I` also leaves out, is added back when this process
uses it (`--user-site`): a `pip install --user` keeps working.
"""

from __future__ import annotations

import os
import sys

USER_SITE_FLAG = "--user-site"


def package_parent() -> str:
    """The folder holding the `wrapagent` package actually running (symlinks resolved)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def module_argv(module: str, *args: str) -> list[str]:
    """argv that runs `python -m MODULE ARGS` of this wrapagent, with this interpreter."""
    import site

    extra = [USER_SITE_FLAG] if site.ENABLE_USER_SITE else []
    return [sys.executable, "-I", os.path.realpath(__file__), *extra, module, *args]


def _run(argv: list[str]) -> None:
    """The script side: `own_process.py [--user-site] MODULE ARGS…` under `python -I`."""
    import runpy

    args = argv[1:]
    if args[:1] == [USER_SITE_FLAG]:
        import site

        args = args[1:]
        site.addsitedir(site.getusersitepackages())
    if not args:
        sys.exit("usage: python -I own_process.py [--user-site] MODULE [ARGS…]")
    sys.path.insert(0, package_parent())
    module = args[0]
    sys.argv[:] = [module, *args[1:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _run(sys.argv)
