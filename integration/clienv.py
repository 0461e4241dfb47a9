"""Hermetic environments for running the real CLIs (directly or under wrapagent).

`CliEnv.create(tool, root, mock, bin_dir)` builds, under `root`:

    root/home/                      HOME (+ .config, .local/state, .local/share, .cache = XDG_*)
    root/home/.codex/config.toml    codex: mock provider, trust for the work dir
    root/home/.claude.json          claude: onboarding done, work dir trusted
    root/home/.gemini/settings.json gemini: api-key auth, folder trust off, no updates/telemetry
    root/home/.config/opencode/opencode.json   opencode: mock provider
    root/tmp/                       TMPDIR
    root/work/proj-<tool>/          the work dir: a git repo with one commit

The environment is built from scratch (a short allow-list of the parent's
variables), so nothing of the developer's own CLI setup leaks in. Every process
started through a CliEnv carries `WRAPAGENT_IT_ENV=<token>` and
`WRAPAGENT_IT_RUN=<run token>` in its environment; `leftovers()` finds every
process still alive with those tags (even reparented daemons) or with a working
directory inside `root`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .mock_server import MockServer

TOOLS = ("codex", "claude", "gemini", "opencode")

#: Which variables of the parent environment a CLI run may see (everything else is dropped).
PASSTHROUGH_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "USER", "LOGNAME", "TZ", "SYSTEMROOT")


@dataclass(frozen=True)
class ToolSpec:
    """What the harness needs to know to drive one CLI interactively and one-shot."""

    name: str
    api: str  # mock API name (see mock_server.TOOL_API)
    interactive_args: tuple[str, ...]  # args for an interactive session under test
    ready: str  # regex: the screen shows this when typed input is accepted
    redrawn: str  # regex: a full redraw after the first reply (transcript + prompt) shows this
    settle: float  # seconds of quiet output to wait after `ready` before typing
    quit_keys: tuple[bytes, ...]  # written one by one with `quit_gap` between
    quit_gap: float
    oneshot: tuple[str, ...]  # args of the non-interactive form; "{prompt}" is replaced
    ready_timeout: float
    reply_timeout: float


SPECS: dict[str, ToolSpec] = {
    "codex": ToolSpec(
        name="codex",
        api="responses",
        interactive_args=("--no-daemon",),
        # the status line (model + cwd) comes after the `› Ask Codex to do anything` prompt line
        ready=r"Ask Codex to do anything[\s\S]*mock-model",
        redrawn=r"MOCK-REPLY-1[\s\S]*Ask Codex to do anything[\s\S]*mock-model",
        settle=0.3,
        quit_keys=(b"\x03",),
        quit_gap=0.3,
        oneshot=("exec", "--skip-git-repo-check", "{prompt}"),
        ready_timeout=60,
        reply_timeout=60,
    ),
    "claude": ToolSpec(
        name="claude",
        api="messages",
        interactive_args=(),
        ready=r"❯[\s\S]*(\? for shortcuts|shift\+tab to cycle)",
        redrawn=r"MOCK-REPLY-1[\s\S]*❯[\s\S]*(\? for shortcuts|shift\+tab to cycle)",
        settle=0.3,
        quit_keys=(b"\x03", b"\x03"),
        quit_gap=0.3,
        oneshot=("-p", "{prompt}"),
        ready_timeout=60,
        reply_timeout=60,
    ),
    "gemini": ToolSpec(
        name="gemini",
        api="gemini",
        interactive_args=(),
        ready=r"Type your message or @path/to/file",
        # inline renderer: on SIGWINCH only the live region (prompt + footer) is redrawn, the
        # transcript stays in the terminal's scrollback
        redrawn=r"Type your message or @path/to/file[\s\S]*no sandbox",
        # gemini ignores Enter for ~1 s after the input box appears
        settle=1.0,
        quit_keys=(b"\x03", b"\x03"),
        quit_gap=0.3,
        oneshot=("-p", "{prompt}"),
        ready_timeout=90,
        reply_timeout=60,
    ),
    "opencode": ToolSpec(
        name="opencode",
        api="chat",
        interactive_args=(),
        ready=r"Ask anything",
        # after the first turn the composer shows the agent/model line instead of the placeholder
        redrawn=r"MOCK-REPLY-1[\s\S]*Mock Model Mock LLM",
        settle=0.3,
        quit_keys=(b"\x03",),
        quit_gap=0.3,
        oneshot=("run", "{prompt}"),
        ready_timeout=120,
        reply_timeout=90,
    ),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link to `src` at `dst`, or a copy where links cannot be made (another file system)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


@dataclass
class Run:
    """One process tree started through a CliEnv."""

    token: str
    argv: list[str]
    wrapped: bool
    label: str
    leftovers: list[str] = field(default_factory=list)


@dataclass
class CliEnv:
    """A temporary HOME/XDG tree + git work dir + environment for one CLI, pointed at `mock`."""

    tool: str
    root: Path
    mock: MockServer
    bin_dir: Path
    home: Path
    cwd: Path
    env: dict[str, str]
    token: str
    runs: list[Run] = field(default_factory=list)
    terminals: list = field(default_factory=list)
    version: str = ""  # the installed release (cliversions.adapt)
    spec_override: ToolSpec | None = None  # a release's own ToolSpec (cliversions.py)

    # construction -----------------------------------------------------------------------
    @classmethod
    def create(cls, tool: str, root: Path, mock: MockServer, bin_dir: Path) -> "CliEnv":
        if tool not in SPECS:
            raise ValueError(f"unknown tool {tool!r}; expected one of {TOOLS}")
        root = Path(root).resolve()
        home = root / "home"
        cwd = root / "work" / f"proj-{tool}"
        for d in (home, root / "tmp", cwd):
            d.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        env.update(
            {
                "PATH": os.pathsep.join([str(bin_dir), env.get("PATH", "/usr/local/bin:/usr/bin:/bin")]),
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_STATE_HOME": str(home / ".local" / "state"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "TMPDIR": str(root / "tmp"),
                "TERM": "xterm-256color",
                "LANG": env.get("LANG") or "C.UTF-8",
                "SHELL": "/bin/sh",
                "GIT_CONFIG_NOSYSTEM": "1",
                "WRAPAGENT_IT_ENV": token,
            }
        )
        for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
            Path(env[var]).mkdir(parents=True, exist_ok=True)
        self = cls(tool=tool, root=root, mock=mock, bin_dir=Path(bin_dir), home=home, cwd=cwd, env=env, token=token)
        self._init_git()
        getattr(self, f"_setup_{tool}")()
        from .cliversions import adapt

        adapt(self)  # what an older release needs (the pinned set needs nothing)
        return self

    def _init_git(self) -> None:
        _write(
            self.home / ".gitconfig",
            "[user]\n\tname = Integration Test\n\temail = integration@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n",
        )
        _write(self.cwd / "README.md", f"# proj-{self.tool}\n\nA throwaway repository for wrapagent's integration tests.\n")
        for cmd in (["git", "init", "-q"], ["git", "add", "README.md"], ["git", "commit", "-q", "-m", "initial"]):
            subprocess.run(cmd, cwd=self.cwd, env=self.env, check=True, capture_output=True)

    def _setup_codex(self) -> None:
        codex_home = self.home / ".codex"
        self.env["CODEX_HOME"] = str(codex_home)
        self.env["MOCK_API_KEY"] = "mock-key"
        _write(
            codex_home / "config.toml",
            f"""model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock"
base_url = {_toml_str(self.mock.url + "/v1")}
wire_api = "responses"
env_key = "MOCK_API_KEY"

[projects.{_toml_str(str(self.cwd))}]
trust_level = "trusted"
""",
        )

    def _setup_claude(self) -> None:
        self.env.update(
            {
                "ANTHROPIC_BASE_URL": self.mock.url,
                "ANTHROPIC_AUTH_TOKEN": "mock-token",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1",
            }
        )
        _write(
            self.home / ".claude.json",
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "projects": {str(self.cwd): {"hasTrustDialogAccepted": True}},
                },
                indent=2,
            ),
        )

    def _setup_gemini(self) -> None:
        self.env.update({"GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": self.mock.url})
        _write(
            self.home / ".gemini" / "settings.json",
            json.dumps(
                {
                    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                },
                indent=2,
            ),
        )

    def _setup_opencode(self) -> None:
        self._copy_opencode_plugin()
        self.env.update(
            {
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_SHARE": "1",
            }
        )
        _write(
            Path(self.env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json",
            json.dumps(
                {
                    "$schema": "https://opencode.ai/config.json",
                    "autoupdate": False,
                    "share": "disabled",
                    "model": "mock/mock-model",
                    "small_model": "mock/mock-model",
                    "provider": {
                        "mock": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Mock LLM",
                            "options": {"baseURL": self.mock.url + "/v1", "apiKey": "mock-key"},
                            "models": {"mock-model": {"name": "Mock Model"}},
                        }
                    },
                },
                indent=2,
            ),
        )

    def _copy_opencode_plugin(self) -> None:
        """opencode's plugin package in its config folder, as after its first start (install_clis.py
        `OPENCODE_PLUGIN_DIR`): a folder of the test's own, since opencode writes there.

        Its top-level files (package.json, the lock) are copies, which an `npm install` would rewrite;
        the files under node_modules (64 MB, ~4,000 files) are hard links, where the file system
        allows: a copy cost ~0.5 s of CPU per test and its removal ~0.7 s at the end of the run.
        opencode adds files there (`.gitignore`) but was not seen to change one; should a release
        change one in place, the shared file changes too, which `opencode_plugin_changed` reports
        (the test fails and the set's plugin is installed again by the next run).
        """
        from .install_clis import opencode_plugin_dir

        made = opencode_plugin_dir(self.bin_dir.parent.parent)
        if made is None:
            return
        target = Path(self.env["XDG_CONFIG_HOME"]) / "opencode"
        target.mkdir(parents=True, exist_ok=True)
        for entry in made.iterdir():
            if entry.name == ".complete":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, target / entry.name, symlinks=True, copy_function=_link_or_copy)
            else:
                shutil.copy2(entry, target / entry.name, follow_symlinks=False)

    def opencode_plugin_changed(self) -> list[str]:
        """Files of the shared plugin folder changed since it was installed (see `_copy_opencode_plugin`).

        An empty list when nothing changed, or for another tool. When something did, the folder's
        `.complete` marker is removed, so that the next run installs the plugin afresh.
        """
        from .install_clis import opencode_plugin_dir

        if self.tool != "opencode":
            return []
        made = opencode_plugin_dir(self.bin_dir.parent.parent)
        if made is None:
            return []
        marker = made / ".complete"
        since = marker.stat().st_mtime
        changed = [str(path.relative_to(made)) for path in made.rglob("*")
                   if path.name != ".complete" and not path.is_symlink() and path.lstat().st_mtime > since]
        if changed:
            marker.unlink()
        return changed

    # commands ----------------------------------------------------------------------------
    @property
    def spec(self) -> ToolSpec:
        return self.spec_override or SPECS[self.tool]

    @property
    def api(self) -> str:
        return self.spec.api

    @property
    def bin(self) -> Path:
        """The real CLI binary (the npm bin link)."""
        return self.bin_dir / self.tool

    @property
    def argv_prefix(self) -> list[str]:
        """`python -m wrapagent TOOL`: prepend to the tool's own arguments."""
        return [sys.executable, "-m", "wrapagent", self.tool]

    def command(self, args: Sequence[str] = (), wrapped: bool = True) -> list[str]:
        """The argv that runs the tool with `args`, through wrapagent or directly."""
        head = self.argv_prefix if wrapped else [str(self.bin)]
        return [*head, *args]

    def interactive_args(self, extra: Sequence[str] = ()) -> list[str]:
        return [*self.spec.interactive_args, *extra]

    def oneshot_args(self, prompt: str) -> list[str]:
        return [prompt if a == "{prompt}" else a for a in self.spec.oneshot]

    def run_env(self, run: Run, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(self.env)
        env["WRAPAGENT_IT_RUN"] = run.token
        if extra:
            env.update(extra)
        return env

    def new_run(self, argv: Sequence[str], wrapped: bool, label: str = "") -> Run:
        run = Run(token=uuid.uuid4().hex, argv=list(argv), wrapped=wrapped, label=label or " ".join(argv[-3:]))
        self.runs.append(run)
        return run

    def spawn(self, args: Sequence[str] | None = None, wrapped: bool = True, cols: int = 120, rows: int = 40,
              extra_env: dict[str, str] | None = None, label: str = ""):
        """Start the tool interactively in a PTY (see driver.Terminal). `args` default: interactive_args()."""
        from .driver import Terminal

        args = self.interactive_args() if args is None else list(args)
        argv = self.command(args, wrapped=wrapped)
        run = self.new_run(argv, wrapped, label or ("wrapped " if wrapped else "direct ") + "interactive")
        log = self.root / f"pty-{len(self.runs)}-{'wrapped' if wrapped else 'direct'}.raw"
        term = Terminal(argv, env=self.run_env(run, extra_env), cwd=str(self.cwd), cols=cols, rows=rows, raw_log=log)
        term.run = run
        self.terminals.append(term)
        return term

    def spawn_wrapagent(self, wrapagent_args: Sequence[str], cols: int = 120, rows: int = 40,
                        label: str = "", python_args: Sequence[str] = ("-m", "wrapagent")):
        """`python -m wrapagent ARGS…` in a PTY, in the work dir (a subcommand that starts the tool).

        `python_args`: how Python starts wrapagent (a test may start it through `-c CODE`)."""
        from .driver import Terminal

        argv = [sys.executable, *python_args, *wrapagent_args]
        run = self.new_run(argv, True, label or "wrapagent " + " ".join(wrapagent_args[:2]))
        log = self.root / f"pty-{len(self.runs)}-wrapagent.raw"
        term = Terminal(argv, env=self.run_env(run), cwd=str(self.cwd), cols=cols, rows=rows, raw_log=log)
        term.run = run
        self.terminals.append(term)
        return term

    def run_piped(self, args: Sequence[str], wrapped: bool = True, input: bytes | None = None, timeout: float = 120,
                  extra_env: dict[str, str] | None = None, label: str = "") -> "PipedResult":
        """Run the tool without a TTY (stdin from `input` or /dev/null, stdout/stderr captured)."""
        argv = self.command(args, wrapped=wrapped)
        run = self.new_run(argv, wrapped, label or ("wrapped " if wrapped else "direct ") + "piped")
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=self.run_env(run, extra_env),
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = proc.communicate()
            raise AssertionError(
                f"{argv} did not finish within {timeout:.0f} s\nstdout: {out[-3000:]!r}\nstderr: {err[-3000:]!r}\n"
                f"mock requests:\n{self.mock.summary()}"
            ) from None
        return PipedResult(argv, proc.returncode, out, err, time.monotonic() - started, run)

    # wrapagent config and records ---------------------------------------------------------
    @property
    def wrapagent_config_dir(self) -> Path:
        return Path(self.env["XDG_CONFIG_HOME"]) / "wrapagent"

    def write_wrapagent_config(self, hooks_toml: str | None = None, config_toml: str | None = None,
                               project_hooks_toml: str | None = None) -> dict[str, Path]:
        """Write `$XDG_CONFIG_HOME/wrapagent/hooks.toml`, `…/config.toml` and/or `<cwd>/.wrapagent/hooks.toml`."""
        written = {}
        if hooks_toml is not None:
            written["hooks"] = _write(self.wrapagent_config_dir / "hooks.toml", hooks_toml)
        if config_toml is not None:
            written["config"] = _write(self.wrapagent_config_dir / "config.toml", config_toml)
        if project_hooks_toml is not None:
            written["project_hooks"] = _write(self.cwd / ".wrapagent" / "hooks.toml", project_hooks_toml)
        return written

    @property
    def state_dir(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "wrapagent"

    def sessions_root(self, project_root: Path | None = None) -> Path:
        """`$XDG_STATE_HOME/wrapagent/projects/<name>-<sha256(path)[:8]>` (ARCHITECTURE.md), computed independently."""
        project_root = Path(project_root or self.cwd)
        digest = hashlib.sha256(str(project_root).encode()).hexdigest()[:8]
        return self.state_dir / "projects" / f"{project_root.name or 'root'}-{digest}"

    def session_files(self) -> list[Path]:
        return sorted((self.state_dir / "projects").glob("*/*/session.json"))

    def sessions(self) -> list[dict]:
        """Every session record under the temp XDG_STATE_HOME, oldest first (`_path` added)."""
        records = []
        for path in self.session_files():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                record = {"_error": f"{type(exc).__name__}: {exc}"}
            record["_path"] = str(path)
            records.append(record)
        records.sort(key=lambda r: (r.get("started_at") or "", r["_path"]))
        return records

    def sessions_git_log(self, root: Path | None = None) -> str:
        root = root or self.sessions_root()
        proc = subprocess.run(["git", "-C", str(root), "log", "--oneline"], capture_output=True, text=True, env=self.env)
        return proc.stdout if proc.returncode == 0 else f"(git log failed rc={proc.returncode}: {proc.stderr.strip()})"

    def wait_session_record(self, args: Sequence[str], timeout: float = 15.0) -> dict:
        """The newest record whose argv is `TOOL args`, once its `session <id> complete` commit exists.

        Raises AssertionError with everything found when it does not show up in time.
        """
        args = list(args)
        deadline = time.monotonic() + timeout
        while True:
            matching = [r for r in self.sessions() if list(r.get("argv") or [])[1:] == args]
            record = matching[-1] if matching else None
            log = ""
            if record is not None:
                log = self.sessions_git_log(Path(record["_path"]).parent.parent)
                if f"session {record.get('id')} complete" in log:
                    return record
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"no committed session record with argv [{self.tool!r}, *{args!r}] within {timeout:.0f} s\n"
                    f"records: {json.dumps(self.sessions(), indent=1)[:6000]}\n"
                    f"expected sessions root: {self.sessions_root()}\n"
                    f"git log of the record's sessions root: {log or '(none)'}"
                )
            time.sleep(0.1)

    def assert_session_record(self, args: Sequence[str], exit_code: int, mode: str | None = None) -> dict:
        """Check the record of `TOOL args`: tool, argv, exit code, (mode), location, and its commit."""
        record = self.wait_session_record(args)
        problems = []
        argv = list(record.get("argv") or [])
        if record.get("tool") != self.tool:
            problems.append(f"tool is {record.get('tool')!r}, expected {self.tool!r}")
        if not argv or os.path.basename(argv[0]) != self.tool or argv[1:] != list(args):
            problems.append(f"argv is {argv!r}, expected [{self.tool!r}, *{list(args)!r}]")
        if record.get("exit_code") != exit_code:
            problems.append(f"exit_code is {record.get('exit_code')!r}, expected {exit_code}")
        if mode is not None and record.get("mode") != mode:
            problems.append(f"mode is {record.get('mode')!r}, expected {mode!r}")
        expected_root = self.sessions_root()
        if Path(record["_path"]).parent.parent != expected_root:
            problems.append(f"record is at {record['_path']}, expected under {expected_root}")
        if Path(record["_path"]).parent.name != record.get("id"):
            problems.append(f"record folder {Path(record['_path']).parent.name!r} is not its id {record.get('id')!r}")
        assert not problems, "session record: " + "; ".join(problems) + "\n" + json.dumps(record, indent=1)
        return record

    def assert_transcripts_are_opencode_exports(self, record: dict) -> int:
        """Each opencode conversation wrapagent copied (read from opencode's database, not by running
        `opencode export`) is the document `opencode export` prints for it. Returns how many were compared."""
        compared = 0
        folder = Path(record["_path"]).parent
        for native in record["native_sessions"]:
            assert native.get("transcript"), native
            proc = subprocess.run([str(self.bin), "export", native["id"]], capture_output=True,
                                  env=self.env, cwd=self.cwd, timeout=120)
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")
            printed = proc.stdout[proc.stdout.find(b"{"):]  # it may print a line before the JSON
            copied = (folder / native["transcript"]).read_bytes()
            assert json.loads(copied) == json.loads(printed), (copied[:2000], printed[:2000])
            compared += 1
        return compared

    # processes ---------------------------------------------------------------------------
    def assert_run_clean(self, run: Run, grace: float = 3.0) -> None:
        """After a run ended: nothing it started may still be alive (killed and reported if so)."""
        import psutil

        deadline = time.monotonic() + grace
        procs = self.leftovers(run)
        while procs and time.monotonic() < deadline:
            time.sleep(0.1)
            procs = self.leftovers(run)
        if not procs:
            return
        descs = []
        for proc in procs:
            try:
                descs.append(f"pid {proc.pid} ppid {proc.ppid()} {proc.name()!r} cmdline={proc.cmdline()!r}")
                proc.terminate()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        _gone, alive = psutil.wait_procs(procs, timeout=3)
        for proc in alive:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        run.leftovers.extend(descs)
        who = "wrapagent run" if run.wrapped else "direct run (the CLI itself, not wrapagent)"
        raise AssertionError(f"{who} {run.argv!r} left processes behind (killed now):\n" + "\n".join(descs))

    def leftovers(self, run: Run | None = None) -> list["psutil.Process"]:  # noqa: F821
        """Live processes tagged with this env's (or one run's) token, or with a cwd inside root."""
        import psutil

        me = os.getpid()
        found = []
        key, value = ("WRAPAGENT_IT_RUN", run.token) if run else ("WRAPAGENT_IT_ENV", self.token)
        root = str(self.root)
        for proc in psutil.process_iter(["pid"]):
            if proc.pid == me:
                continue
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                tagged = proc.environ().get(key) == value
                if not tagged and run is None:
                    cwd = proc.cwd()
                    tagged = cwd == root or cwd.startswith(root + os.sep)
                if tagged:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
                continue
        return found

    def reap_leftovers(self, grace: float = 3.0) -> list[tuple[Run | None, str]]:
        """Wait up to `grace` s for tagged processes to exit on their own, then kill the rest.

        Returns (run or None, description) for each process that had to be killed.
        """
        import psutil

        deadline = time.monotonic() + grace
        procs = self.leftovers()
        while procs and time.monotonic() < deadline:
            time.sleep(0.1)
            procs = self.leftovers()
        killed: list[tuple[Run | None, str]] = []
        by_token = {r.token: r for r in self.runs}
        for proc in procs:
            try:
                run = by_token.get(proc.environ().get("WRAPAGENT_IT_RUN", ""))
                desc = f"pid {proc.pid} ppid {proc.ppid()} {proc.name()!r} cmdline={proc.cmdline()!r}"
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            killed.append((run, desc))
            if run is not None:
                run.leftovers.append(desc)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            alive = []
            for proc in procs:
                try:
                    proc.send_signal(sig)
                    alive.append(proc)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            gone, alive = psutil.wait_procs(alive, timeout=3)
            procs = alive
            if not procs:
                break
        return killed


@dataclass
class PipedResult:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    duration: float
    run: Run

    def describe(self) -> str:
        return (
            f"argv={self.argv}\nrc={self.returncode} ({self.duration:.1f} s)\n"
            f"stdout={self.stdout[-2000:]!r}\nstderr={self.stderr[-3000:]!r}"
        )


def _kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(1)


def find_session(records: Iterable[dict], **match) -> dict | None:
    for record in records:
        if all(record.get(k) == v for k, v in match.items()):
            return record
    return None


def tool_params(timeouts: dict[str, float]) -> list:
    """One pytest param per CLI, each with its own pytest-timeout (readiness differs 10x)."""
    import pytest

    return [pytest.param(t, marks=pytest.mark.timeout(timeouts[t]), id=t) for t in TOOLS]


def gemini_menu_caught_up(command: str) -> Callable[[list[str]], bool]:
    """Whether gemini's screen shows `command` in its composer and its menu filtered for it.

    gemini under load draws the typed command before its command menu follows it: the menu
    still lists all 41 commands for `/`, and an Enter then completes the stale entry into
    the text: `/clear` reached the model as `/clearclear` (seen in CI, the screen was
    `> /clear` over the whole menu). Caught up, the menu lists only the commands that start
    with what was typed (both pinned releases; tests/screens/gemini/*/text-reset-typed.txt).
    """
    name = command.lstrip("/")

    def caught_up(lines: list[str]) -> bool:
        rows = [i for i, line in enumerate(lines) if line.strip() == f"> {command}"]
        if not rows:
            return False
        menu = []
        for line in lines[rows[-1] + 1:]:
            if line.strip().startswith("workspace"):
                break
            if line.strip():
                menu.append(line.strip())
        return bool(menu) and all(entry.split()[0].startswith(name) for entry in menu)

    return caught_up


def send_message(term, text: str, tail: str | None = None, timeout: float = 20.0) -> None:
    """Type a message at the driver's pace and press Enter once the tool has drawn all of it.

    As a user does: they see the end of what they typed (`tail`, by default the last 15
    characters; matched across any wrap) and the screen stop changing, then press Enter.
    Entering as soon as the last key is drawn is too early for gemini 0.45.2: under load it
    drew the last key, took an Enter 25 ms later and submitted the message without that key.
    The Enter also comes at least 0.3 s after the last key.
    """
    term.type(text)
    shown = (tail if tail is not None else text[-15:]).replace(" ", "")
    term.wait_for(re.compile(r"\s*".join(map(re.escape, shown))), timeout=timeout)
    term.wait_quiet(0.3, timeout=5)
    term.enter(after=0.3)


def submit_command(term, tool: str, command: str, after: float = 0.5) -> None:
    """Type a slash command at the driver's pace and press Enter once the tool has caught up.

    As a user does: they see the command they typed (and the tool's menu narrowed to it)
    before they press Enter. The Enter still comes at least `after` seconds after the last
    key and after output went quiet.
    """
    term.type(command)
    if tool == "gemini":
        caught_up, what = gemini_menu_caught_up(command), f"gemini's menu filtered for {command}"
        term.wait_until(caught_up, what, timeout=20)
        term.wait_quiet(0.3, timeout=10)
        term.wait_until(caught_up, what, timeout=20)  # a frame half drawn may have looked caught up
    else:
        term.wait_for(command, timeout=15)
        term.wait_quiet(0.3, timeout=10)
    term.enter(after=after)


def composer_shown_empty(tool: str) -> Callable[[list[str]], bool]:
    """Whether the tool's screen shows its composer empty, no dialog up (wrapagent's screen model,
    proven on the recorded screens in tests/screens/).

    After a command, a person types the next message once they see the command gone from the
    composer. Under load claude drew `/clear` in its composer for half a second after the Enter;
    a message begun then passes without the blocks (wrapagent types nothing on a screen it cannot
    read) and the next message gets them: not what the test of the first message checks.
    """
    from wrapagent.inject.screen_model import EMPTY, model_for

    model = model_for(tool)

    def shown(lines: list[str]) -> bool:
        reading = model.read("\n".join(lines))
        return reading.composer == EMPTY and not reading.dialog

    return shown

