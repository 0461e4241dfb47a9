"""Which session a command means: an id prefix, or `last`; shared by every `sessions` command.

Records are read with `records.iter_records` (newest first: session ids are
ULIDs) and never written here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from wrapagent import paths
from wrapagent.history.records import iter_records

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


def is_top_level(record: Mapping[str, Any]) -> bool:
    """A session the user started, not one an agent started inside another session."""
    return not record.get("parent_session") and not record.get("depth")


def is_agent_session(record: Mapping[str, Any], configured: Iterable[str] = ()) -> bool:
    """A session of a coding agent (the four CLIs, the demo, a known or configured agent TUI).

    `last` means the newest of these: `wrapagent diff last` meant as
    `sessions diff last` ran /usr/bin/diff and became a session, which must
    not become what the next `sessions undo last` answers for.
    """
    from wrapagent.inject.agents import is_agent

    return any(is_agent(str(record.get(key) or ""), configured) for key in ("tool", "transport"))


def configured_agents(env: Mapping[str, str] | None, cwd: str | Path) -> tuple[str, ...]:
    """The programs the user's configuration names as agents (`Config.agents`, where it has them).

    Read-only and silent: the project's file is not consulted for trust here
    (the list is global-only), and a configuration without the key names none.
    """
    from wrapagent.hooks.config_loader import load_config

    config = load_config(paths.find_project_root(cwd), env=env, is_trusted=lambda _path, _data: False)
    return tuple(str(name) for name in getattr(config, "agents", ()) or ())


def _skipped_note(name: str, chosen: Mapping[str, Any], newer: list[dict[str, Any]]) -> str | None:
    """Says which newer sessions `last` passed over because they ran no agent."""
    if not newer:
        return None
    tools = ", ".join(dict.fromkeys(str(r.get("tool") or "?") for r in newer))
    return (f"`{name}` is the newest agent session ({chosen.get('id')}, {chosen.get('tool')}); "
            f"{len(newer)} newer session(s) of programs that are no agents ({tools}) are left out: "
            "give an id for those")


def last_here(env: Mapping[str, str] | None, cwd: str | Path, *, read_only: bool,
              back: int = 0, configured: Iterable[str] = ()) -> tuple[dict[str, Any], str | None]:
    """What `last` (`last~back`) means typed in `cwd`: (record, a note for the user or None).

    The newest top-level agent session of the current project (the
    `back`-th before it): `undo last` typed in project A must never undo
    project B's newer session, `resume last` must not pick up a sub-agent's
    session, and a program that is no agent (`wrapagent diff …`) is never
    `last` (the note says when one was passed over). With none here,
    read-only commands fall back to the agent sessions of all projects and
    say so (the note); the others refuse.
    """
    name = f"last~{back}" if back else "last"
    root = paths.find_project_root(cwd)
    top = [r for r in project_records(root, env) if is_top_level(r)]
    here = [r for r in top if is_agent_session(r, configured)]
    if back < len(here):
        chosen = here[back]
        newer = [r for r in top[: top.index(chosen)] if not is_agent_session(r, configured)]
        return chosen, _skipped_note(name, chosen, newer)
    others = _others(top, here)
    if here:
        raise SessionsError(f"{name!r}: only {len(here)} session(s) recorded in this project ({root}){others}")
    if not read_only:
        raise SessionsError(f"no session recorded in this project ({root}){others}: `{name}` means the "
                            "newest agent session of the current project; give a session id "
                            "(see `wrapagent sessions list`)")
    everywhere = [r for r in all_records(env) if is_top_level(r) and is_agent_session(r, configured)]
    if back >= len(everywhere):
        raise SessionsError(f"{name!r}: only {len(everywhere)} session(s) recorded" if everywhere
                            else "no sessions recorded yet")
    record = everywhere[back]
    return record, (f"no session recorded in this project ({root}){others}: `{name}` is taken among all "
                    f"projects, {record.get('id')} in {record.get('project_root') or '-'}")


def _others(top: list[dict[str, Any]], agents: list[dict[str, Any]]) -> str:
    """`last` counts agent sessions only: the others, said where they change the answer."""
    rest = [r for r in top if r not in agents]
    if not rest:
        return ""
    tools = ", ".join(dict.fromkeys(str(r.get("tool") or "?") for r in rest))
    return f" (besides {len(rest)} of programs that are no agents, not counted: {tools})"


def find_record(ref: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record whose id starts with `ref` (case-insensitive), among every project's; `last` = the
    newest one, `last~N` before it.

    The `sessions` commands use `pick`, where `last` means the current project's.
    """
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
    return _by_prefix(ref, records)


def pick(ref: str, env: Mapping[str, str] | None, cwd: str | Path, *,
         read_only: bool) -> tuple[dict[str, Any], str | None]:
    """The record a command's ID argument names: (record, a note for the user or None).

    An id or a unique prefix of one, among every project's records; `last`
    (or `latest`, `last~N`) as `last_here` decides.
    """
    from wrapagent.commands.sessions_ids import relative_index

    ref = ref.strip()
    if not ref:
        raise SessionsError("empty session id")
    back = relative_index(ref)
    if back is not None or ref.lower() in LATEST_ALIASES:
        return last_here(env, cwd, read_only=read_only, back=back or 0,
                         configured=configured_agents(env, cwd))
    return _by_prefix(ref, all_records(env)), None


def _by_prefix(ref: str, records: list[dict[str, Any]]) -> dict[str, Any]:
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
