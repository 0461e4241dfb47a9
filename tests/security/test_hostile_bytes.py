"""Hostile bytes never crash wrapagent before the tool starts.

A working directory or argument that is not UTF-8 (a Latin-1 byte), or
garbage in wrapagent's own variables, must not stop the tool: it runs, gets
exactly its bytes, its exit code comes back, and the session record keeps
the bytes (escaped, with a marker) so they read back the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import agent_stand_in, default_signals, wrapagent_argv
from wrapagent.history import records

LATIN1_DIR = b"caf\xe9"  # "café" in Latin-1: not UTF-8
LATIN1_ARG = b"r\xe9sum\xe9 \\xe9 \xff"  # undecodable bytes next to a literal backslash-x


def write_hooks(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def run_piped(args: list[bytes | str], cwd: bytes | str, env: dict | None = None) -> subprocess.CompletedProcess:
    """wrapagent without a terminal (pipe mode), argv and cwd as bytes."""
    return subprocess.run([*wrapagent_argv(), *args], cwd=cwd, env=dict(os.environ if env is None else env),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                          preexec_fn=default_signals)


def all_records() -> list[dict]:
    state = Path(os.environ["XDG_STATE_HOME"]) / "wrapagent" / "projects"
    found = []
    for root in state.iterdir() if state.is_dir() else []:
        found += records.iter_records([root])
    return found


def only_record() -> dict:
    found = all_records()
    assert len(found) == 1, found
    return found[0]


def tool_writing(out: Path, exit_code: int) -> list[bytes]:
    """A tool that writes its cwd and first argument, as bytes, to `out`, then exits `exit_code`."""
    code = ("import os, sys; open(sys.argv[1], 'wb').write(os.getcwdb() + b'\\0' + "
            "(os.fsencode(sys.argv[2]) if len(sys.argv) > 2 else b'')); sys.exit(int(sys.argv[3]) "
            "if len(sys.argv) > 3 else %d)" % exit_code)
    return [sys.executable.encode(), b"-c", code.encode(), os.fsencode(out)]


@pytest.mark.parametrize("hooks", ["", '[pre_run]\ncommand = "true"\n'], ids=["no-hooks-config", "pre_run"])
def test_non_utf8_working_directory_and_argument_in_pipe_mode(tmp_path: Path, hooks: str) -> None:
    """A Latin-1 directory (inside a git project) and a Latin-1 argument: the tool runs, exit 7 back."""
    if hooks:
        write_hooks(hooks)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    work = os.path.join(os.fsencode(tmp_path), LATIN1_DIR)
    os.mkdir(work)
    out = tmp_path / "tool.out"
    proc = run_piped([*tool_writing(out, 0), LATIN1_ARG, b"7"], cwd=work)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    assert proc.returncode == 7, proc.stderr.decode(errors="replace")
    assert out.read_bytes() == work + b"\0" + LATIN1_ARG  # the tool got exactly its bytes
    record = only_record()
    assert record["state"] == "finished" and record["exit_code"] == 7
    assert os.fsencode(record["cwd"]) == work
    assert os.fsencode(record["argv"][-2]) == LATIN1_ARG


def test_record_with_hostile_bytes_is_utf8_json_any_reader_takes() -> None:
    """The file is UTF-8 (no lone surrogates), the marker lists what was escaped, Python reads it back."""
    record = {"cwd": os.fsdecode(b"/p/" + LATIN1_DIR), "argv": ["tool", os.fsdecode(LATIN1_ARG), "a\\xe9"],
              "hooks": [{"command": os.fsdecode(b"echo \xe9/~x")}], "plain": "caf\u00e9 \\ ok"}
    text = records.dumps(record)
    data = text.encode("utf-8")  # strict: would raise on a surrogate
    stock = json.loads(data)  # any JSON reader: no surrogates to choke on
    assert sorted(stock["escaped"]) == ["/argv/1", "/cwd", "/hooks/0/command"]
    assert stock["argv"][2] == "a\\xe9" and stock["plain"] == "caf\u00e9 \\ ok"  # untouched: valid UTF-8
    assert records.loads(data) == record


@pytest.mark.parametrize("hooks", ["", '[pre_run]\ncommand = "true"\n'], ids=["tool-first", "usual-order"])
def test_non_utf8_project_root_on_a_terminal(tmp_path: Path, run_wrapagent, hooks: str) -> None:
    """A project folder whose own name is Latin-1 (its sessions root is named after it), in a PTY."""
    if hooks:
        write_hooks(hooks)
    work = os.path.join(os.fsencode(tmp_path), LATIN1_DIR)
    os.mkdir(work)
    out = tmp_path / "tool.out"
    argv = [os.fsdecode(a) for a in tool_writing(out, 5)]
    child = run_wrapagent(*argv, os.fsdecode(LATIN1_ARG), cwd=os.fsdecode(work))
    assert child.finish() == 5, child.output
    assert b"Traceback" not in child.output
    assert out.read_bytes() == work + b"\0" + LATIN1_ARG
    record = only_record()
    assert record["state"] == "finished" and record["exit_code"] == 5
    assert os.fsencode(record["project_root"]) == work
    # The state folder's name is printable UTF-8 (the hash tells projects apart).
    [root] = (Path(os.environ["XDG_STATE_HOME"]) / "wrapagent" / "projects").iterdir()
    root.name.encode("utf-8")
    assert root.name.startswith("caf_-")


@pytest.mark.parametrize("value", ["abc", "1.5", "-3", "\x1b]0;pwned\x07", "9" * 5000])
def test_garbage_depth_is_one_warning_and_the_tool_runs(tmp_path: Path, value: str) -> None:
    out = tmp_path / "depth"
    env = dict(os.environ, WRAPAGENT_DEPTH=value)
    proc = run_piped(["sh", "-c", f'printf %s "$WRAPAGENT_DEPTH" > {out}; exit 7'], cwd=tmp_path, env=env)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 7, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("wrapagent:")]
    assert len(lines) == 1 and "WRAPAGENT_DEPTH" in lines[0], stderr
    assert b"\x1b" not in proc.stderr  # the value is shown escaped
    assert out.read_text() == "1"  # the tool's own environment gets a clean depth
    assert only_record()["depth"] == 0


@pytest.mark.parametrize("value", ["../../etc", "x" * 500, "id\x1b]0;x\x07", os.fsdecode(b"caf\xe9")])
def test_garbage_parent_session_id_is_one_warning_and_the_tool_runs(tmp_path: Path, value: str) -> None:
    env = dict(os.environ, WRAPAGENT_SESSION_ID=value)
    proc = run_piped(["sh", "-c", "exit 7"], cwd=tmp_path, env=env)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 7 and "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("wrapagent:")]
    assert len(lines) == 1 and "WRAPAGENT_SESSION_ID" in lines[0] and len(lines[0]) < 200, stderr
    assert b"\x1b" not in proc.stderr
    assert only_record()["parent_session"] is None


@pytest.mark.parametrize("args", [["doctor", "--json"], ["sessions", "list", "--json"],
                                  ["sessions", "show", "--json", "last"]], ids=lambda a: " ".join(a))
def test_json_outputs_of_a_non_utf8_folder_are_utf8_and_give_the_bytes_back(tmp_path: Path, args: list[str]) -> None:
    work = os.path.join(os.fsencode(tmp_path), LATIN1_DIR)
    os.mkdir(work)
    assert run_piped([str(agent_stand_in(tmp_path / "bin"))], cwd=work).returncode == 0  # `last`: an agent's
    proc = run_piped(args, cwd=work)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    proc.stdout.decode("utf-8")  # strict: no raw Latin-1 byte, no lone surrogate
    doc = records.loads(proc.stdout)
    entry = doc[0] if isinstance(doc, list) else doc
    if isinstance(doc, list):  # each entry carries its own marker
        entry = records.loads(json.dumps(entry))
    key = "cwd" if "cwd" in entry else "project_root"
    assert os.fsencode(entry[key]) == work


from hypothesis import given, settings, strategies as st  # noqa: E402

_TEXTS = st.one_of(st.binary(max_size=40).map(os.fsdecode), st.text(max_size=40),
                   st.lists(st.sampled_from(["\\", "x", "e9", "\\x", "\\\\", "u", "\udce9", "\ud800", "é"]),
                            max_size=12).map("".join))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.dictionaries(st.sampled_from(["cwd", "a/b", "~x", "argv"]),
                       st.one_of(_TEXTS, st.lists(_TEXTS, max_size=4)), max_size=4))
def test_any_bytes_round_trip_through_a_record(record: dict) -> None:
    """Whatever bytes a path or argument holds: UTF-8 on disk, the same strings back."""
    text = records.dumps(record)
    text.encode("utf-8")
    assert records.loads(text.encode("utf-8")) == record
