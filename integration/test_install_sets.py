"""Self-tests of install_clis.py's sets (no npm, no CLI, instant): each set has its own stamp,
its own folder and its own spec, and a relocked lock stubs aliased platform packages right."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import install_clis as ic
from .cliversions import PACKAGES, installed_version, version_tuple


def _fake_set(tmp_path, name: str, deps: dict) -> ic.CliSet:
    spec = tmp_path / f"spec-{name}"
    spec.mkdir()
    (spec / "package.json").write_text(json.dumps({"dependencies": deps}))
    (spec / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "deps": deps}))
    cache = tmp_path / "cache" / name
    bin_dir = cache / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    for tool in ic.BIN_NAMES:
        exe = bin_dir / tool
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    (cache / ic.OPENCODE_PLUGIN_DIR).mkdir()
    return ic.CliSet(name, spec, cache)


def test_sets_are_installed_and_stamped_separately(tmp_path):
    a = _fake_set(tmp_path, "a", {"x": "1.0.0"})
    b = _fake_set(tmp_path, "b", {"x": "0.9.0"})
    assert ic.spec_hash(a) != ic.spec_hash(b)
    a.stamp.write_text(ic.spec_hash(a) + "\n")
    assert ic.is_current(a) and not ic.is_current(b)
    b.stamp.write_text(ic.spec_hash(a) + "\n")        # another set's stamp does not count
    assert not ic.is_current(b)
    (a.spec_dir / "package-lock.json").write_text("{}")  # a changed lock invalidates only its set
    assert not ic.is_current(a)
    assert a.lock_file != b.lock_file and a.lock_file.parent == b.lock_file.parent


def test_the_two_sets_of_the_suite_differ():
    pinned, older = ic.SETS["pinned"], ic.SETS["older"]
    assert pinned.cache != older.cache and pinned.spec_dir != older.spec_dir
    assert ic.CACHE == pinned.cache and ic.STAMP == pinned.stamp
    p = json.loads((pinned.spec_dir / "package.json").read_text())["dependencies"]
    o = json.loads((older.spec_dir / "package.json").read_text())["dependencies"]
    assert set(p) == set(o) == set(PACKAGES.values())
    for pkg in p:
        assert version_tuple(o[pkg]) < version_tuple(p[pkg]), pkg


def test_platform_stub_of_an_aliased_package():
    """codex declares `"@openai/codex-darwin-arm64": "npm:@openai/codex@0.140.0-darwin-arm64"`."""
    stub = ic._platform_stub("@openai/codex-darwin-arm64", "npm:@openai/codex@0.140.0-darwin-arm64")
    assert stub == {"name": "@openai/codex", "version": "0.140.0-darwin-arm64", "cpu": ["arm64"],
                    "optional": True, "os": ["darwin"]}
    plain = ic._platform_stub("opencode-linux-arm64-musl", "1.15.4")
    assert plain == {"version": "1.15.4", "cpu": ["arm64"], "optional": True, "os": ["linux"], "libc": ["musl"]}


def test_installed_version_reads_the_package(tmp_path):
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    pkg = tmp_path / "node_modules" / "@openai" / "codex"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.140.0"}))
    assert installed_version(bin_dir, "codex") == "0.140.0"
    assert installed_version(bin_dir, "claude") == ""
    assert version_tuple("0.140.0") < (0, 150) <= version_tuple("0.169.0")
    assert version_tuple("1.18.33-beta.1") == (1, 18, 33)


def test_an_install_from_before_opencodes_plugin_folder_is_redone(tmp_path):
    a = _fake_set(tmp_path, "a", {"x": "1.0.0"})
    a.stamp.write_text(ic.spec_hash(a) + "\n")
    assert ic.is_current(a)
    (a.cache / ic.OPENCODE_PLUGIN_DIR).rmdir()
    assert not ic.is_current(a)
    assert ic.opencode_plugin_dir(a.cache) is None  # (a folder without `.complete` is not used either)


def opencode_env_over(tmp_path, made_version: str = "1.0.0"):
    """A CliEnv (only what the plugin copy needs) over a fake installed set with a plugin folder."""
    from .clienv import CliEnv

    cache = tmp_path / "cache"
    made = cache / ic.OPENCODE_PLUGIN_DIR
    (made / "node_modules" / "@opencode-ai" / "plugin").mkdir(parents=True)
    (made / "node_modules" / "@opencode-ai" / "plugin" / "index.js").write_text("export {}\n")
    (made / "package.json").write_text('{"dependencies": {"@opencode-ai/plugin": "%s"}}' % made_version)
    (made / ".complete").write_text(made_version + "\n")
    old = (made / ".complete").stat().st_mtime - 60  # installed a minute before the marker was written
    for path in made.rglob("*"):
        if path.name != ".complete":
            os.utime(path, (old, old))
    env = CliEnv.__new__(CliEnv)
    env.tool = "opencode"
    env.bin_dir = cache / "node_modules" / ".bin"
    env.env = {"XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    return env, made, tmp_path / "home" / ".config" / "opencode"


def test_each_opencode_home_gets_its_own_plugin_folder(tmp_path):
    """What `install_clis` made is in each HOME: its top-level files copied (an `npm install` there
    rewrites them), the package files hard links (no 64 MB copy per test), the marker left out."""
    env, made, copied = opencode_env_over(tmp_path)
    env._copy_opencode_plugin()
    script = Path("node_modules") / "@opencode-ai" / "plugin" / "index.js"
    assert (copied / script).read_text() == "export {}\n" and not (copied / ".complete").exists()
    assert (copied / "package.json").stat().st_ino != (made / "package.json").stat().st_ino
    assert (copied / script).stat().st_ino == (made / script).stat().st_ino
    (copied / ".gitignore").write_text("node_modules\n")  # what opencode adds: the test's own
    assert env.opencode_plugin_changed() == [] and not (made / ".gitignore").exists()


def test_a_plugin_file_changed_in_place_is_reported_and_the_plugin_made_again(tmp_path):
    env, made, copied = opencode_env_over(tmp_path)
    env._copy_opencode_plugin()
    script = Path("node_modules") / "@opencode-ai" / "plugin" / "index.js"
    with open(copied / script, "a") as f:  # written in place: the shared file changes with it
        f.write("// changed\n")
    assert env.opencode_plugin_changed() == [str(script)]
    assert ic.opencode_plugin_dir(made.parent) is None  # no `.complete`: the next run installs it again