"""argparse for sub-actions: a usage error names the sub-action that was used.

argparse reports an argument no parser consumed through the top parser, so
`wrapagent config init --bogus` printed `usage: wrapagent config [-h]
{check,init} ...`, which does not show `init`'s options. `parse` sends such
an error to the sub-action's own parser, whose usage is the one that helps.
"""

from __future__ import annotations

import argparse
from typing import Sequence


def chosen_subparser(parser: argparse.ArgumentParser,
                     ns: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The sub-action parser `ns` went through (recursively), or None."""
    for action in parser._actions:  # argparse offers no public way to walk sub-parsers
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(ns, action.dest, None)
            sub = action.choices.get(name) if name is not None else None
            if sub is not None:
                return chosen_subparser(sub, ns) or sub
    return None


def parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    """`parser.parse_args(args)`, with leftovers reported by the sub-action's parser."""
    ns, extras = parser.parse_known_args(list(args))
    if extras:
        target = chosen_subparser(parser, ns) or parser
        target.error(f"unrecognized arguments: {' '.join(extras)}")
    return ns
