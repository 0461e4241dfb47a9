"""`wrapagent trust --list --json`: the trusted project hooks files, for scripts.

Kept apart from `commands/trust.py` (the review-and-ask command) so the
listing for machines does not grow that module; the state words are the
ones `trust --list` prints. Shape: docs/JSON.md.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import IO, Mapping

from wrapagent.hooks.trust import TrustStore, content_sha256


def entry_state(path: str, sha256: str) -> str:
    """`ok`, `changed since trusted` or `missing`: what the file on disk is now."""
    try:
        current = content_sha256(Path(path).read_bytes())
    except OSError:
        return "missing"
    return "ok" if current == sha256 else "changed since trusted"


def trust_list(env: Mapping[str, str] | None = None) -> dict:
    """The document `trust --list --json` prints."""
    store = TrustStore(env=os.environ if env is None else env, warn=lambda message: print(message, file=sys.stderr))
    return {
        "store": str(store.path),
        "files": [{"path": e.path, "sha256": e.sha256, "trusted_at": e.trusted_at,
                   "state": entry_state(e.path, e.sha256)} for e in store.entries()],
    }


def trust_list_json(out: IO[str], env: Mapping[str, str] | None = None) -> int:
    out.write(json.dumps(trust_list(env), indent=2) + "\n")
    return 0
