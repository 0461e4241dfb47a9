#!/usr/bin/env python3
"""Install the sets of coding-agent CLIs the integration tests drive.

    python integration/install_clis.py                # install (or reuse) every set, print the bins
    python integration/install_clis.py --set older    # only one set
    python integration/install_clis.py --force        # reinstall even if the stamp matches
    python integration/install_clis.py --relock       # regenerate the sets' package-lock.json (then commit)

Two sets, each a package.json + package-lock.json installed with `npm ci` into its own
git-ignored folder:

    pinned  integration/package.json        -> integration/.cache/clis/        (the suite's CLIs)
    older   integration/older/package.json  -> integration/.cache/clis-older/  (releases >= 3 months
            older than the pinned ones: the adapters' readiness fallback is tested on them)

A stamp file in each folder holds the sha256 of its package.json + package-lock.json; when
it matches and every binary is present, the install is reused and npm is not run.

Node and npm come from the machine. claude 2.1.330 declares `engines.node >=22`;
on node 20 it still works (npm only warns EBADENGINE), so engine-strict is forced off.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC_FILES = ("package.json", "package-lock.json")


@dataclass(frozen=True)
class CliSet:
    """One separately pinned set of the four CLIs: where its spec lives, where it is installed."""

    name: str
    spec_dir: Path  # holds package.json + package-lock.json
    cache: Path  # npm ci runs here

    @property
    def stamp(self) -> Path:
        return self.cache / ".installed-stamp"

    @property
    def lock_file(self) -> Path:
        return self.cache.parent / f"{self.cache.name}.install.lock"


SETS: dict[str, CliSet] = {
    "pinned": CliSet("pinned", HERE, HERE / ".cache" / "clis"),
    "older": CliSet("older", HERE / "older", HERE / ".cache" / "clis-older"),
}
PINNED = SETS["pinned"]
# the pinned set's paths under their historical names (bench scripts import them)
CACHE = PINNED.cache
STAMP = PINNED.stamp
LOCK_FILE = PINNED.lock_file

#: tool name -> path of its binary relative to the install folder
BIN_NAMES = {
    "codex": "node_modules/.bin/codex",
    "claude": "node_modules/.bin/claude",
    "gemini": "node_modules/.bin/gemini",
    "opencode": "node_modules/.bin/opencode",
}

MIN_NODE_MAJOR = 20


class InstallError(RuntimeError):
    """The CLIs could not be installed; the message says what to do."""


def _set(cli_set: CliSet | str) -> CliSet:
    return SETS[cli_set] if isinstance(cli_set, str) else cli_set


def spec_hash(cli_set: CliSet | str = PINNED) -> str:
    cs = _set(cli_set)
    digest = hashlib.sha256()
    for name in SPEC_FILES:
        digest.update(name.encode() + b"\0")
        digest.update((cs.spec_dir / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def bins(root: Path = CACHE) -> dict[str, Path]:
    return {tool: root / rel for tool, rel in BIN_NAMES.items()}


def bin_dir(root: Path = CACHE) -> Path:
    return root / "node_modules" / ".bin"


def _missing_bins(root: Path = CACHE) -> list[str]:
    missing = []
    for tool, path in bins(root).items():
        # follow the symlink: a dangling .bin link means a broken install
        if not (path.exists() and os.access(path, os.X_OK)):
            missing.append(f"{tool} ({path})")
    return missing


def is_current(cli_set: CliSet | str = PINNED) -> bool:
    cs = _set(cli_set)
    try:
        stamp = cs.stamp.read_text().strip()
    except OSError:
        return False
    return stamp == spec_hash(cs) and not _missing_bins(cs.cache) \
        and (cs.cache / OPENCODE_PLUGIN_DIR).is_dir()  # (made, or tried: an install before it existed redoes)


def _check_node() -> tuple[str, str]:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
        raise InstallError(
            f"{missing} not found on PATH. The integration tests install the real CLIs from npm: "
            f"install Node.js >= {MIN_NODE_MAJOR} with npm >= 10 (e.g. `apt-get install nodejs npm`, "
            "the NodeSource packages, or https://nodejs.org/) and run "
            "`python integration/install_clis.py` again."
        )
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise InstallError(f"`{node} --version` failed: {exc}") from exc
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < MIN_NODE_MAJOR:
        raise InstallError(
            f"node {version or '?'} is too old: the pinned CLIs need Node.js >= {MIN_NODE_MAJOR} "
            "(install a newer Node.js and npm)."
        )
    return node, npm


@contextlib.contextmanager
def _install_lock(cs: CliSet):
    """Serialise installs of one set between concurrent pytest runs / CI steps on one checkout."""
    import fcntl

    cs.lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(cs.lock_file, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_installed(force: bool = False, quiet: bool = False, cli_set: CliSet | str = PINNED) -> dict[str, Path]:
    """Install one set of CLIs unless an install with the same stamp is present.

    Returns {tool: path of its binary}. Raises InstallError with a readable message.
    """
    cs = _set(cli_set)
    cache = cs.cache
    if not force and is_current(cs):
        return bins(cache)
    with _install_lock(cs):
        if not force and is_current(cs):  # someone else installed while we waited
            return bins(cache)
        _node, npm = _check_node()
        cache.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            cs.stamp.unlink()
        for name in SPEC_FILES:
            shutil.copyfile(cs.spec_dir / name, cache / name)
        env = dict(os.environ)
        env.update(
            {
                "npm_config_engine_strict": "false",
                "npm_config_audit": "false",
                "npm_config_fund": "false",
                "npm_config_update_notifier": "false",
                "npm_config_progress": "false",
            }
        )
        cmd = [npm, "ci", "--engine-strict=false", "--no-audit", "--no-fund", "--loglevel=error"]
        if not quiet:
            print(f"install_clis: {cs.name}: {' '.join(cmd)}  (in {cache})", file=sys.stderr, flush=True)
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=cache, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elapsed = time.monotonic() - started
        if proc.returncode != 0:
            raise InstallError(
                f"`npm ci` failed with exit code {proc.returncode} after {elapsed:.0f} s in {cache}:\n"
                + proc.stdout[-6000:]
            )
        missing = _missing_bins(cache)
        if missing:
            raise InstallError(
                "`npm ci` succeeded but these binaries are missing or not executable: "
                + ", ".join(missing)
                + "\n"
                + proc.stdout[-3000:]
            )
        if not quiet:
            print(f"install_clis: {cs.name}: npm ci done in {elapsed:.1f} s", file=sys.stderr, flush=True)
        _make_opencode_plugin(cs, npm, env, quiet)
        cs.stamp.write_text(spec_hash(cs) + "\n")
    return bins(cache)


#: opencode's config folder as it is after its first start: opencode writes a package.json asking for
#: `@opencode-ai/plugin` at its own release into `$XDG_CONFIG_HOME/opencode/` and `npm install`s it
#: (~60 MB, 2,400 files, from the registry) at every start where it is missing. A fresh HOME per test
#: made that install a third of each opencode session's CPU (measured: 15.4 s → 9.5 s CPU a start
#: with it in place); users pay it once. `clienv` copies this folder into each test's HOME.
OPENCODE_PLUGIN_DIR = "opencode-config"


def opencode_plugin_dir(cache: Path) -> Path | None:
    """The installed set's opencode config folder with its plugin (None: not made)."""
    folder = cache / OPENCODE_PLUGIN_DIR
    return folder if (folder / ".complete").is_file() else None


def _make_opencode_plugin(cs: CliSet, npm: str, env: dict[str, str], quiet: bool) -> None:
    """`npm install` opencode's plugin package at the set's opencode release, as opencode does.

    Best effort: without it the tests still run, each opencode start installing it itself.
    """
    import json

    folder = cs.cache / OPENCODE_PLUGIN_DIR
    shutil.rmtree(folder, ignore_errors=True)
    try:
        version = json.loads((cs.cache / "node_modules" / "opencode-ai" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"dependencies": {"@opencode-ai/plugin": version}}, indent=2)
                                         + "\n")
    cmd = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    proc = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not (folder / "node_modules" / "@opencode-ai" / "plugin").is_dir():
        print(f"install_clis: {cs.name}: opencode's plugin package did not install (each opencode start will "
              f"install it itself):\n{proc.stdout[-2000:]}", file=sys.stderr, flush=True)
        return
    (folder / ".complete").write_text(version + "\n")
    if not quiet:
        print(f"install_clis: {cs.name}: @opencode-ai/plugin@{version} installed for opencode's config",
              file=sys.stderr, flush=True)


def _platform_stub(name: str, version: str) -> dict | None:
    """Lock entry for an unresolvable platform package `<pkg>-<os>-<cpu>[-baseline][-musl]`."""
    alias = None
    if version.startswith("npm:"):  # `"@openai/codex-linux-x64": "npm:@openai/codex@0.140.0-linux-x64"`
        alias, _, version = version[4:].rpartition("@")
    parts = name.rsplit("/", 1)[-1].split("-")
    os_names = {"darwin": "darwin", "linux": "linux", "windows": "win32", "win32": "win32"}
    for i, part in enumerate(parts):
        if part in os_names and i + 1 < len(parts) and parts[i + 1] in ("x64", "arm64"):
            entry = {"version": version, "cpu": [parts[i + 1]], "optional": True, "os": [os_names[part]]}
            if alias:
                entry = {"name": alias, **entry}
            if "musl" in parts[i + 2 :]:
                entry["libc"] = ["musl"]
            return entry
    return None


def relock(cli_set: CliSet | str = PINNED) -> int:
    """Regenerate a set's package-lock.json from its package.json.

    The registry reachable from this project's machines 404s on some platform
    packages that opencode-ai declares as optionalDependencies (only
    opencode-linux-x64[-baseline] exist there). `npm install --package-lock-only`
    then leaves them out of the lock, and `npm ci` refuses the lock as "not in
    sync" ("Missing: opencode-darwin-arm64@ from lock file"). We add an entry for
    each such package with its version, os, cpu (and libc for *-musl) taken from
    its name, without integrity: npm ci skips them on non-matching platforms, and
    an optional dependency that cannot be fetched is not an error.
    """
    import json
    import tempfile

    _node, npm = _check_node()
    with tempfile.TemporaryDirectory(prefix="wrapagent-relock-") as tmp:
        cs = _set(cli_set)
        shutil.copyfile(cs.spec_dir / "package.json", Path(tmp) / "package.json")
        cmd = [npm, "install", "--package-lock-only", "--engine-strict=false", "--no-audit", "--no-fund", "--loglevel=error"]
        proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            print(proc.stdout, file=sys.stderr)
            return proc.returncode
        lock = json.loads((Path(tmp) / "package-lock.json").read_text())
    packages = lock["packages"]
    added = []
    for key, entry in list(packages.items()):
        for name, version in (entry.get("optionalDependencies") or {}).items():
            dep_key = f"node_modules/{name}"
            if dep_key in packages or f"{key}/{dep_key}" in packages:
                continue
            stub = _platform_stub(name, version)
            if stub is None:
                print(f"relock: cannot stub unresolved optional dependency {name}@{version}", file=sys.stderr)
                return 1
            packages[dep_key] = stub
            added.append(f"{name}@{version}")
    lock["packages"] = dict(sorted(packages.items(), key=lambda kv: (kv[0] != "", kv[0])))
    (cs.spec_dir / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n")
    print(f"wrote {cs.spec_dir / 'package-lock.json'}")
    if added:
        print("stub entries for optional packages the registry does not have: " + ", ".join(added))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=[*SETS, "all"], default="all", help="which set of CLIs (default: all)")
    parser.add_argument("--force", action="store_true", help="reinstall even if the stamp matches")
    parser.add_argument("--relock", action="store_true", help="regenerate package-lock.json from package.json")
    args = parser.parse_args(argv)
    chosen = list(SETS.values()) if args.set == "all" else [SETS[args.set]]
    rc = 0
    for cs in chosen:
        if args.relock:
            try:
                rc = relock(cs) or rc
            except InstallError as exc:
                print(f"install_clis: ERROR: {exc}", file=sys.stderr)
                rc = 1
            continue
        reused = not args.force and is_current(cs)
        try:
            paths = ensure_installed(force=args.force, cli_set=cs)
        except InstallError as exc:
            print(f"install_clis: {cs.name}: ERROR: {exc}", file=sys.stderr)
            rc = 1
            continue
        print(f"{cs.name}: {'reused' if reused else 'installed'}: {cs.cache}")
        for tool, path in paths.items():
            print(f"  {tool}: {path}")
        print(f"  bin dir: {bin_dir(cs.cache)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
