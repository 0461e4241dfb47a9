"""Recordings on disk after their session: expiry with keep_days, removal with the pruned sessions."""

from __future__ import annotations

import os
from pathlib import Path

from wrapagent.history import recording_files
from wrapagent.history.ids import ulid_seconds


def test_old_recordings_expire_with_keep_days(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    folder = Path(recording_files.recordings_dir(env))
    folder.mkdir(parents=True)
    old, new = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    for name in (f"{old}.cast.gz", f"{new}.cast", "notes.txt"):
        (folder / name).write_text("x")
    born = ulid_seconds(old)
    assert recording_files.expire(30, env, now=born + 10 * 86400) == []  # ten days old: kept
    assert sorted(recording_files.expire(30, env, now=born + 31 * 86400, force=True)) == [old, new]
    assert sorted(os.listdir(folder)) == [".expired", "notes.txt"]
    assert recording_files.expire(0, env, force=True) == []


def test_prune_drops_the_recordings_of_the_sessions_it_pruned(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    folder = Path(recording_files.recordings_dir(env))
    folder.mkdir(parents=True)
    pruned, kept = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    for name in (f"{pruned}.cast.gz", f"{kept}.cast.gz"):
        (folder / name).write_text("x")
    assert recording_files.drop([pruned, "../../escape"], env) == 1
    assert os.listdir(folder) == [f"{kept}.cast.gz"]
