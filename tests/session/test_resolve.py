"""resolve.find_real_tool: the real binary, never wrapagent or its shims (pyenv `which.bats` cases)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrapagent import paths
from wrapagent.session import resolve
from wrapagent.errors import ToolNotExecutable, ToolNotFound, WrapagentError
from wrapagent.session.resolve import find_real_tool
from wrapagent.commands.shims import render_shim

WRAPAGENT_CMD = ["/opt/wrapagent/bin/wrapagent"]


def make_exe(folder: Path, name: str, body: str = "#!/bin/sh\necho real\n", mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body)
    path.chmod(mode)
    return path


def make_shim(folder: Path, tool: str) -> Path:
    return make_exe(folder, tool, render_shim(tool, folder, WRAPAGENT_CMD))


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        "tmp": tmp_path,
        "home": home,
        "shims": tmp_path / "shims",
        "real": tmp_path / "real",
        "other": tmp_path / "other",
    }


def env_for(tree: dict[str, Path], *dirs: str | Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(tree["home"]),
        "XDG_DATA_HOME": str(tree["tmp"] / "data"),
        "PATH": os.pathsep.join(str(d) for d in dirs),
        **extra,
    }


def test_shims_first_on_path(tree):
    make_shim(tree["shims"], "codex")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["shims"], tree["real"])
    assert find_real_tool("codex", env=env, extra_skip_dirs=[tree["shims"]]) == real


def test_shims_last_on_path(tree):
    make_shim(tree["shims"], "codex")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["real"], tree["shims"])
    assert find_real_tool("codex", env=env, extra_skip_dirs=[tree["shims"]]) == real


def test_shim_skipped_by_marker_without_being_told_the_dir(tree):
    make_shim(tree["shims"], "codex")
    real = make_exe(tree["real"], "codex")
    assert find_real_tool("codex", env=env_for(tree, tree["shims"], tree["real"])) == real


def test_default_shim_dir_skipped_even_without_marker(tree):
    default = tree["tmp"] / "data" / "wrapagent" / "shims"
    make_exe(default, "codex", "#!/bin/sh\necho not-a-generated-shim\n")
    real = make_exe(tree["real"], "codex")
    assert find_real_tool("codex", env=env_for(tree, default, tree["real"])) == real


def test_guard_env_dirs_skipped(tree):
    make_exe(tree["other"], "codex", "#!/bin/sh\necho foreign wrapper\n")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["other"], tree["real"], **{resolve.GUARD_ENV: str(tree["other"])})
    assert find_real_tool("codex", env=env) == real


@pytest.mark.parametrize("listed", ["link", "target"])
def test_symlinked_shims_dir(tree, listed):
    make_shim(tree["shims"], "codex")
    link = tree["tmp"] / "linked-shims"
    link.symlink_to(tree["shims"])
    real = make_exe(tree["real"], "codex")
    on_path, told = (link, tree["shims"]) if listed == "link" else (tree["shims"], link)
    # Replace the shim by a plain script so only the folder comparison can skip it.
    make_exe(tree["shims"], "codex", "#!/bin/sh\necho shim-without-marker\n")
    env = env_for(tree, on_path, tree["real"])
    assert find_real_tool("codex", env=env, extra_skip_dirs=[told]) == real


def test_shims_dir_listed_twice(tree):
    make_shim(tree["shims"], "codex")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["shims"], tree["shims"], tree["real"], tree["shims"])
    assert find_real_tool("codex", env=env, extra_skip_dirs=[tree["shims"]]) == real


def test_empty_and_relative_entries_skipped(tree, monkeypatch):
    cwd = tree["tmp"] / "repo"
    make_exe(cwd / "bin", "codex", "#!/bin/sh\necho planted\n")
    make_exe(cwd, "codex", "#!/bin/sh\necho planted\n")
    real = make_exe(tree["real"], "codex")
    monkeypatch.chdir(cwd)
    env = env_for(tree, "", ".", "bin", tree["real"])
    assert find_real_tool("codex", env=env, cwd=cwd) == real


def test_only_relative_entries_is_not_found_and_says_why(tree):
    cwd = tree["tmp"] / "repo"
    make_exe(cwd / "bin", "codex")
    with pytest.raises(ToolNotFound) as info:
        find_real_tool("codex", env=env_for(tree, "bin"), cwd=cwd)
    assert "ignored relative PATH entries: 'bin'" in str(info.value)


def test_shim_for_tool_not_installed(tree):
    make_shim(tree["shims"], "codex")
    tree["real"].mkdir()
    env = env_for(tree, tree["shims"], tree["real"])
    with pytest.raises(ToolNotFound) as info:
        find_real_tool("codex", env=env, extra_skip_dirs=[tree["shims"]])
    message = str(info.value)
    assert info.value.exit_code == 127
    assert "\n" not in message
    assert message.startswith("codex: command not found (searched PATH: ")
    assert env["PATH"] in message
    assert f"skipped wrapagent shims in {tree['shims']}" in message


def test_candidate_symlink_to_a_shim_elsewhere(tree):
    shim = make_shim(tree["shims"], "codex")
    tree["other"].mkdir()
    (tree["other"] / "codex").symlink_to(shim)
    real = make_exe(tree["real"], "codex")
    assert find_real_tool("codex", env=env_for(tree, tree["other"], tree["real"])) == real


def test_candidate_symlink_to_wrapagent_console_script(tree):
    script = make_exe(
        tree["tmp"] / "venv" / "bin",
        "wrapagent",
        "#!/usr/bin/python3\nimport sys\nfrom wrapagent.__main__ import main\nsys.exit(main())\n",
    )
    tree["other"].mkdir()
    (tree["other"] / "codex").symlink_to(script)
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["other"], tree["real"])
    assert find_real_tool("codex", env=env) == real
    tree["real"].joinpath("codex").unlink()
    with pytest.raises(ToolNotFound, match="skipped wrapagent itself at"):
        find_real_tool("codex", env=env)


def test_this_interpreters_wrapagent_is_recognised():
    script = Path(sys.executable).parent / "wrapagent"
    if not script.exists():
        pytest.skip("wrapagent console script not installed next to this interpreter")
    assert resolve.is_wrapagent_entry_point(script)


def test_non_executable_skipped_like_a_shell(tree):
    make_exe(tree["other"], "codex", mode=0o644)
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["other"], tree["real"])
    assert find_real_tool("codex", env=env) == real
    real.unlink()
    with pytest.raises(ToolNotFound, match="not executable: .*other/codex"):
        find_real_tool("codex", env=env)


def test_directory_named_like_the_tool_skipped(tree):
    (tree["other"] / "codex").mkdir(parents=True)
    real = make_exe(tree["real"], "codex")
    assert find_real_tool("codex", env=env_for(tree, tree["other"], tree["real"])) == real


def test_path_unset_uses_default_path(tree):
    env = {"HOME": str(tree["home"])}
    assert find_real_tool("sh", env=env).parent in {Path(p) for p in os.defpath.split(os.pathsep) if p}


def test_explicit_paths(tree):
    real = make_exe(tree["real"], "codex")
    assert find_real_tool(str(real), env=env_for(tree)) == real
    assert find_real_tool("./real/codex", env=env_for(tree), cwd=tree["tmp"]) == real
    plain = make_exe(tree["real"], "plain", mode=0o644)
    with pytest.raises(ToolNotExecutable) as info:
        find_real_tool(str(plain), env=env_for(tree))
    assert info.value.exit_code == 126 and "Permission denied" in str(info.value)
    with pytest.raises(ToolNotExecutable, match="Is a directory"):
        find_real_tool(str(tree["real"]) + "/", env=env_for(tree))
    with pytest.raises(ToolNotFound, match="No such file"):
        find_real_tool(str(tree["real"] / "missing"), env=env_for(tree))


def test_explicit_path_to_a_shim_means_the_tool_behind_it(tree):
    shim = make_shim(tree["shims"], "codex")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["shims"], tree["real"])
    assert find_real_tool(str(shim), env=env) == real


def test_wrapagent_itself_refused(tree):
    with pytest.raises(ToolNotExecutable):
        find_real_tool("wrapagent", env=env_for(tree, tree["real"]))


def test_default_shim_dir_matches_paths_module(tmp_path):
    for env in (
        {"HOME": str(tmp_path)},
        {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")},
        {"HOME": str(tmp_path), "XDG_DATA_HOME": "relative/ignored"},
    ):
        assert resolve.default_shim_dir(env) == paths.data_dir(env) / "shims"


@pytest.mark.parametrize(("value", "depth"), [(None, 0), ("", 0), ("2", 2), ("-3", 0), ("x", 0), ("7", 7)])
def test_nested_depth(value, depth):
    env = {} if value is None else {resolve.DEPTH_ENV: value}
    assert resolve.nested_depth(env) == depth


def test_check_depth():
    assert resolve.check_depth({}) is False
    assert resolve.check_depth({resolve.DEPTH_ENV: str(resolve.MAX_DEPTH - 1)}) is False
    assert resolve.check_depth({resolve.DEPTH_ENV: str(resolve.MAX_DEPTH)}) is True
    with pytest.raises(WrapagentError, match="keeps starting itself"):
        resolve.check_depth({resolve.DEPTH_ENV: str(resolve.RUNAWAY_DEPTH)})


def test_child_env_additions():
    env = {resolve.DEPTH_ENV: "1", resolve.GUARD_ENV: "/a"}
    additions = resolve.child_env_additions(["/b", "/a"], env=env)
    assert additions == {resolve.DEPTH_ENV: "2", resolve.GUARD_ENV: os.pathsep.join(["/a", "/b"])}
    assert resolve.child_env_additions(env={}) == {resolve.DEPTH_ENV: "1"}


def test_import_is_light():
    """resolve runs before every aliased `codex`: no json/hashlib/subprocess/re/shutil."""
    code = (
        "import sys; before = set(sys.modules); import wrapagent.session.resolve; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    new = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert new <= {"wrapagent", "wrapagent.errors", "wrapagent.session", "wrapagent.session.resolve", "stat", "_stat"}


def test_explicit_path_to_a_renamed_link_to_a_shim(tree):
    shim = make_shim(tree["shims"], "codex")
    tree["other"].mkdir()
    (tree["other"] / "cx").symlink_to(shim)
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["shims"], tree["real"])
    assert find_real_tool(str(tree["other"] / "cx"), env=env) == real


def test_relative_skip_dir_is_taken_relative_to_cwd(tree):
    make_exe(tree["shims"], "codex", "#!/bin/sh\necho no-marker\n")
    real = make_exe(tree["real"], "codex")
    env = env_for(tree, tree["shims"], tree["real"])
    assert find_real_tool("codex", env=env, cwd=tree["tmp"], extra_skip_dirs=["shims"]) == real


@given(st.lists(st.sampled_from(["", ".", "..", "a", "b c", "x.y"]), max_size=6),
       st.sampled_from(["", "/", "//", "///"]), st.booleans())
def test_pure_matches_purepath(parts, root, trailing):
    """`_pure` is how exec paths are spelled without pathlib: exactly `str(PurePosixPath(p))`."""
    from pathlib import PurePosixPath

    path = root + "/".join(parts) + ("/" if trailing else "")
    assert resolve._pure(path) == str(PurePosixPath(path))


def test_explicit_relative_path_spelled_as_pathlib_did(tree):
    real = make_exe(tree["real"], "codex")
    found = resolve.find_real_executable(".//real/./codex", env=env_for(tree), cwd=tree["tmp"])
    assert isinstance(found, str) and found == str(real)


def _modules_loaded_by(imports: str, candidates: tuple[str, ...]) -> list[str]:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (f"import sys; sys.path.insert(0, {root!r}); import {imports}; "
            f"print(' '.join(sorted(m for m in {candidates!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout
    return out.split()


def test_bare_launch_path_imports_nothing_heavy_before_the_tool_starts():
    """`wrapagent --no-hooks TOOL` loads launch, resolve and spawn before the tool starts.

    Not `signal` (it imports `enum`), `re`, `struct`, `threading`, `pathlib`…:
    each of them is milliseconds of every aliased start. Nor `__future__` or
    `wrapagent.errors`, needed only to annotate or to fail, nor what the copy
    loop needs only once it runs (`proxy.terminal`, `portable`, `fcntl`, `select`): ~0.3 ms each.
    """
    heavy = ("pathlib", "typing", "dataclasses", "re", "json", "subprocess", "enum", "signal",
             "struct", "threading", "functools", "collections", "select", "__future__", "wrapagent.errors",
             "wrapagent.proxy.terminal", "fcntl", "wrapagent.portable")
    loaded = _modules_loaded_by("wrapagent.__main__, wrapagent.session.launch, "
                                "wrapagent.session.resolve, wrapagent.proxy.spawn", heavy)
    assert loaded == []


def test_copy_loop_imports_no_pathlib():
    """What the loop loads once the tool runs stays light too (the whole bare path)."""
    heavy = ("pathlib", "typing", "dataclasses", "re", "json", "subprocess", "enum", "signal",
             "__future__", "wrapagent.errors")
    assert _modules_loaded_by("wrapagent.__main__, wrapagent.session.launch, wrapagent.proxy.pty_loop",
                              heavy) == []


def test_path_entry_spelling_normalised_as_pathlib_did(tree):
    real = make_exe(tree["real"], "codex")
    env = env_for(tree)
    env["PATH"] = f"{tree['tmp']}/./real/"
    assert resolve.find_real_executable("codex", env=env) == str(real)
