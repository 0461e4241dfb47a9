"""Fixtures for running the real coding-agent CLIs, hermetically, against a local mock model.

API (see README.md for more):

    @pytest.mark.integration
    @pytest.mark.parametrize("tool", TOOLS)          # "codex", "claude", "gemini", "opencode"
    def test_something(cli_env):
        cli_env.tool, cli_env.spec                   # ToolSpec: ready regex, settle, quit keys, one-shot args…
        cli_env.env                                  # dict: the whole environment of a run (HOME, XDG_*, mock URLs…)
        cli_env.cwd                                  # Path: the work dir, a fresh git repo (= project root)
        cli_env.home, cli_env.root                   # Path: temp HOME; the temp root holding everything
        cli_env.argv_prefix                          # [sys.executable, "-m", "wrapagent", TOOL]
        cli_env.command(args, wrapped=True)          # argv through wrapagent (or the real binary if wrapped=False)
        cli_env.interactive_args()                   # e.g. ["--no-daemon"] for codex
        cli_env.oneshot_args("prompt")               # e.g. ["exec", "--skip-git-repo-check", "prompt"]
        cli_env.mock                                 # MockServer: .url, .requests, .first_user_text(), .user_texts(),
                                                     #   .wait_for_turns(n), .mark() / since=, .summary(), .clear()
        cli_env.write_wrapagent_config(hooks_toml=..., config_toml=..., project_hooks_toml=...)
                                                     # $XDG_CONFIG_HOME/wrapagent/{hooks,config}.toml, <cwd>/.wrapagent/hooks.toml
        term = cli_env.spawn(args=None, wrapped=True, cols=120, rows=40, extra_env=None)
                                                     # driver.Terminal in a PTY: wait_for, type, enter, paste, resize, quit
        res = cli_env.run_piped(args, wrapped=True, input=None)   # no TTY: .stdout .stderr .returncode .run
        cli_env.assert_run_clean(term.run / res.run) # nothing the run started is still alive (else killed + fail)
        cli_env.sessions()                           # session records under the temp XDG_STATE_HOME
        cli_env.sessions_root()                      # $XDG_STATE_HOME/wrapagent/projects/<name>-<hash8>
        cli_env.assert_session_record(args, exit_code=0, mode="pty")   # record + `session <id> complete` commit

    make_cli_env(tool)   # another, independent CliEnv (same mock) inside one test
    make_cli_env(tool, bin_dir=older_cli_bin_dir)   # the same with a CLI of the older set
    mock                 # the test's MockServer (log: <tmp>/mock.jsonl)
    cli_bin_dir          # session-wide: installs the pinned CLIs once (integration/install_clis.py)
    older_cli_bin_dir    # session-wide: the older set (integration/older/package.json)

Rules the fixtures enforce:
- The CLIs are installed (npm ci into integration/.cache/clis) once per session; if that is
  impossible the test FAILS with the installer's message (never skips).
- Nothing outside the temp tree is used: HOME, XDG_*, CODEX_HOME, TMPDIR all point into it, and
  the environment is built from an allow-list (PATH, LANG, …), not inherited.
- Every process a test started is gone when it ends: at teardown, live terminals are closed
  (SIGHUP, SIGTERM, then SIGKILL) and processes carrying the env's tag are killed. If any was
  left by a wrapagent run, the test errors at teardown (tests check `assert_run_clean` earlier).
- On failure, the rendered screen of every terminal and the mock's request log are attached
  to the report.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from .clienv import TOOLS, CliEnv
from .cpu_time import CpuTime
from .install_clis import SETS, InstallError, bin_dir, ensure_installed
from .mock_server import MockServer

__all__ = ["TOOLS"]


_install_waited = False


def pytest_configure(config):
    """Print the CPU time of each half at the end of a run (see cpu_time.py)."""
    if not config.pluginmanager.has_plugin("wrapagent-cpu-time"):
        config.pluginmanager.register(CpuTime(), "wrapagent-cpu-time")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Before the first integration test's timer starts, wait for the CLIs' install (every set).

    `run-tests` installs them in the background while the unit tests run; on a slow
    network that install may still be going when the first integration test begins,
    and its wait must not count against that test's timeout (pytest-timeout times
    fixtures too). Outermost wrapper: runs before pytest-timeout arms its timer.
    """
    global _install_waited
    if not _install_waited and item.get_closest_marker("integration") is not None:
        _install_waited = True
        for cli_set in SETS:
            try:
                ensure_installed(quiet=False, cli_set=cli_set)
            except InstallError:
                pass  # the fixture reports it, as a failure of the tests that need that set
    yield


#: Where the integration tests go in a run spread over processes, as fractions of the unit
#: tests: after the first 15 % (the CLIs install in the background meanwhile, so no process
#: sits blocked on npm at the start) and before the last 15 % (short unit tests then fill
#: the processes while the last CLI sessions end, instead of one long session ending alone).
SPREAD_FROM, SPREAD_TO = 0.15, 0.85


def spread_order(items: list, is_integration) -> list:
    """`items` with the integration tests spread evenly between the unit tests.

    pytest-xdist hands tests out in collection order (`./run-tests` gives each process
    one test at a time), so this order decides what runs side by side: an integration
    test mostly waits on a CLI, and the unit tests around it use the CPU it leaves idle.
    Order within each half is kept, so the tests of one file stay near each other.
    """
    integration = [item for item in items if is_integration(item)]
    units = [item for item in items if not is_integration(item)]
    if not integration or not units:
        return list(items)
    first = int(len(units) * SPREAD_FROM)
    step = (int(len(units) * SPREAD_TO) - first) / len(integration)
    ordered, placed = [], 0
    for position, unit in enumerate(units):
        while placed < len(integration) and first + placed * step <= position:
            ordered.append(integration[placed])
            placed += 1
        ordered.append(unit)
    ordered.extend(integration[placed:])
    return ordered


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker collecting both halves, interleave them (see `spread_order`).

    Every worker collects the same items and reorders them the same way, as xdist requires.
    A run in one process keeps the plain order.
    """
    if not hasattr(config, "workerinput"):
        return
    here = Path(__file__).parent
    items[:] = spread_order(items, lambda item: here in Path(item.path).parents)


@pytest.fixture(scope="session")
def cli_bin_dir():
    """Install the pinned CLIs (or reuse the cache) once per session; the folder of their bins."""
    started = time.monotonic()
    try:
        ensure_installed(quiet=False)
    except InstallError as exc:
        pytest.fail(f"cannot install the CLIs for the integration tests:\n{exc}", pytrace=False)
    elapsed = time.monotonic() - started
    if elapsed > 1:
        print(f"\n[integration] CLIs installed in {elapsed:.1f} s")
    return bin_dir()


@pytest.fixture(scope="session")
def older_cli_bin_dir():
    """Install the older set of CLIs (or reuse the cache) once per session; the folder of their bins."""
    started = time.monotonic()
    try:
        ensure_installed(quiet=False, cli_set="older")
    except InstallError as exc:
        pytest.fail(f"cannot install the older CLIs for the integration tests:\n{exc}", pytrace=False)
    elapsed = time.monotonic() - started
    if elapsed > 1:
        print(f"\n[integration] older CLIs installed in {elapsed:.1f} s")
    return bin_dir(SETS["older"].cache)


@pytest.fixture
def mock(tmp_path):
    server = MockServer(log_path=tmp_path / "mock.jsonl").start()
    yield server
    server.stop()


@pytest.fixture
def tool():
    raise pytest.UsageError('parametrize the test with "tool" (e.g. @pytest.mark.parametrize("tool", TOOLS))')


@pytest.fixture
def make_cli_env(request, tmp_path, mock, cli_bin_dir):
    envs: list[CliEnv] = []
    request.node._wrapagent_envs = envs

    def make(tool_name: str, mock_server: MockServer | None = None, bin_dir: Path | None = None) -> CliEnv:
        root = tmp_path / f"{tool_name}-{len(envs) + 1}"
        env = CliEnv.create(tool_name, root, mock_server or mock, bin_dir or cli_bin_dir)
        envs.append(env)
        return env

    yield make

    problems = []
    for env in envs:
        for term in env.terminals:
            term.close()
        changed = env.opencode_plugin_changed()
        if changed:
            problems.append(f"opencode changed files of the plugin folder its HOME shares (hard links; "
                            f"installed afresh by the next run): {', '.join(changed[:5])}")
        killed = env.reap_leftovers()
        for run, desc in killed:
            if run is None or run.wrapped:
                problems.append(f"{'wrapagent run ' + repr(run.argv) if run else 'unknown run'} left a process "
                                f"behind (killed now): {desc}")
            else:
                warnings.warn(f"direct CLI run {run.argv!r} left a process behind (killed): {desc}")
    if problems:
        pytest.fail("after the test:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def cli_env(make_cli_env, tool) -> CliEnv:
    return make_cli_env(tool)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    envs = getattr(item, "_wrapagent_envs", None) or []
    for i, env in enumerate(envs):
        for j, term in enumerate(env.terminals):
            try:
                report.sections.append((f"{env.tool} terminal {j + 1} ({call.when})", term.dump()))
            except Exception as exc:  # never hide the real failure
                report.sections.append((f"{env.tool} terminal {j + 1}", f"(dump failed: {exc!r})"))
        try:
            report.sections.append((f"{env.tool} mock requests", env.mock.summary()))
        except Exception:
            pass
        report.sections.append((f"{env.tool} temp root", str(env.root)))
