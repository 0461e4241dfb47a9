"""Undo undoes the session, only the session, all or nothing.

Each test runs real checkpoints on a real temporary repository and
`wrapagent sessions undo` in-process, then compares what the user sees of
the repository (config, refs, index bytes, `git status`, every file of the
work tree, ignored ones included) with what it must be.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from checkpoint_world import (finish_session, git, in_store, isolated_env, load_record, make_repo, run_session,
                              save_record, sessions, start_session, user_state, write)


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path / "iso")


def one_line(text: str) -> bool:
    return text.count("\n") == 1 and text.endswith("\n")


def test_a_pre_existing_ignored_file_survives_when_the_agent_empties_gitignore(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    write(repo / ".env", "API_KEY=the user's secret\n")  # ignored, never touched by the agent

    def agent(r: Path) -> None:
        (r / ".gitignore").write_text("")
        write(r / "notes.txt", "the agent's file\n")

    expected = user_state(repo, env)
    run_session(repo, env, agent)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / ".env").read_text() == "API_KEY=the user's secret\n"
    assert ".env: kept (git ignored it before the session" in out
    assert user_state(repo, env) == expected


def test_sessions_that_overlapped_in_time_make_undo_refuse_naming_the_files(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"shared.txt": "v1\n", "other.txt": "o\n"})
    first = start_session(repo, env)
    second = start_session(repo, env)  # another terminal, same repository
    write(repo / "shared.txt", "the second session's work\n")
    finish_session(second, env)
    write(repo / "mine.txt", "the first session's own file\n")
    finish_session(first, env)
    state = user_state(repo, env)

    code, out, err = sessions(env, repo, "undo", first["id"])
    assert code == 1 and out == "" and one_line(err)
    assert second["id"] in err and "shared.txt" in err and "--force" in err
    assert user_state(repo, env) == state

    code, out, err = sessions(env, repo, "undo", first["id"], "--dry-run")
    assert code == 1 and user_state(repo, env) == state  # a dry run checks the same things

    code, out, err = sessions(env, repo, "undo", first["id"], "--force")
    assert code == 0, err
    assert not (repo / "mine.txt").exists() and (repo / "shared.txt").read_text() == "v1\n"
    assert "--force" in out


def test_a_parent_path_the_user_replaced_is_never_overwritten(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"olddir/f.txt": "kept in olddir\n", "a.txt": "a\n"})

    def agent(r: Path) -> None:
        (r / "olddir" / "f.txt").unlink()
        (r / "olddir").rmdir()
        write(r / "a.txt", "agent\n")

    run_session(repo, env, agent)
    write(repo / "olddir", "the user's new file, made after the session\n")
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and out == "" and one_line(err)
    assert "olddir" in err and "nothing was changed" in err
    assert user_state(repo, env) == state

    # a symlink there (pointing out of the repository) is not followed either
    (repo / "olddir").unlink()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "olddir")
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and "olddir" in err
    assert user_state(repo, env) == state and list(outside.iterdir()) == []


def clone_library(tmp_path: Path, env: dict[str, str], into: Path) -> None:
    lib = tmp_path / "upstream-lib"
    if not lib.exists():
        make_repo(lib, env, {"lib.py": "LIB = 1\n"})
    subprocess.run(["git", "clone", "-q", str(lib), str(into)], env=env, check=True)


def test_a_nested_repository_the_session_cloned_is_listed_not_touched(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)

    def agent(r: Path) -> None:
        clone_library(tmp_path, env, r / "vendor" / "lib")
        write(r / "use_lib.py", "import lib\n")
        write(r / "zz_last.txt", "sorted after vendor/\n")

    run_session(repo, env, agent)
    nested = {p: b for p, b in user_state(repo, env)["files"].items() if p.startswith("vendor")}
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert "vendor/lib: not restored (a nested repository or submodule" in out
    assert not (repo / "use_lib.py").exists() and not (repo / "zz_last.txt").exists()
    assert {p: b for p, b in user_state(repo, env)["files"].items() if p.startswith("vendor")} == nested


def test_a_nested_repository_in_the_way_of_a_restore_changes_nothing(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"vendor/README": "vendored by hand\n", "a.txt": "a\n"})

    def agent(r: Path) -> None:
        write(r / "a.txt", "the agent edited this\n")
        (r / "vendor" / "README").unlink()
        (r / "vendor").rmdir()
        clone_library(tmp_path, env, r / "vendor")  # a repository where vendor/README was

    run_session(repo, env, agent)
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and out == "" and one_line(err)
    assert "nested git repository" in err and "vendor" in err
    assert user_state(repo, env) == state  # a.txt not restored either: all or nothing


def test_a_second_undo_says_already_undone(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    record = run_session(repo, env, lambda r: write(r / "README.md", "agent\n"))
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    after = record["checkpoints"]["after"]
    way_back = f"cat-file blob {after[:12]}:PATH > PATH"  # the way back is named, byte for byte
    assert way_back in out
    command = out.split("`")[-2].replace("PATH", "README.md")
    subprocess.run(command, shell=True, cwd=repo, env=env, check=True)
    assert (repo / "README.md").read_text() == "agent\n"
    subprocess.run(["git", "checkout", "-q", "README.md"], cwd=repo, env=env, check=True)
    assert load_record(record)["checkpoints"]["undone_at"]
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0 and "already undone" in out and err == ""
    assert user_state(repo, env) == state


def test_dry_run_lists_and_changes_nothing(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    record = run_session(repo, env, lambda r: (write(r / "new.txt", "n\n"), (r / "README.md").unlink()))
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", "last", "--dry-run")
    assert code == 0, err
    assert "dry run" in out and "new.txt: removed" in out and "README.md: restored" in out
    assert user_state(repo, env) == state
    assert "undone_at" not in load_record(record)["checkpoints"]


def test_a_folder_undo_cannot_write_in_changes_nothing(tmp_path: Path, env, monkeypatch) -> None:
    repo = make_repo(tmp_path / "proj", env, {"a.txt": "a\n", "locked/b.txt": "b\n"})
    run_session(repo, env, lambda r: (write(r / "a.txt", "agent\n"), write(r / "locked/b.txt", "agent\n")))
    locked = repo / "locked"
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere: the folder answers as it would to anybody else
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == locked
                            and mode & os.W_OK else real_access(path, mode, **kw))
    try:
        state = user_state(repo, env)
        code, out, err = sessions(env, repo, "undo", "last")
        assert code == 1 and "no permission" in err and "locked" in err and one_line(err)
        assert user_state(repo, env) == state  # a.txt not restored either
    finally:
        locked.chmod(0o755)


def test_pruned_and_gcd_checkpoints_are_explained_not_a_git_fatal(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    run_session(repo, env, lambda r: write(r / "README.md", "agent\n"))
    code, out, err = sessions(env, repo, "prune", "--older-than", "0")
    assert code == 0, err
    git(repo, env, "gc", "-q", "--prune=now")
    for verb in ("undo", "diff"):
        code, out, err = sessions(env, repo, verb, "last")
        assert code == 1 and one_line(err) and "fatal" not in err
        assert "the checkpoints of this session were pruned on " in err
    code, out, err = sessions(env, repo, "show", "last")
    assert code == 0 and "were pruned on " in out and "fatal" not in out


def test_checkpoints_gone_without_a_note_are_explained_too(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    record = run_session(repo, env, lambda r: write(r / "README.md", "agent\n"))
    info = record["checkpoints"]
    for which in ("before", "after"):
        in_store(info, env, "update-ref", "-d", f"{info['ref']}/{which}")
    (Path(info["store"]) / "index").unlink()  # what the store's index names is kept too
    in_store(info, env, "prune", "--expire=now")
    for verb in ("undo", "diff"):
        code, out, err = sessions(env, repo, verb, "last")
        assert code == 1 and one_line(err) and "fatal" not in err
        assert "no longer in the checkpoint store" in err


def test_refs_past_keep_days_are_pruned_at_a_later_sessions_end_at_most_daily(tmp_path: Path, env) -> None:
    import time

    from wrapagent.hooks.config_model import CheckpointSettings
    from wrapagent.history import checkpoints

    from checkpoint_world import session_id

    repo = make_repo(tmp_path / "proj", env)
    keep_all = CheckpointSettings(keep_days=0, budget_secs=60)
    month_ago = time.time() - 40 * 86400
    old = run_session(repo, env, lambda r: write(r / "old.txt", "o\n"), settings=keep_all, id=session_id(month_ago))
    refs = lambda: in_store(old["checkpoints"], env, "for-each-ref", "--format=%(refname)").split()  # noqa: E731
    assert len(refs()) == 2
    new = run_session(repo, env)  # default keep_days = 30: the old session's refs go at its end
    assert sorted(refs()) == sorted(f"{new['checkpoints']['ref']}/{w}" for w in ("before", "after"))
    assert load_record(old)["checkpoints"]["pruned_at"]
    code, out, err = sessions(env, repo, "undo", old["id"])
    assert code == 1 and "were pruned on" in err

    # the next look is a day later: until then a session's end runs no git for it
    older = run_session(repo, env, settings=keep_all, id=session_id(month_ago + 1))
    run_session(repo, env)
    assert f"{older['checkpoints']['ref']}/before" in refs()
    mark = Path(new["checkpoints"]["store"]) / checkpoints.PRUNE_MARK
    stale = mark.stat().st_mtime - checkpoints.PRUNE_EVERY_SECS - 1
    os.utime(mark, (stale, stale))
    run_session(repo, env)
    assert not [r for r in refs() if older["id"] in r]


def test_keep_days_is_a_checkpoints_setting(tmp_path: Path) -> None:
    from wrapagent.hooks.config_loader import load_config

    project = tmp_path / "project"
    (project / ".wrapagent").mkdir(parents=True)
    (project / ".wrapagent" / "hooks.toml").write_text("[checkpoints]\nkeep_days = 7\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    cfg = load_config(project, env=env, is_trusted=lambda path, data: True)
    assert cfg.checkpoints.keep_days == 7 and cfg.problems == ()
    (project / ".wrapagent" / "hooks.toml").write_text("[checkpoints]\nkeep_days = -1\n")
    cfg = load_config(project, env=env, is_trusted=lambda path, data: True)
    assert [p.key for p in cfg.problems] == ["checkpoints.keep_days"]


def test_a_refusal_naming_a_hostile_file_name_does_not_drive_the_terminal(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env)
    name = "notes\x1b]0;pwned\x07\x1b[2J.txt"
    run_session(repo, env, lambda r: write(r / name, "agent\n"))
    write(repo / name, "edited after the session\n")
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 1 and one_line(err)
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned" in err
    assert (repo / name).read_text() == "edited after the session\n"


def test_a_session_still_running_in_the_repository_makes_undo_refuse(tmp_path: Path, env) -> None:
    """A running session has no `after` yet: every file undo would touch may hold its work."""
    repo = make_repo(tmp_path / "proj", env)
    finished = run_session(repo, env, lambda r: write(r / "mine.txt", "m\n"))
    running = start_session(repo, env)  # started before the undo, not ended
    running.pop("_settings")
    running["state"] = "running"
    save_record(running, env)
    # it started after `finished` ended: no overlap with that window...
    code, out, err = sessions(env, repo, "undo", finished["id"], "--dry-run")
    assert code == 0, err
    # ...but one that started during `finished` and is still running does overlap
    running["started_at"] = finished["started_at"]
    save_record(running, env)
    state = user_state(repo, env)
    code, out, err = sessions(env, repo, "undo", finished["id"])
    assert code == 1 and running["id"] in err and "mine.txt" in err and one_line(err)
    assert user_state(repo, env) == state


def test_a_file_name_holding_a_newline_cannot_add_lines_to_what_undo_says(tmp_path: Path, env) -> None:
    """Before: the listing kept newlines and tabs in a path: a file the agent named
    `x\\n  .ssh/id_ed25519: removed (created by the session)` printed as a line of its own."""
    repo = make_repo(tmp_path / "proj", env)
    name = "x\n  .ssh/id_ed25519: removed (created by the session)\tsee"
    run_session(repo, env, lambda r: write(r / name, "agent\n"))
    for args in (("--dry-run",), ()):
        code, out, err = sessions(env, repo, "undo", "last", *args)
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 3, out  # the header, the one path, where the session's version stays
        assert lines[1] == "  x\\x0a  .ssh/id_ed25519: removed (created by the session)\\x09see: removed (created by the session)"
    assert not (repo / name).exists()


def test_undo_keeps_a_read_only_file_read_only(tmp_path: Path, env) -> None:
    """Before: the content came back through git, which writes with the umask's bits: the
    user's 0444 file was left 0644 (writable) by an undo of a session that had kept it 0444."""
    repo = make_repo(tmp_path / "proj", env, {"README.md": "r\n", "locked.cfg": "the user's settings\n",
                                              "run.sh": "#!/bin/sh\necho hi\n"})
    os.chmod(repo / "locked.cfg", 0o444)
    os.chmod(repo / "run.sh", 0o555)
    expected = user_state(repo, env)

    def agent(r: Path) -> None:
        for name in ("locked.cfg", "run.sh"):
            mode = os.stat(r / name).st_mode
            os.chmod(r / name, 0o644)
            (r / name).write_text("the agent's\n")
            os.chmod(r / name, mode)

    run_session(repo, env, agent)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / "locked.cfg").read_text() == "the user's settings\n"
    assert user_state(repo, env) == expected  # files with their modes, status, index


def test_a_file_saved_between_the_checks_and_the_changes_is_not_overwritten(tmp_path: Path, env) -> None:
    """Undo racing the user's editor, made deterministic: its checks pass, then the user saves a
    file undo restores (its time stamps differ, as any save's do). Before: undo wrote the
    session's `before` version over that edit."""
    from wrapagent.history import checkpoint_access
    from wrapagent.history import undo as undo_mod

    repo = make_repo(tmp_path / "proj", env, {"README.md": "r\n", "app.py": "v1\n"})
    record = run_session(repo, env, lambda r: ((r / "app.py").write_text("v2 by the agent\n"),
                                               write(r / "new.py", "the agent's\n")))
    info = load_record(record)["checkpoints"]
    repo_obj = checkpoint_access.open_repo(info, env)
    plan = undo_mod.plan(repo_obj, *checkpoint_access.session_commits(info, repo_obj))
    assert plan.acted_on == ["new.py", "app.py"]

    (repo / "app.py").write_text("v3 typed by the user\n")
    stamp = os.stat(repo / "app.py").st_mtime_ns + 5_000_000_000
    os.utime(repo / "app.py", ns=(stamp, stamp))
    state = user_state(repo, env)
    with pytest.raises(undo_mod.UndoRefused) as refused:
        undo_mod.apply(plan)
    assert "app.py" in str(refused.value) and "\n" not in str(refused.value)
    assert user_state(repo, env) == state


def test_undo_of_a_session_that_created_more_files_than_a_command_line_holds(tmp_path: Path, env) -> None:
    """An agent vendoring a large library: more paths than fit on one command line.

    Before: undo (and its dry run) gave every path to `git diff-tree` as an argument and
    failed with "Argument list too long": such a session could not be undone at all."""
    repo = make_repo(tmp_path / "proj", env)
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 1 << 20
    name = "n" * 180
    per_folder = 100
    folders = limit // (per_folder * (len(name) + 30)) + 2

    def agent(r: Path) -> None:
        for i in range(folders):
            folder = r / "vendor" / f"pkg{i:04d}"
            folder.mkdir(parents=True)
            for j in range(per_folder):
                (folder / f"{name}{j:03d}.py").write_bytes(b"")

    expected = user_state(repo, env)
    run_session(repo, env, agent)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert len(out.splitlines()) == folders * per_folder + 2
    assert user_state(repo, env) == expected


def test_a_file_ignored_only_by_info_exclude_or_the_global_excludes_is_never_deleted(tmp_path: Path, env) -> None:
    """The snapshots hold the `.gitignore` files, not `.git/info/exclude` nor the global excludes
    file. Before: an agent that emptied those made the user's `.env` and key (never touched)
    show up in `after`, and undo deleted them as "created by the session"."""
    import time

    repo = make_repo(tmp_path / "proj", env, ignore="*.log\n")
    exclude = repo / ".git" / "info" / "exclude"
    write(exclude, ".env\n")
    global_ignore = Path(env["XDG_CONFIG_HOME"]) / "git" / "ignore"
    write(global_ignore, "*.key\n")
    write(repo / ".env", "SECRET=the user's\n")
    write(repo / "id.key", "the user's private key\n")
    made = max(os.lstat(repo / name).st_ctime for name in (".env", "id.key"))
    while time.time() < int(made) + 1:  # the session starts in a later second than the files were made
        time.sleep(0.05)

    def agent(r: Path) -> None:
        exclude.write_text("")
        global_ignore.write_text("")
        write(r / "notes.txt", "the agent's\n")

    run_session(repo, env, agent)
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / ".env").read_text() == "SECRET=the user's\n"
    assert (repo / "id.key").read_text() == "the user's private key\n"
    assert "notes.txt: removed" in out and not (repo / "notes.txt").exists()
    assert ".env: kept" in out and "id.key: kept" in out
