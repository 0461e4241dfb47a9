"""What reaches the model: input tokens, the injector state machine, delivery, the screen reader,
block text and sanitising, and the per-tool adapters (data).

May import `wrapagent.errors`, `wrapagent.values` and the standard library; knows adapters, not sessions, hooks or the proxy.
"""
