"""directory_listing outside git (a shallow walk) and prompt_files (only files inside the project)."""

from __future__ import annotations

from pathlib import Path

from wrapagent.hooks.builtins import run_builtin
from wrapagent.hooks.context import GuardContext


def ctx_for(root: Path) -> GuardContext:
    return GuardContext(project_root=root, cwd=root, tool="codex", session_id="s1")


def test_a_folder_outside_git_is_walked_a_few_levels_without_dot_folders_or_node_modules(tmp_path: Path) -> None:
    for name in ("src/app/main.py", "src/app/deep/er/x.py", "README.md", ".secret/key", "node_modules/m/i.js"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    body = run_builtin("directory_listing", {"depth": 2}, ctx_for(tmp_path))
    assert body.startswith(f"Project files under {tmp_path} (2 levels; dot-directories skipped):")
    assert "README.md" in body and "app/" in body
    assert ".secret" not in body and "node_modules" not in body and "er/" not in body


def test_a_listing_too_long_is_made_shallower_before_it_is_cut(tmp_path: Path) -> None:
    for d in range(5):
        for f in range(10):
            (tmp_path / f"d{d}").mkdir(exist_ok=True)
            (tmp_path / f"d{d}" / f"f{f}.txt").write_text("x")
    body = run_builtin("directory_listing", {"depth": 2, "max_entries": 10}, ctx_for(tmp_path))
    assert "(1 level, reduced from 2 to fit 10 entries;" in body.splitlines()[0]
    assert "f0.txt" not in body


def test_prompt_files_reads_the_named_files_in_order_under_a_header_each(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("be brief\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("tabs\n")
    body = run_builtin("prompt_files", {"files": ["docs/style.md", "missing.md", "AGENTS.md"]}, ctx_for(tmp_path))
    assert body == "== docs/style.md ==\ntabs\n\n== AGENTS.md ==\nbe brief"


def test_prompt_files_never_reads_outside_the_project_or_a_binary(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.txt").write_text("password")
    (project / "link.md").symlink_to(tmp_path / "secret.txt")
    (project / "blob.md").write_bytes(b"\0\1\2")
    body = run_builtin("prompt_files", {"files": ["link.md", "blob.md"]}, ctx_for(project))
    assert body == ""


def test_prompt_files_keeps_to_its_cap(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text("line\n" * 2000)
    body = run_builtin("prompt_files", {"files": ["big.md"], "max_bytes": 300}, ctx_for(tmp_path))
    assert len(body.encode()) <= 300 and body.endswith("(truncated)")
