"""Any other tool: bracketed paste enabled + output quiet means ready; no argv knowledge."""

from __future__ import annotations

from wrapagent.inject.adapters.base import Adapter, ArgvGrammar


def generic_adapter(name: str) -> Adapter:
    return Adapter(
        name=name,
        ready_patterns=(),
        ready_quiet_secs=0.3,
        requires_bracketed_paste=True,
        delivery="paste",
        grammar=ArgvGrammar(positional_prompt=False),
    )
