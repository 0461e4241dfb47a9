"""The subcommands: doctor, sessions, shims and init, trust, the demo agent.

May import every other layer; nothing imports `commands` but `wrapagent.cli`.
"""
