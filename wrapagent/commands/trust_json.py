"""`wrapagent trust --list --json`: the trusted project hooks files, for scripts.

Kept apart from `commands/trust.py` (the review-and-ask command) so the
listing for machines does not grow that module; the state words are the
ones `trust --list` prints. Shape: docs/JSON.md.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Mapping

from wrapagent.hooks.trust import TrustStore, content_sha256


def entry_state(path: str, sha256: str) -> str:
    """`ok`, `changed since trusted`, `missing` or `not used`: what the file on disk is now.

    Read the loader's way (`config_read`: no link in `.wrapagent`, a regular
    file of at most 1 MiB): a trusted repository whose hooks file became a
    FIFO or a link to `/dev/zero` after a pull must not block the listing or
    eat memory; the loader would not use it, and the state says so.
    """
    from wrapagent.hooks.config_read import project_root_of_hooks_file, read_config_file, read_project_hooks

    root = project_root_of_hooks_file(path)
    try:
        exists, data, _ = read_project_hooks(root) if root is not None else read_config_file(path)
    except OSError:
        return "not used"
    if not exists:
        return "missing"
    if data is None:
        return "not used"
    return "ok" if content_sha256(data) == sha256 else "changed since trusted"


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
