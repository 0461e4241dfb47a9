"""Parsing a config file cannot stop or stall the start (beyond the read).

A config file under the 1 MiB read limit can still be built to break the
TOML parser: nesting that makes tomllib recurse until `RecursionError` (a
traceback, the tool never ran), or a key or table header of thousands of
dotted parts, for which tomllib's time grows with the square of the parts
(a 1 MiB file keeps every start waiting for hours). A cloned repository's
untrusted `.wrapagent/hooks.toml` is parsed on every start (to report its
problems), so each shape must give one error line naming the file, and the
tool runs with its exit code. The subprocess time limit is a hang guard
(the condition checked is that the tool ran), not a measured duration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

NEAR_LIMIT = 1000 * 1000  # bytes: under the 1 MiB a config file may have


def deep_arrays() -> str:
    return "a = " + "[" * 5000 + "]" * 5000 + "\n"


def deep_inline_tables() -> str:
    return "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n"


def long_dotted_key() -> str:
    parts = (NEAR_LIMIT - 10) // 2
    return "a" + ".a" * parts + " = 1\n"


def long_header_then_keys() -> str:
    header = "[" + ".".join(["a"] * 150_000) + "]\n"
    keys = "".join(f"k{i} = 1\n" for i in range((NEAR_LIMIT - len(header)) // 12))
    return header + keys


SHAPES = {"deep-arrays": deep_arrays, "deep-inline-tables": deep_inline_tables,
          "long-dotted-key": long_dotted_key, "long-header-then-keys": long_header_then_keys}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.mark.parametrize("layer", ["project", "global-hooks"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_toml_shape_cannot_stop_the_tool(project, layer, shape):
    if layer == "project":
        path = project / ".wrapagent" / "hooks.toml"
    else:
        path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SHAPES[shape]())
    assert path.stat().st_size <= NEAR_LIMIT + 100
    try:
        proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo tool ran; exit 7"],
                              cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"wrapagent was still parsing {shape} after 60 s: the tool never started")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout == "tool ran\n", proc.stderr[-3000:]
    assert proc.returncode == 7
    said = [line for line in proc.stderr.splitlines() if str(path) in line and "invalid TOML" in line]
    assert len(said) == 1, proc.stderr[-3000:]


def test_ordinary_dotted_keys_still_parse(project):
    """The limit is far above any real file: 32 parts in a key and a header are still TOML."""
    from wrapagent.hooks.config_loader import load_config

    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True)
    deep = ".".join(f"p{i}" for i in range(31))
    path.write_text(f'[pre_run]\ncommand = "echo a.b.c.d"\n[x.{deep}]\nk = 1\n')
    config = load_config(project, env=os.environ)
    assert not config.has_errors
    assert config.lifecycle["pre_run"].command == "echo a.b.c.d"


def many_unknown_keys() -> str:
    return "".join(f"k{i} = 1\n" for i in range(60_000))


def many_empty_guards() -> str:
    return "[[prompt_guard]]\n" * 60_000


@pytest.mark.parametrize("make", [many_unknown_keys, many_empty_guards], ids=lambda make: make.__name__)
def test_a_file_of_many_problems_cannot_stall_the_start(project, make):
    """Tens of thousands of problems in a cloned repository's untrusted file: the tool
    runs, and stderr names the file a bounded number of times (the rest counted in one line)."""
    path = project / ".wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True)
    path.write_text(make())
    assert path.stat().st_size <= 1024 * 1024
    try:
        proc = subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "echo tool ran; exit 7"],
                              cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"wrapagent was still validating {make.__name__} after 60 s: the tool never started")
    assert proc.stdout == "tool ran\n" and proc.returncode == 7, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if str(path) in line]
    assert 2 <= len(said) <= 60, f"{len(said)} lines name the file"
    assert any("more, not listed" in line for line in said), proc.stderr[-3000:]
    assert "skipping untrusted project hooks" in said[-1]


def test_problems_past_the_cap_still_count(project):
    """Only listed problems are capped: an error past the cap still makes the file unusable."""
    from wrapagent.hooks.config_loader import load_config

    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True)
    unknown = "".join(f"k{i} = 1\n" for i in range(200))
    path.write_text(unknown + '[pre_run]\ncommand = 5\n')
    config = load_config(project, env=os.environ)
    assert config.has_errors and "pre_run" not in config.lifecycle
    assert not config.layers[0].used
    assert any(p.severity == "error" and "1 error and" in p.message for p in config.layers[0].problems)
