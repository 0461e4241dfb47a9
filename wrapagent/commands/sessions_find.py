"""Which session a command means: an id prefix, or `last`; shared by every `sessions` command.

Records are read with `records.iter_records` (newest first: session ids are
ULIDs) and never written here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from wrapagent import paths
from wrapagent.session.records import iter_records

LATEST_ALIASES = ("last", "latest")  # never ULID prefixes: Crockford base32 has no L or U


class SessionsError(Exception):
    """A user-facing failure: one line on stderr, exit 1."""


def _resolve_project(project: str | None) -> Path:
    return paths.find_project_root(Path(project or ".").expanduser())


def all_records(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every record of every project, newest first."""
    return iter_records(paths.all_sessions_roots(env))


def project_records(project_root: Path, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The records of one project, newest first.

    With `WRAPAGENT_SESSIONS_ROOT` set all projects share one root, so the
    record's own `project_root` decides.
    """
    records = iter_records([paths.sessions_root(project_root, env)])
    return [r for r in records if r.get("project_root") in (None, str(project_root))]


def find_record(ref: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record whose id starts with `ref` (case-insensitive); `last` = the newest, `last~N` before it."""
    records = all_records(env)
    ref = ref.strip()
    if not ref:
        raise SessionsError("empty session id")
    from wrapagent.commands.sessions_ids import relative_index

    back = relative_index(ref)
    if back is not None:  # last~N: the N-th before the newest
        if back >= len(records):
            raise SessionsError(f"{ref!r}: only {len(records)} session(s) recorded")
        return records[back]
    if ref.lower() in LATEST_ALIASES:
        if not records:
            raise SessionsError("no sessions recorded yet")
        return records[0]
    wanted = ref.upper()
    matches = [r for r in records if str(r.get("id", "")).upper().startswith(wanted)]
    exact = [r for r in matches if str(r.get("id", "")).upper() == wanted]
    if exact:
        return exact[0]
    if not matches:
        raise SessionsError(f"no session matches {ref!r} (see `wrapagent sessions list`)")
    if len(matches) > 1:
        shown = ", ".join(str(r.get("id")) for r in matches[:5])
        more = " …" if len(matches) > 5 else ""
        raise SessionsError(f"{ref!r} matches {len(matches)} sessions ({shown}{more}); give more characters")
    return matches[0]
