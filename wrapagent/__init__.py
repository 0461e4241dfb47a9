"""wrapagent: one uniform hook layer in front of coding-agent CLIs.

Kept empty of imports on purpose: `wrapagent` is aliased to `codex`, so every
millisecond of start-up is the user's.
"""

__version__ = "0.1.0"
