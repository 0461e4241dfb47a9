"""Every field wrapagent prints reaches the terminal inert.

A cloned repository names its own folder; a hooks file names its commands.
Escape sequences there (an OSC title or clipboard write, a C1 CSI, a bidi
override, a zero-width space) must come out escaped in `sessions list`,
`sessions show` (its log lines too), `doctor` (text and JSON), `config check`
and the trust listing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import default_signals, wrapagent_argv
from wrapagent import visible

HOSTILE = "evil\x1b]0;pwned\x07\x1b]52;c;Zm9v\x07\u009b2J\u202eabc\u200bd\x7f"
"""OSC title, OSC 52 clipboard write, C1 CSI (erase screen), RLO, ZWSP, DEL."""

RAW = [b"\x1b", b"\x07", b"\x7f", "\u009b".encode(), "\u202e".encode(), "\u200b".encode()]


def assert_inert(output: bytes) -> None:
    for raw in RAW:
        assert raw not in output, (raw, output[-2000:])


def run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], cwd=cwd, env=dict(os.environ if env is None else env),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120, preexec_fn=default_signals)


@pytest.fixture
def hostile_project(tmp_path: Path) -> Path:
    project = tmp_path / HOSTILE
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def write_global_hooks(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- the helper


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07", "\x7f", "\x85", "\x9b", "\u200b", "\u200e",
                                  "\u202e", "\u2066", "\u2028", "\ufeff", "\u00ad", "\U000e0041",
                                  os.fsdecode(b"\xe9")])
def test_visible_escapes_every_hidden_character(char: str) -> None:
    shown = visible.field(f"a{char}b")
    assert shown.isascii() and shown.isprintable() and shown.startswith("a\\") and shown.endswith("b")
    shown.encode("utf-8")  # a surrogate (a byte that was not UTF-8) is shown as \xNN, never raw


def test_visible_keeps_ordinary_text_and_multiline_layout() -> None:
    text = "café 日本語 — ok\n\tnext"
    assert visible.visible(text) == text
    assert visible.field(text) == "café 日本語 — ok\\x0a\\x09next"


def test_json_text_is_the_same_document_and_inert() -> None:
    doc = {"path": HOSTILE, "bytes": os.fsdecode(b"caf\xe9"), "tag": "\U000e0041", "n": 1}
    text = visible.json_text(json.dumps(doc, indent=2, ensure_ascii=False))
    assert_inert(text.encode("utf-8"))
    assert json.loads(text) == doc


# --------------------------------------------------------------------------- doctor, config check, trust


def test_doctor_text_and_json_inert(hostile_project: Path) -> None:
    text = run(["doctor"], hostile_project)
    assert "Traceback" not in text.stderr.decode(errors="replace")
    assert b"evil" in text.stdout
    assert_inert(text.stdout)
    as_json = run(["doctor", "--json"], hostile_project)
    assert_inert(as_json.stdout)
    # Still the same document: the hidden characters are \\u escapes inside its strings.
    assert json.loads(as_json.stdout)["cwd"] == str(hostile_project)


def test_config_check_inert(hostile_project: Path) -> None:
    write_global_hooks('[pre_run]\ncommand = "echo \\u001b]0;x\\u0007 \\u202e \\u009b2J"\n')
    proc = run(["config", "check"], hostile_project)
    assert b"echo" in proc.stdout and b"evil" in proc.stdout
    assert_inert(proc.stdout)


def test_trust_listing_inert(hostile_project: Path) -> None:
    from wrapagent.hooks.trust import TrustStore

    hooks = hostile_project / ".wrapagent" / "hooks.toml"
    hooks.parent.mkdir()
    hooks.write_text("")
    TrustStore(env=os.environ).trust(hooks, hooks.read_bytes())
    proc = run(["trust", "--list"], hostile_project)
    assert b"evil" in proc.stdout and b"hooks.toml" in proc.stdout
    assert_inert(proc.stdout)


class _Terminal:
    """A stream that says it is a terminal (cmd_trust asks a person only at one)."""

    def __init__(self, text: str = "") -> None:
        import io

        self.buffer = io.StringIO(text)

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str):
        return getattr(self.buffer, name)


def test_every_trust_line_naming_the_file_inert(hostile_project: Path) -> None:
    """Refusal, revoke, yes, no, already trusted: each names the hooks file, each inert."""
    import io

    from wrapagent.commands.trust import cmd_trust

    hooks = hostile_project / ".wrapagent" / "hooks.toml"
    hooks.parent.mkdir()
    hooks.write_text('[pre_run]\ncommand = "true"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRAPAGENT_")}

    def trust(*, answer: str | None = None, revoke: bool = False) -> str:
        out, err = (_Terminal(), io.StringIO()) if answer is not None else (io.StringIO(), io.StringIO())
        stdin = _Terminal(answer) if answer is not None else io.StringIO()
        cmd_trust(None, revoke=revoke, list_=False, stdin=stdin, stdout=out, stderr=err, env=env,
                  cwd=hostile_project)
        return out.getvalue() + err.getvalue()

    said = [trust(), trust(revoke=True), trust(answer="n\n"), trust(answer="y\n"), trust(), trust(revoke=True)]
    for text in said:
        assert "evil" in text and "hooks.toml" in text, text
        assert_inert(text.encode("utf-8", "surrogateescape"))


# --------------------------------------------------------------------------- sessions list / show


@pytest.fixture
def hostile_session(hostile_project: Path) -> Path:
    """One finished session of a tool with a hostile name, in the hostile folder, whose pre_run logs hostile output."""
    write_global_hooks('[pre_run]\ncommand = "printf \'out \\\\033]0;log\\\\007 \\\\342\\\\200\\\\256x\\\\n\'"\n')
    tool = hostile_project / f"tool{HOSTILE}"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    proc = run([str(tool), "arg\x1b[2J"], hostile_project)
    assert proc.returncode == 0, proc.stderr
    return hostile_project


def only_session_id(cwd: Path) -> str:
    """The one recorded session's id (its tool is no agent, so it is not `last`)."""
    [entry] = json.loads(run(["sessions", "list", "--json"], cwd).stdout)
    return entry["id"]


def test_sessions_list_inert(hostile_session: Path) -> None:
    proc = run(["sessions", "list"], hostile_session)
    assert b"evil" in proc.stdout and b"tool" in proc.stdout
    assert_inert(proc.stdout)
    assert len(proc.stdout.decode().splitlines()) == 2  # header + one row: a name cannot add rows


def test_sessions_list_json_inert(hostile_session: Path) -> None:
    proc = run(["sessions", "list", "--json"], hostile_session)
    assert_inert(proc.stdout)
    [entry] = json.loads(proc.stdout)
    assert entry["project_root"] == str(hostile_session) and entry["tool"] == f"tool{HOSTILE}"


def test_sessions_show_inert_log_lines_included(hostile_session: Path) -> None:
    proc = run(["sessions", "show", only_session_id(hostile_session)], hostile_session)
    text = proc.stdout.decode()
    # The hook's output in the log lines: its bidi override escaped (the hook runner already drops ESC).
    assert "Log (" in text and "\\u202ex" in text
    assert_inert(proc.stdout)


def test_sessions_show_json_inert_and_the_same_record(hostile_session: Path) -> None:
    from wrapagent.history import records

    proc = run(["sessions", "show", "--json", only_session_id(hostile_session)], hostile_session)
    assert_inert(proc.stdout)
    shown = records.loads(proc.stdout)
    assert shown["project_root"] == str(hostile_session) and shown["argv"][-1] == "arg\x1b[2J"


def test_sessions_of_a_non_utf8_folder_list_and_show(tmp_path: Path) -> None:
    """A Latin-1 folder: shown as \\xe9, never a traceback; the JSON gives the bytes back."""
    from wrapagent.history import records

    work = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(work)
    subprocess.run([*wrapagent_argv(), "true"], cwd=work, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    listed = run(["sessions", "list"], Path(os.fsdecode(work)))
    assert listed.returncode == 0 and b"caf\\xe9" in listed.stdout, listed.stderr
    listed.stdout.decode("utf-8")  # strict: the raw byte never reaches the terminal
    shown = run(["sessions", "show", "--json", only_session_id(Path(os.fsdecode(work)))], Path(os.fsdecode(work)))
    assert shown.returncode == 0, shown.stderr
    assert os.fsencode(records.loads(shown.stdout)["cwd"]) == work


# --------------------------------------------------------------------------- wrapagent's own lines on stderr


def test_error_line_naming_a_hostile_tool_inert(tmp_path: Path) -> None:
    proc = run([f"no-such-tool{HOSTILE}"], tmp_path)
    assert proc.returncode == 127 and b"command not found" in proc.stderr
    assert_inert(proc.stderr)


def test_session_lines_naming_a_hostile_tool_inert(tmp_path: Path) -> None:
    """pre_run refuses: the refusal line names the tool (a script whose name the repository chose)."""
    write_global_hooks('[pre_run]\ncommand = "echo no >&2; exit 2"\n')
    tool = tmp_path / f"tool{HOSTILE}"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    proc = run([str(tool)], tmp_path)
    assert proc.returncode == 2 and b"refused to start" in proc.stderr
    assert_inert(proc.stderr)


def test_sessions_resume_refusal_naming_a_hostile_tool_inert(hostile_session: Path) -> None:
    """`sessions resume ID` of a tool it cannot resume names the tool: inert."""
    proc = run(["sessions", "resume", only_session_id(hostile_session)], hostile_session)
    assert proc.returncode != 0 and b"tool" in proc.stderr, proc.stderr
    assert_inert(proc.stderr)


@pytest.mark.parametrize("args", [["sessions", "prune"], ["send", "hello"]], ids=["prune", "send"])
def test_refusals_naming_a_hostile_folder_inert(tmp_path: Path, args: list[str]) -> None:
    """Outside a git repository (prune) and with no running session (send): the line names the folder."""
    folder = tmp_path / HOSTILE
    folder.mkdir()
    proc = run(args, folder)
    assert proc.returncode != 0 and b"evil" in proc.stderr, proc.stderr
    assert_inert(proc.stderr)


def test_unknown_option_quoted_inert(tmp_path: Path) -> None:
    proc = run([f"--x{HOSTILE}"], tmp_path)
    assert proc.returncode == 2 and b"unknown option" in proc.stderr
    assert_inert(proc.stderr)
