"""The README is one screen: what it is, the Quick start, three next steps, links.

A newcomer reads the top of the README only: the command that installs and
starts the demo and the one that runs the tests, then `config init` (without
it a real session injects nothing), shims or aliases, and where to look at a
session. The reference lives in docs/ pages linked from it; every link there
resolves inside the repository, and nothing points outside it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _sections(text: str, level: str = "##") -> list[tuple[str, str]]:
    parts = re.split(rf"^{level} (.+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_first_section_is_quick_start_with_the_two_commands():
    title, body = _sections(README)[0]
    assert title == "Quick start"
    block = re.search(r"```sh\n(.*?)```", body, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["./install.sh", "./run-tests"]
    # what the demo leaves behind is said next to it
    assert "wrapagent sessions list" in body
    assert "only read" in body and "refs/wrapagent" not in body
    undo = ["wrapagent sessions diff last --turn 1", "wrapagent undo", "wrapagent redo"]
    assert [body.index(c) for c in undo] == sorted(body.index(c) for c in undo)
    assert README.split("\n").index("## Quick start") < 12


def test_ci_runs_the_readme_test_command():
    assert "exec ./run-tests" in (ROOT / ".ci" / "run").read_text()


def test_three_next_steps_in_order():
    steps = dict(_sections(README))["Next steps"]
    numbered = re.findall(r"^(\d)\. ", steps, flags=re.M)
    assert numbered == ["1", "2", "3"]
    wanted = ["wrapagent config init", "wrapagent shims install", "wrapagent init bash",
              "wrapagent sessions show last"]
    positions = [steps.index(s) for s in wanted]
    assert positions == sorted(positions)


def test_readme_is_one_screen_and_links_every_reference_page():
    assert len(README.splitlines()) <= 60
    linked = set(LINK.findall(README))
    for page in ("configuration", "hooks", "sessions", "history", "security", "performance",
                 "troubleshooting", "daily-use", "development"):
        assert f"docs/{page}.md" in linked, page


def test_every_link_resolves_inside_the_repository():
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert "/work/" not in text and "shared/clis" not in text, doc
        for target in LINK.findall(text):
            if target.startswith(("http://", "https://", "#")):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT), (doc.name, target)
            assert path.exists(), (doc.name, target)


def test_anchors_of_links_between_pages_exist():
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if "#" not in target or target.startswith("http"):
                continue
            file, anchor = target.split("#", 1)
            page = (doc.parent / file) if file else doc
            headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, (doc.name, target)


def test_the_history_page_says_where_checkpoints_live_and_how_big_they_grow():
    history = _page("history.md")
    assert "~/.local/state/wrapagent/stores/" in history and "max_file_mb" in history
    assert "How big it grows" in history and "wrapagent redo" in history
    assert "git log --all --exclude" not in README + history  # nothing to hide any more


def test_benchmark_internals_live_in_bench_readme():
    perf = _page("performance.md")
    assert "| throughput ×script |" in perf
    assert "../bench/README.md" in perf
    assert "How start-up is kept short" not in perf
    assert "How start-up is kept short" in (ROOT / "bench" / "README.md").read_text()


def test_tests_and_uninstall_are_documented():
    assert "```sh\n./run-tests\n```" in _page("development.md")
    assert "wrapagent uninstall" in _page("daily-use.md")


def test_every_agent_package_is_named_with_its_npm_command():
    """The README says how to get each real CLI: the packages the integration tests pin."""
    import json

    pinned = json.loads((ROOT / "integration" / "package.json").read_text())["dependencies"]
    steps = dict(_sections(README))["Next steps"]
    table = _page("daily-use.md")
    for package, version in pinned.items():
        assert f"`npm i -g {package}`" in steps, package
        assert re.search(rf"\| `npm i -g {re.escape(package)}` \| {re.escape(version)} \|", table), package
