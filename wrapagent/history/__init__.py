"""What is kept after a session: records and the sessions repository, checkpoints of the work tree
and undo, the tool's transcripts and how to resume them; the session's recording, its conversation
read back the same way for every tool, and the search index over all sessions.

Below `session` (the live session writes here) and `commands` (which read and act on it); may
import `hooks`, `paths`, `errors`, `values`, `gitcmd`, `portable`, `visible`, never `session`,
`proxy` or `commands`.
"""
