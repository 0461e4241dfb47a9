"""Per-tool adapters; `adapter_for(name)` picks one by executable name (or alias)."""

from __future__ import annotations

import os

from .base import Adapter, ArgvGrammar, PromptPlan

KNOWN_TOOLS = ("codex", "claude", "gemini", "opencode")


def adapter_for(tool: str) -> Adapter:
    """The adapter for `tool` (a name or path); unknown tools get the generic one."""
    name = os.path.basename(tool)
    if name in ("codex",):
        from .codex import ADAPTER
    elif name in ("claude", "claude-code"):
        from .claude import ADAPTER
    elif name in ("gemini", "gemini-cli"):
        from .gemini import ADAPTER
    elif name in ("opencode",):
        from .opencode import ADAPTER
    elif name == "demo":
        from .demo import ADAPTER
    else:
        from .generic import generic_adapter

        return generic_adapter(name)
    return ADAPTER


def canonical_transport(name: str) -> str:
    """CSA's transport names (`claude-code`, `gemini-cli`) map to ours."""
    return {"claude-code": "claude", "gemini-cli": "gemini"}.get(name, name)


__all__ = ["Adapter", "ArgvGrammar", "PromptPlan", "adapter_for", "canonical_transport", "KNOWN_TOOLS"]
