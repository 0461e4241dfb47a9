"""The package's shape: no import cycles between wrapagent modules, and each layer imports only
what its `__init__` docstring allows (docs/ARCHITECTURE.md).

Imports inside functions count too: lazy imports keep start-up fast, but a
cycle through them is still a cycle a newcomer has to untangle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import wrapagent

PACKAGE_DIR = Path(wrapagent.__file__).parent

ALLOWED = {
    # layer: layers (top-level names under wrapagent) it may import
    # `portable` is the one module of platform-specific calls (macOS vs Linux): every layer may use it.
    # `values` (frozen value classes, a leaf like `errors`) is shared by the adapters and the config.
    # `visible` (text made safe to print, a leaf) is for whatever reaches the user's terminal.
    "proxy": {"proxy", "errors", "portable"},
    "inject": {"inject", "errors", "values"},
    # `gitcmd` (every git call: repository named, location variables dropped) sits beside `portable`,
    # and so does `child_process` (a helper program in its own group, a deadline, a clean kill).
    "hooks": {"hooks", "inject", "errors", "paths", "portable", "values", "gitcmd", "visible", "child_process"},
    # `history` is what is kept after a session (records, checkpoints, undo, transcripts).
    "history": {"history", "hooks", "errors", "paths", "portable", "values", "gitcmd", "visible", "child_process"},
    "session": {"session", "history", "hooks", "inject", "proxy", "errors", "paths", "portable", "values",
                "gitcmd", "visible", "child_process"},
    "commands": {"commands", "session", "history", "hooks", "inject", "proxy", "errors", "paths", "portable", "values",
                 "gitcmd", "visible", "__init__", "child_process"},
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """wrapagent modules that `name` imports anywhere in its body (the module itself, not parents)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_cycle():
    """The check above can fail: a made-up graph with a cycle is reported."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_it_may(layer):
    bad = sorted(f"{mod} -> {dep}" for mod, deps in _graph().items() if _layer(mod) == layer
                 for dep in deps if _layer(dep) not in ALLOWED[layer])
    assert bad == []


def test_every_subpackage_says_its_concern():
    for layer in ALLOWED:
        doc = ast.get_docstring(ast.parse((PACKAGE_DIR / layer / "__init__.py").read_text()))
        assert doc and "import" in doc, f"wrapagent/{layer}/__init__.py must say its concern and what it may import"


# --------------------------------------------------------------------------- git goes through gitcmd

_SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput",
             "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execvp", "execvpe", "execve",
             "execl", "execlp", "spawnv", "spawnvp", "run_bounded", "run_command"}


def _names_git(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value == "git" or node.value.endswith("/git") or node.value.startswith("git "))


def _git_spawns(source: str, filename: str = "<src>") -> list[str]:
    """Places in `source` that start git themselves: an argv literal `["git", …]`, or a
    process-starting call given "git" (`subprocess.run("git status", shell=True)`)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and _names_git(node.elts[0]):
            found.append(f"{filename}:{node.lineno}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _SPAWNERS and any(_names_git(a) for a in (*node.args, *(k.value for k in node.keywords))):
                found.append(f"{filename}:{node.lineno}")
    return sorted(set(found), key=lambda where: int(where.rsplit(":", 1)[1]))


def test_only_gitcmd_starts_git():
    """Every git call names its repository and drops GIT_DIR & co.: only wrapagent/gitcmd.py may start git."""
    found = []
    for name, path in sorted(_modules().items()):
        if name != "wrapagent.gitcmd":
            found += _git_spawns(path.read_text(), str(path.relative_to(PACKAGE_DIR.parent)))
    assert found == []


def test_git_spawn_finder_finds_them():
    src = ('import subprocess, os\n'
           'subprocess.run(["git", "-C", root, "status"])\n'
           'argv = ("git", "commit")\n'
           'os.system("git add .")\n'
           'subprocess.Popen(args=["/usr/bin/git"])\n'
           'x = {"git_status": "git"}\n')
    assert _git_spawns(src) == ["<src>:2", "<src>:3", "<src>:4", "<src>:5"]


def _event_declarations(source: str, names: set[str], filename: str = "<src>") -> list[str]:
    """Places in `source` that declare hook events themselves: a tuple, list, set or dict literal
    with two or more event names, a module-level constant whose value is an event name, or a
    `HookEvent(…)` built outside the registry."""
    found = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        elements = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and elements:
            named = [e for e in elements if isinstance(e, ast.Constant) and e.value in names]
            if len(named) >= 2:
                found.append(f"{filename}:{node.lineno}")
        elif isinstance(node, ast.Call):
            func = node.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "HookEvent":
                found.append(f"{filename}:{node.lineno}")
    for node in tree.body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
                and node.value.value in names):
            found.append(f"{filename}:{node.lineno}")
    return sorted(set(found), key=lambda where: int(where.rsplit(":", 1)[1]))


def test_hook_events_are_declared_only_in_the_registry():
    """Adding an event means one entry in wrapagent/hooks/events.py: no other module keeps a list of them."""
    from wrapagent.hooks import events

    names = set(events.names())
    found = []
    for name, path in sorted(_modules().items()):
        if name != "wrapagent.hooks.events":
            found += _event_declarations(path.read_text(), names, str(path.relative_to(PACKAGE_DIR.parent)))
    assert found == []


def test_event_declaration_finder_finds_them():
    src = ('EVENTS = ("pre_run", "post_run")\n'
           'WAITING = "waiting_for_input"\n'
           'DEFAULTS = {"pre_run": 30, "post_run": 30}\n'
           'e = HookEvent("nap", "when", (), default_timeout=1, review="r")\n'
           'def f(config):\n'
           '    return config.hook_for("pre_run"), ("pre_run", "prompt_guard")\n')
    names = {"pre_run", "post_run", "waiting_for_input"}
    assert _event_declarations(src, names) == ["<src>:1", "<src>:2", "<src>:3", "<src>:4"]


def _group_kills(source: str, filename: str = "<src>") -> list[str]:
    """Places in `source` that signal a process group: `killpg(…)`, or `kill(-pid, …)`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        negative = bool(node.args) and isinstance(node.args[0], ast.UnaryOp) and isinstance(node.args[0].op, ast.USub)
        if name == "killpg" or (name == "kill" and negative):
            found.append(f"{filename}:{node.lineno}")
    return found


def test_only_child_process_and_the_proxy_kill_process_groups():
    """One way to stop a helper program's group (TERM, grace, KILL, reaped): wrapagent/child_process.py.
    The proxy (wrapagent/proxy/) signals the tool's own group, which follows the user's terminal."""
    found = []
    for name, path in sorted(_modules().items()):
        if name == "wrapagent.child_process" or name.startswith("wrapagent.proxy."):
            continue
        found += _group_kills(path.read_text(), str(path.relative_to(PACKAGE_DIR.parent)))
    assert found == []


def test_group_kill_finder_finds_them():
    src = ('import os, signal\n'
           'os.killpg(pid, signal.SIGTERM)\n'
           'os.kill(-pid, signal.SIGKILL)\n'
           'os.kill(pid, signal.SIGKILL)\n'
           'from os import killpg\n'
           'killpg(pgid, 9)\n')
    assert _group_kills(src) == ["<src>:2", "<src>:3", "<src>:6"]


TESTS_DIR = Path(__file__).parent
MIRROR_FLOOR = 0.80
"""The share of modules with a test file named after them, never lower: a maintainer looking for a
module's tests opens tests/<subpackage>/test_<module>.py, and a new module comes with its own."""
_ASPECTS = ("", "_pty", "_properties", "_e2e")
"""A module's tests may be split by how they drive it: `test_turns.py` (a fake clock) and
`test_turns_pty.py` (a real pseudo-terminal) both mirror `session/turns.py`."""


def _mirror_files(module: Path, package_dir: Path, tests_dir: Path) -> list[Path]:
    """Where the tests of `module` live: tests/<subpackage path>/test_<module><aspect>.py."""
    rel = module.relative_to(package_dir)
    return [tests_dir / rel.parent / f"test_{rel.stem}{aspect}.py" for aspect in _ASPECTS]


def _mirrored(package_dir: Path, tests_dir: Path) -> tuple[list[str], list[str]]:
    """(modules with a mirror test file, modules without), as paths relative to the package.

    `__init__.py` files hold a subpackage's docstring and re-exports, `__main__.py` one call;
    they are not counted."""
    have, missing = [], []
    for module in sorted(package_dir.rglob("*.py")):
        if module.name in ("__init__.py", "__main__.py"):
            continue
        rel = str(module.relative_to(package_dir))
        (have if any(p.is_file() for p in _mirror_files(module, package_dir, tests_dir)) else missing).append(rel)
    return have, missing


def test_tests_mirror_the_package():
    have, missing = _mirrored(PACKAGE_DIR, TESTS_DIR)
    ratio = len(have) / (len(have) + len(missing))
    assert ratio >= MIRROR_FLOOR, (f"{len(have)} of {len(have) + len(missing)} modules ({ratio:.0%}) have "
                                   f"tests/<subpackage>/test_<module>.py, below {MIRROR_FLOOR:.0%}; "
                                   f"without one: {', '.join(missing)}")


def test_mirror_rule_finds_the_test_files(tmp_path: Path):
    pkg, tests = tmp_path / "pkg", tmp_path / "tests"
    for name in ("__init__.py", "__main__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/c.py", "d.py"):
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text("")
    for name in ("test_a.py", "sub/test_b_pty.py", "test_c.py", "sub/test_d.py"):
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    # c's test is in the wrong folder and d's in a subpackage d is not in: neither counts.
    assert _mirrored(pkg, tests) == (["a.py", "sub/b.py"], ["d.py", "sub/c.py"])


_OUTSIDE = re.compile(r"\.\./shared/|/work/shared|\bissues? #?\d+\b", re.IGNORECASE)
"""What a reader of the repository cannot follow: notes beside it, an issue tracker's numbers."""


def _outside_references(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if _OUTSIDE.search(line)]


def test_the_package_docs_and_tests_point_only_inside_the_repository():
    """A docstring or page says why in its own words, or names a file of the repository (docs/, bench/)."""
    found = []
    own = Path(__file__).resolve()  # its finder's self-test spells the references out
    for path in sorted([*PACKAGE_DIR.rglob("*.py"), *(PACKAGE_DIR.parent / "docs").rglob("*.md"),
                        PACKAGE_DIR.parent / "README.md",
                        *(p for p in TESTS_DIR.rglob("*.py") if p.resolve() != own), *TESTS_DIR.rglob("*.md")]):
        found += [f"{path.relative_to(PACKAGE_DIR.parent)}:{n}" for n in _outside_references(path.read_text())]
    assert found == []


def test_outside_reference_finder_finds_them():
    text = "see ../shared/clis.md\nfixed (issue 25 §3)\nissue #7\nthe issues 12\nan issue with keys\nv1.25\n"
    assert _outside_references(text) == [1, 2, 3, 4]
