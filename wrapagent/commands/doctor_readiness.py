"""`wrapagent doctor`: which readiness rule fired in each known tool's recent sessions.

Every adapter waits for its tool's own ready screen (a prompt glyph, a
footer); when a release changes that screen, the generic rule (bracketed
paste on, output quiet) still sees the composer ready and the blocks still
go in. The record says which rule fired (`ready_by`) and which
release ran (`tool_version`); this module reads the newest records of the
current user (every project's sessions root) and words what a `generic`
means for the user: nothing is broken, the adapter is out of date, report
it. The probe's result (`doctor_probe`) is worded the same way.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

RECORDS_SCANNED = 300
"""Newest records read at most, across all projects: doctor stays quick on a long history."""


def readiness_of(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Which rule fired in one record: {"ready_by", "conversations": [those by the generic rule]};
    None when the record never saw the tool ready (no interactive injection, or lost)."""
    entries = record.get("injections") or [record.get("injection") or {}]
    fired = [(entry.get("conversation") or 1, entry.get("ready_by")) for entry in entries
             if isinstance(entry, dict) and entry.get("ready_by") in ("marker", "generic", "quiet")]
    if not fired:
        return None
    generic = [conv for conv, by in fired if by == "generic"]
    # "quiet" is a reset's own rule (tools that redraw nothing recognisable after one): not a fallback.
    by = "generic" if generic else "marker" if any(b == "marker" for _, b in fired) else "quiet"
    return {"ready_by": by, "conversations": generic}


def _newest_dirs(roots: Sequence[Any]) -> Iterator[Any]:
    """Session folders of every root, newest first (ULIDs sort by time)."""
    folders = []
    for root in roots:
        try:
            folders += [p for p in root.iterdir() if not p.name.startswith(".")]
        except OSError:
            continue
    folders.sort(key=lambda p: p.name, reverse=True)
    return iter(folders)


def recent_readiness(tools: Sequence[str], env: Mapping[str, str]) -> dict[str, dict[str, Any] | None]:
    """Per tool: its newest session in which the ready screen was seen, and by which rule.

    {"id", "started_at", "tool_version", "ready_by", "conversations", "project_root"},
    or None when no such session is among the newest RECORDS_SCANNED.
    """
    from wrapagent import paths
    from wrapagent.inject.adapters import canonical_transport
    from wrapagent.history.records import load_record

    found: dict[str, dict[str, Any] | None] = {tool: None for tool in tools}
    for scanned, folder in enumerate(_newest_dirs(paths.all_sessions_roots(env))):
        if scanned >= RECORDS_SCANNED or all(v is not None for v in found.values()):
            break
        record = load_record(folder)
        if record is None:
            continue
        tool = canonical_transport(str(record.get("transport") or record.get("tool") or ""))
        if tool not in found or found[tool] is not None:
            continue
        ready = readiness_of(record)
        if ready is None:
            continue
        version = record.get("tool_version")
        found[tool] = {"id": record.get("id"), "started_at": record.get("started_at"),
                       "tool_version": version if isinstance(version, str) else None,
                       "project_root": record.get("project_root"), **ready}
    return found


def fallback_message(tool: str, version: str | None, where: str) -> str:
    """What a `generic` means, for the findings and the probe: plain, with what to do."""
    release = f" ({tool} {version})" if version else ""
    return (f"your {tool}'s screen changed{release}: wrapagent did not see the ready markers it knows "
            f"for {tool} {where}, and injection still worked through the generic rule (bracketed paste "
            f"on, output quiet). Nothing to do; the blocks still reach the model. Please report it "
            f"(with the output of `wrapagent doctor --probe {tool}`) so the {tool} adapter learns the "
            f"new screen")


def rule_text(ready_by: str | None) -> str:
    """One rule, named for a listing."""
    return {"marker": "its own screen markers", "generic": "the generic rule (its own markers did not show)",
            "quiet": "output quiet after a reset"}.get(str(ready_by), "not seen ready")
