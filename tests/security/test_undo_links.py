"""Symbolic links in the work tree: checkpoints still work, and undo never acts through one.

Before: a tracked folder turned into a symlink (the user's own `vendor -> ../vendor-real`,
or an agent's `rm -r d && ln -s /elsewhere d`) made every later snapshot die in
`git check-ignore` ("pathspec … is beyond a symbolic link"): no checkpoints for any
session of that repository, and `sessions undo` of the agent's session failed with a raw
git fatal. And undo removed the session's files by path: a leading folder replaced by a
symlink between its checks and its removals (another session, a sync tool) made it
delete the file of that name wherever the link pointed, outside the repository.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from checkpoint_world import isolated_env, load_record, make_repo, run_session, sessions, user_state, write

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path / "iso")


def test_a_tracked_folder_turned_into_a_symlink_keeps_checkpoints_working(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"README.md": "r\n", "vendor/lib.py": "v1\n"})
    real = tmp_path / "vendor-real"
    write(real / "lib.py", "v2\n")
    run_session(repo, env)  # the private index now exists
    shutil.rmtree(repo / "vendor")
    os.symlink(real, repo / "vendor")  # the user's own change, not committed

    for name in ("one.txt", "two.txt"):
        record = run_session(repo, env, lambda r, name=name: write(r / name, "x\n"))
        info = record["checkpoints"]
        assert info["status"] == "taken", info.get("note")


def test_undo_of_a_folder_the_session_replaced_by_a_link_outside_restores_it(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"README.md": "r\n", "d/x.txt": "tracked\n"})
    outside = tmp_path / "outside"
    write(outside / "x.txt", "not the repository's\n")
    expected = user_state(repo, env)

    def agent(r: Path) -> None:
        shutil.rmtree(r / "d")
        os.symlink(outside, r / "d")

    run_session(repo, env, agent)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert "d/x.txt: restored" in out
    assert (outside / "x.txt").read_text() == "not the repository's\n"
    assert user_state(repo, env) == expected


def test_a_folder_replaced_by_a_link_after_the_checks_is_never_followed(tmp_path: Path, env) -> None:
    """The race, made deterministic: undo's checks pass, then `d` becomes a link to a folder outside
    holding a file of the name undo removes. Nothing outside may change, and nothing inside either
    (all or nothing: undo says why in one line)."""
    from wrapagent.history import checkpoint_access
    from wrapagent.history import undo as undo_mod

    repo = make_repo(tmp_path / "proj", env, {"README.md": "r\n", "e/y.txt": "y\n"})
    outside = tmp_path / "outside"
    write(outside / "new.txt", "precious\n")

    def agent(r: Path) -> None:
        write(r / "d" / "new.txt", "the agent's\n")
        (r / "e" / "y.txt").write_text("changed by the agent\n")

    record = run_session(repo, env, agent)
    info = load_record(record)["checkpoints"]
    repo_obj = checkpoint_access.open_repo(info, env)
    plan = undo_mod.plan(repo_obj, *checkpoint_access.session_commits(info, repo_obj))
    assert plan.remove == ["d/new.txt"]

    shutil.rmtree(repo / "d")
    os.symlink(outside, repo / "d")  # between the checks and the changes
    state = user_state(repo, env)
    with pytest.raises(undo_mod.UndoRefused) as refused:
        undo_mod.apply(plan)
    assert "\n" not in str(refused.value) and "d" in str(refused.value)
    assert (outside / "new.txt").read_text() == "precious\n"
    assert user_state(repo, env) == state


def test_a_removal_never_goes_through_a_link_even_after_the_last_look(tmp_path: Path) -> None:
    """The removal itself, past every check: a leading folder that is a link stops it."""
    from wrapagent.history import undo as undo_mod

    top = tmp_path / "top"
    top.mkdir()
    outside = tmp_path / "outside"
    write(outside / "new.txt", "precious\n")
    os.symlink(outside, top / "d")
    with pytest.raises(OSError) as failed:
        undo_mod._remove_created(str(top), "d/new.txt")
    assert "not followed" in str(failed.value)
    assert (outside / "new.txt").read_text() == "precious\n"
    write(top / "e" / "f" / "made.txt", "the session's\n")
    undo_mod._remove_created(str(top), "e/f/made.txt")
    assert sorted(os.listdir(top)) == ["d"]  # the file and the folders it left empty
