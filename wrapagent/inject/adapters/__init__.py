"""Per-tool adapters; `adapter_for(name)` picks one by executable name (or alias)."""

from __future__ import annotations

import os

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar, PromptPlan

KNOWN_TOOLS = ("codex", "claude", "gemini", "opencode")


def adapter_for(tool: str) -> Adapter:
    """The adapter for `tool` (a name or path); unknown tools get the generic one."""
    name = os.path.basename(tool)
    if name in ("codex",):
        from wrapagent.inject.adapters.codex import ADAPTER
    elif name in ("claude", "claude-code"):
        from wrapagent.inject.adapters.claude import ADAPTER
    elif name in ("gemini", "gemini-cli"):
        from wrapagent.inject.adapters.gemini import ADAPTER
    elif name in ("opencode",):
        from wrapagent.inject.adapters.opencode import ADAPTER
    elif name == "demo":
        from wrapagent.inject.adapters.demo import ADAPTER
    else:
        from wrapagent.inject.adapters.generic import generic_adapter

        return generic_adapter(name)
    return ADAPTER


def canonical_transport(name: str) -> str:
    """CSA's transport names (`claude-code`, `gemini-cli`) map to ours."""
    return {"claude-code": "claude", "gemini-cli": "gemini"}.get(name, name)


__all__ = ["Adapter", "ArgvGrammar", "PromptPlan", "adapter_for", "canonical_transport", "KNOWN_TOOLS"]
