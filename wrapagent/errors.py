"""Expected, user-facing failures.

Raised anywhere, caught once in `__main__.main`, printed as one line
`wrapagent: <message>` (never a traceback in a raw terminal), exit code kept.
"""


class WrapagentError(Exception):
    """A failure the user can fix; `exit_code` follows shell conventions."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class ToolNotFound(WrapagentError):
    """The tool is not on PATH (exit 127, like a shell).

    `searched_path`: raised by the PATH lookup itself, before any session
    exists (so a typo'd subcommand may be suggested instead).
    """

    def __init__(self, message: str, searched_path: bool = False) -> None:
        super().__init__(message, 127)
        self.searched_path = searched_path


class ToolNotExecutable(WrapagentError):
    """The tool exists but cannot be executed (exit 126, like a shell)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 126)
