"""The project file built-ins: directory_listing (git's files, or a shallow walk) and prompt_files
(only files inside the project)."""

from __future__ import annotations

from pathlib import Path

from builtin_repos import commit, isolated_git, make_repo, run  # noqa: F401 - isolated_git: autouse
from wrapagent.hooks.builtins import TRUNCATED


# --------------------------------------------------------------------------- directory_listing


def test_directory_listing_in_git_ignores_ignored(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("src/pkg/a.py", "src/pkg/b.py", "src/pkg/deep/c.py", "src/main.py", "docs/x.md"):
        commit(repo, name, "x\n", f"add {name}")
    (repo / ".gitignore").write_text("node_modules/\n*.log\n")
    (repo / "node_modules" / "lib").mkdir(parents=True)
    (repo / "node_modules" / "lib" / "i.js").write_text("")
    (repo / "debug.log").write_text("")
    (repo / "new.txt").write_text("")
    assert run("directory_listing", repo) == "\n".join(
        [
            f"Project files under {repo} (2 levels; files tracked or not ignored by git):",
            "docs/",
            "  x.md",
            "src/",
            "  pkg/ (3 files)",
            "  main.py",
            ".gitignore",
            "README.md",
            "new.txt",
        ]
    )


def test_directory_listing_reduces_depth_then_truncates(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for d in range(3):
        for f in range(5):
            (repo / f"d{d}").mkdir(exist_ok=True)
            (repo / f"d{d}" / f"f{f}.txt").write_text("")
    out = run("directory_listing", repo, max_entries=6).splitlines()
    assert out[0] == f"Project files under {repo} (1 level, reduced from 2 to fit 6 entries; files tracked or not ignored by git):"
    assert out[1:] == ["d0/ (5 files)", "d1/ (5 files)", "d2/ (5 files)", "README.md"]
    out = run("directory_listing", repo, max_entries=2, depth=1).splitlines()
    assert out[1:] == ["d0/ (5 files)", "d1/ (5 files)", "… (truncated: 2 more entries)"]


def test_directory_listing_outside_git_walks_and_skips_dot_dirs(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for name in ("a/b/c/deep.txt", "a/top.txt", ".cache/x", "node_modules/m/i.js", "z.txt", ".env"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "emptydir").mkdir()
    assert run("directory_listing", root) == "\n".join(
        [
            f"Project files under {root} (2 levels; dot-directories skipped):",
            "a/",
            "  b/",
            "  top.txt",
            "emptydir/",
            ".env",
            "z.txt",
        ]
    )


def test_directory_listing_non_ascii(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "données").mkdir()
    (repo / "données" / "été.csv").write_text("")
    assert "données/\n  été.csv" in run("directory_listing", repo)


# --------------------------------------------------------------------------- prompt_files


def test_prompt_files_headers_and_missing_skipped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "STYLE.md").write_text("Be brief.\n\n")
    out = run("prompt_files", tmp_path, files=["AGENTS.md", "MISSING.md", "docs/STYLE.md"])
    assert out == "== AGENTS.md ==\nUse tabs.\n\n== docs/STYLE.md ==\nBe brief."


def test_prompt_files_nothing_found(tmp_path: Path) -> None:
    assert run("prompt_files", tmp_path, files=["AGENTS.md"]) == ""


def test_prompt_files_refuses_symlink_escaping_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret\n")
    (root / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    (root / "inside.md").write_text("ok\n")
    (root / "LINK.md").symlink_to(root / "inside.md")
    out = run("prompt_files", root, files=["AGENTS.md", "LINK.md"])
    assert out == "== LINK.md ==\nok"


def test_prompt_files_skips_binary_and_directories(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"\x00\x01")
    (tmp_path / "dir.md").mkdir()
    assert run("prompt_files", tmp_path, files=["bin.md", "dir.md"]) == ""


def test_prompt_files_capped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("".join(f"rule {i}\n" for i in range(1000)))
    (tmp_path / "B.md").write_text("never reached\n")
    out = run("prompt_files", tmp_path, files=["AGENTS.md", "B.md"], max_bytes=100)
    assert len(out.encode()) <= 100
    assert out.startswith("== AGENTS.md ==\nrule 0\nrule 1\n")
    assert out.endswith("\n" + TRUNCATED)
    assert "B.md" not in out
