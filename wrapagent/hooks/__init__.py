"""Hooks and config: loading, merging and validating the TOML layers, trust, running a shell hook,
prompt guards and the built-in guards.

May import `wrapagent.paths`, `wrapagent.errors`, `wrapagent.values` and `wrapagent.inject` (block text); never the proxy or sessions.
"""
