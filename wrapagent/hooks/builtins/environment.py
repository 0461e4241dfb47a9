"""The environment and date built-ins: where and when the agent runs.

Models do not know today's date nor the machine they act on; a few lines
spare the agent a round of `uname`/`pwd`/`date` calls and fix "latest
version" guesses. No fork: everything comes from `os` and small files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Callable

    from wrapagent.hooks.context import GuardContext


def _now() -> datetime:
    """Local time; a function so tests can pin it."""
    from datetime import datetime

    return datetime.now().astimezone()


def _tz_name(now: datetime) -> str:
    """An IANA name (Europe/Paris) when known, else the abbreviation (CET)."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    if not tz:
        try:
            target = os.readlink("/etc/localtime")
        except OSError:
            target = ""
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    return now.tzname() or "unknown"


def _date_line(now: datetime, *, with_time: bool) -> str:
    """Date (and time), weekday, time zone name and UTC offset."""
    offset = now.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    stamp = now.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")
    return f"{stamp} ({now.strftime('%A')}), time zone {_tz_name(now)} ({offset})"


def _date(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Models do not know today's date; one line fixes "latest version" guesses."""
    return f"Today's date: {_date_line(_now(), with_time=False)}."


def _os_text() -> str:
    """Kernel plus distribution (Linux) or macOS version; no `platform` import."""
    uname = os.uname()
    if uname.sysname == "Darwin":
        import platform

        version = platform.mac_ver()[0]
        return f"macOS {version}" if version else f"Darwin {uname.release}"
    pretty = ""
    try:
        with open("/etc/os-release", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    pretty = line.split("=", 1)[1].strip().strip('"')
                    break
    except OSError:
        pass
    base = f"{uname.sysname} {uname.release}"
    return f"{base} ({pretty})" if pretty else base


def _environment(args: Mapping[str, object], ctx: GuardContext, deadline: float) -> str:
    """Where the agent runs: saves it a round of `uname`/`pwd`/`date` calls."""
    shell = os.environ.get("SHELL") or "unknown"
    lines = [
        f"OS: {_os_text()}",
        f"Architecture: {os.uname().machine}",
        f"Shell: {shell}",
        f"Working directory: {ctx.cwd}",
        f"Project root: {ctx.project_root}",
        f"Date: {_date_line(_now(), with_time=True)}",
    ]
    return "\n".join(lines)


RUNNERS: dict[str, Callable[[Mapping[str, object], GuardContext, float], str]] = {
    "environment": _environment,
    "date": _date,
}
