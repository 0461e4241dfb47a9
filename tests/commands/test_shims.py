"""shims: generated from one template, idempotent, never looping; init aliases; PATH advice."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wrapagent.commands import shims
from wrapagent.errors import WrapagentError
from wrapagent.session.resolve import DEPTH_ENV, GUARD_ENV

REPO = Path(__file__).resolve().parents[2]
FAKE_CMD = ["/opt/wrapagent/bin/wrapagent"]

# Stands in for the lead's `wrapagent --shim-dir DIR TOOL ARGS…` until __main__ handles it:
# resolve the real tool behind the shim dir and exec it, as wrapagent does with WRAPAGENT_DISABLE=1.
FAKE_WRAPAGENT = """\
import os, sys
from wrapagent.errors import WrapagentError
from wrapagent.session.resolve import child_env_additions, find_real_tool
assert sys.argv[1] == "--shim-dir"
shim_dir, tool, rest = sys.argv[2], sys.argv[3], sys.argv[4:]
try:
    real = find_real_tool(tool, extra_skip_dirs=[shim_dir])
except WrapagentError as exc:
    print(f"wrapagent: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
os.execve(real, [tool, *rest], {**os.environ, **child_env_additions([shim_dir])})
"""

REAL_CODEX = '#!/bin/sh\necho "REAL-CODEX $* depth=${WRAPAGENT_DEPTH:-unset}"\n'


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WRAPAGENT_")}
    clean.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"), PATH="/usr/bin:/bin")
    return clean


def make_exe(path: Path, body: str, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(mode)
    return path


def with_path(env: dict[str, str], *dirs: Path | str) -> dict[str, str]:
    return {**env, "PATH": os.pathsep.join([*(str(d) for d in dirs), "/usr/bin", "/bin"])}


def test_package_template_equals_repository_template():
    template = REPO / "shims" / "shim.sh.in"
    if not template.exists():
        pytest.skip("not running from a checkout")
    assert template.read_bytes() == shims.SHIM_TEMPLATE.encode("utf-8")


def test_render_quotes_paths_and_is_valid_sh(tmp_path):
    folder = tmp_path / "a dir $HOME @TOOL@ 'q'"
    text = shims.render_shim("codex", folder, ["/opt/my python/bin/python3", "-m", "wrapagent"])
    assert text.splitlines()[1] == "# wrapagent-shim v1: codex"
    assert "@TOOL@ '\"'\"'q'\"'\"''" in text  # the placeholder inside the path stayed literal
    assert text.rstrip().endswith(
        "exec '/opt/my python/bin/python3' -m wrapagent --shim-dir "
        + shims.shlex.quote(str(folder)) + ' codex "$@"'
    )
    shim = make_exe(tmp_path / "codex", text)
    subprocess.run(["sh", "-n", str(shim)], check=True)


@pytest.mark.parametrize("bad", ["", "-x", "a/b", "a b", "wrapagent", "x;y", "a\nb"])
def test_invalid_tool_names(bad):
    with pytest.raises(WrapagentError):
        shims.validate_tool_name(bad)


def test_wrapagent_command_is_absolute():
    command = shims.wrapagent_command()
    assert os.path.isabs(command[0])
    assert command == [str(Path(sys.executable).parent / "wrapagent")] or command[1] == "-I"


def test_install_is_idempotent_and_rewrites_changed_shims(env, tmp_path):
    old = os.umask(0o077)
    try:
        report = shims.install_shims(env=env, command=FAKE_CMD)
    finally:
        os.umask(old)
    folder = tmp_path / "data" / "wrapagent" / "shims"
    assert report.shim_dir == folder
    assert report.created == list(shims.DEFAULT_TOOLS) and not report.updated and not report.unchanged
    for tool in shims.DEFAULT_TOOLS:
        assert (folder / tool).stat().st_mode & 0o777 == 0o755
        assert (folder / tool).read_text() == shims.render_shim(tool, folder, FAKE_CMD)

    again = shims.install_shims(env=env, command=FAKE_CMD)
    assert again.unchanged == list(shims.DEFAULT_TOOLS) and not again.created and not again.updated

    (folder / "codex").write_text((folder / "codex").read_text().replace("v1", "v0"))
    (folder / "claude").chmod(0o700)
    fixed = shims.install_shims(env=env, command=FAKE_CMD)
    assert fixed.updated == ["codex", "claude"]
    moved = shims.install_shims(["codex"], env=env, command=["/elsewhere/wrapagent"])
    assert moved.updated == ["codex"] and "/elsewhere/wrapagent" in (folder / "codex").read_text()
    assert not list(folder.glob(".*"))  # no temp files left behind


def test_install_never_overwrites_a_foreign_file(env, tmp_path):
    folder = tmp_path / "shims"
    make_exe(folder / "codex", "#!/bin/sh\necho mine\n")
    report = shims.install_shims(["codex", "claude"], shim_dir=folder, env=env, command=FAKE_CMD)
    assert report.conflicts == ["codex"] and report.created == ["claude"]
    assert (folder / "codex").read_text() == "#!/bin/sh\necho mine\n"


def test_uninstall_removes_only_shims(env, tmp_path):
    folder = tmp_path / "shims"
    shims.install_shims(shim_dir=folder, env=env, command=FAKE_CMD)
    shims.install_shims(["aider"], shim_dir=folder, env=env, command=FAKE_CMD)
    make_exe(folder / "mine", "#!/bin/sh\n")
    report = shims.uninstall_shims(["codex", "mine", "nope"], shim_dir=folder, env=env)
    assert (report.removed, report.foreign, report.missing) == (["codex"], ["mine"], ["nope"])
    report = shims.uninstall_shims(shim_dir=folder, env=env)
    assert sorted(report.removed) == sorted(["aider", "claude", "gemini", "opencode"])
    assert [p.name for p in folder.iterdir()] == ["mine"]
    (folder / "mine").unlink()
    shims.install_shims(["codex"], shim_dir=folder, env=env, command=FAKE_CMD)
    shims.uninstall_shims(shim_dir=folder, env=env)
    assert not folder.exists()  # an emptied folder goes too


def status_of(env: dict[str, str], folder: Path, tool: str = "codex") -> shims.ShimStatus:
    [status] = shims.shims_status([tool], shim_dir=folder, env=env, command=FAKE_CMD)
    return status


def test_status(env, tmp_path):
    folder, real_dir = tmp_path / "shims", tmp_path / "real"
    real = make_exe(real_dir / "codex", REAL_CODEX)
    assert not status_of(with_path(env, folder, real_dir), folder).installed

    shims.install_shims(["codex"], shim_dir=folder, env=env, command=FAKE_CMD)
    first = status_of(with_path(env, folder, real_dir), folder)
    assert (first.installed, first.current, first.real, first.effective, first.note) == (True, True, real, True, "")

    last = status_of(with_path(env, real_dir, folder), folder)
    assert not last.effective and last.note == f"shadowed by {real} (earlier on PATH)"

    absent = status_of(with_path(env, real_dir), folder)
    assert not absent.effective and "shims folder not on PATH" in absent.note

    real.unlink()
    missing = status_of(with_path(env, folder), folder)
    assert missing.effective and missing.real is None and "real tool not installed" in missing.note

    [outdated] = shims.shims_status(["codex"], shim_dir=folder, env=env, command=["/other/wrapagent"])
    assert not outdated.current and "outdated" in outdated.note

    listed = [s.tool for s in shims.shims_status(shim_dir=folder, env=env, command=FAKE_CMD)]
    assert listed[:4] == list(shims.DEFAULT_TOOLS)


@pytest.mark.parametrize("name", ["plain", "with space", 'quo"te $x `y` \\z'])
def test_path_line_sh(tmp_path, name):
    folder = tmp_path / name
    line = shims.path_line(folder, "bash")
    assert "\n" not in line
    out = subprocess.run(["sh", "-c", f'{line}\nprintf %s "$PATH"'], env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    assert out == f"{folder}:/usr/bin:/bin"
    assert shims.path_line(folder, "zsh") == line


def test_path_line_fish_and_plain_forms():
    assert shims.path_line("/h/.local/share/wrapagent/shims", "bash") == 'export PATH="/h/.local/share/wrapagent/shims:$PATH"'
    assert shims.path_line("/h/it's", "fish") == "set -gx PATH '/h/it\\'s' $PATH"
    with pytest.raises(WrapagentError):
        shims.path_line("/x", "csh")


def test_init_script_bash_defines_aliases():
    script = shims.init_script("bash")
    assert "alias codex='wrapagent codex'" in script and "wrapagent shims install" in script
    out = subprocess.run(["bash", "-c", script + "\nalias codex claude gemini opencode"], capture_output=True,
                         text=True, check=True).stdout
    assert "alias codex='wrapagent codex'" in out and "alias opencode='wrapagent opencode'" in out


def test_init_script_fish_and_zsh():
    assert "alias codex 'wrapagent codex'" in shims.init_script("fish")
    assert "wrapagent init fish | source" in shims.init_script("fish")
    assert 'eval "$(wrapagent init zsh)"' in shims.init_script("zsh")
    with pytest.raises(WrapagentError):
        shims.init_script("powershell")


def test_cmd_init_and_cmd_shims(env, tmp_path):
    out = io.StringIO()
    assert shims.cmd_init("zsh", out) == 0 and "alias claude='wrapagent claude'" in out.getvalue()

    folder, real_dir = tmp_path / "shims", tmp_path / "real"
    make_exe(real_dir / "codex", REAL_CODEX)
    run_env = {**with_path(env, real_dir), "SHELL": "/usr/bin/fish"}
    out = io.StringIO()
    assert shims.cmd_shims("install", ["codex"], str(folder), out, env=run_env) == 0
    text = out.getvalue()
    assert f"shims in {folder}: created codex\n" in text and "updated" not in text
    assert f"set -gx PATH '{folder}' $PATH" in text  # not on PATH yet: the advice names the fish line

    out = io.StringIO()
    assert shims.cmd_shims("install", ["codex"], str(folder), out, env=with_path(env, folder, real_dir)) == 0
    assert "all up to date (codex)" in out.getvalue() and "PATH" not in out.getvalue().split("\n", 1)[1]

    out = io.StringIO()
    assert shims.cmd_shims("status", [], str(folder), out, env=with_path(env, folder, real_dir)) == 0
    assert f"shims folder: {folder} (PATH entry 1)" in out.getvalue()
    assert f"codex      active    real: {real_dir / 'codex'}" in out.getvalue()

    make_exe(folder / "claude", "#!/bin/sh\n")
    assert shims.cmd_shims("install", ["claude"], str(folder), io.StringIO(), env=env) == 1

    out = io.StringIO()
    assert shims.cmd_shims("uninstall", [], str(folder), out, env=env) == 0
    assert "removed codex" in out.getvalue()
    with pytest.raises(WrapagentError) as info:
        shims.cmd_shims("frobnicate", [], str(folder), io.StringIO(), env=env)
    assert info.value.exit_code == 2


def run_shim(shim: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(shim), *args], env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture
def fake_wrapagent(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_wrapagent.py"
    script.write_text(FAKE_WRAPAGENT)
    return [sys.executable, str(script)]


def test_shim_runs_the_real_tool_without_looping(env, tmp_path, fake_wrapagent):
    folder, real_dir = tmp_path / "shims", tmp_path / "real"
    make_exe(real_dir / "codex", REAL_CODEX)
    shims.install_shims(["codex"], shim_dir=folder, env=env, command=fake_wrapagent)
    result = run_shim(folder / "codex", with_path(env, folder, real_dir), "exec", "a b")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "REAL-CODEX exec a b depth=1\n"


def test_shim_for_missing_tool_fails_in_one_line(env, tmp_path, fake_wrapagent):
    folder, elsewhere = tmp_path / "shims", tmp_path / "elsewhere"
    shims.install_shims(["codex"], shim_dir=folder, env=env, command=fake_wrapagent)
    elsewhere.mkdir()
    (elsewhere / "codex").symlink_to(folder / "codex")  # a copy of the shim later on PATH must not loop
    result = run_shim(folder / "codex", with_path(env, folder, elsewhere))
    assert result.returncode == 127
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("wrapagent: codex: command not found (searched PATH: ")


def _shims_of_a_removed_wrapagent(env: dict[str, str], tmp_path: Path) -> tuple[Path, Path]:
    """Shims installed by a wrapagent that was then removed (pip uninstall, a deleted virtualenv)."""
    folder, launcher = tmp_path / "shims", make_exe(tmp_path / "venv" / "bin" / "wrapagent", "#!/bin/sh\nexit 99\n")
    shims.install_shims(["codex"], shim_dir=folder, env=env, command=[str(launcher)])
    shutil.rmtree(tmp_path / "venv")
    return folder, launcher


def _gone_warning(launcher: Path, folder: Path) -> str:
    return (f"wrapagent shim: {launcher} is missing, so codex runs without wrapagent; "
            f"reinstall wrapagent or remove {folder} from PATH\n")


def test_shim_whose_wrapagent_is_gone_runs_the_real_tool_with_one_warning(env, tmp_path):
    folder, launcher = _shims_of_a_removed_wrapagent(env, tmp_path)
    elsewhere, real_dir = tmp_path / "elsewhere", tmp_path / "real dir"
    elsewhere.mkdir()
    (elsewhere / "codex").symlink_to(folder / "codex")  # another copy of the shim on PATH is no real tool
    make_exe(elsewhere / "other-shim" / "codex", (folder / "codex").read_text())
    make_exe(real_dir / "codex", '#!/bin/sh\necho "REAL-CODEX $*"\nexit 42\n')
    run_env = with_path(env, folder, elsewhere, elsewhere / "other-shim", "relative", real_dir)
    result = run_shim(folder / "codex", run_env, "exec", "a b", "*")
    assert result.returncode == 42  # the tool's own exit code
    assert result.stdout == "REAL-CODEX exec a b *\n"
    assert result.stderr == _gone_warning(launcher, folder)


def test_shim_whose_wrapagent_is_gone_and_no_real_tool(env, tmp_path):
    folder, launcher = _shims_of_a_removed_wrapagent(env, tmp_path)
    run_env = with_path(env, folder)
    result = run_shim(folder / "codex", run_env)
    assert result.returncode == 127
    assert result.stderr == _gone_warning(launcher, folder) + (
        f"wrapagent shim: codex: command not found (searched PATH: {run_env['PATH']})\n")


def test_shim_through_the_real_wrapagent_disabled(env, tmp_path):
    """End to end with the real CLI: `--shim-dir` is honoured and WRAPAGENT_DISABLE=1 execs the tool."""
    folder, real_dir = tmp_path / "shims", tmp_path / "real"
    make_exe(real_dir / "codex", REAL_CODEX)
    shims.install_shims(["codex"], shim_dir=folder, env=env)
    run_env = {**with_path(env, folder, real_dir), "WRAPAGENT_DISABLE": "1"}
    result = run_shim(folder / "codex", run_env, "--version", "x y")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("REAL-CODEX --version x y depth=")


def test_guard_env_names_are_stable():
    """The lead's runner and nested wrapagents agree on these names."""
    assert (GUARD_ENV, DEPTH_ENV) == ("WRAPAGENT_ACTIVE_SHIMS", "WRAPAGENT_DEPTH")
    assert shutil.which("sh")
