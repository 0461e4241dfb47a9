"""In-process prompt guards ("built-ins"): one import point for their callers."""

from wrapagent.hooks.builtins.git import BUILTIN_NAMES, cap_text, run_builtin, validate_args

__all__ = ["BUILTIN_NAMES", "cap_text", "run_builtin", "validate_args"]
