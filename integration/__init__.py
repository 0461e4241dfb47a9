"""wrapagent integration harness: the real CLIs against a local mock model server (see README.md)."""
