"""The terminal side: the PTY copy loop, raw mode and window sizes, pipe mode, the leftover sweep.

May import only `wrapagent.errors` and the standard library: it knows nothing of hooks,
injection or sessions (the injector reaches it through the `Interceptor` protocol).
"""
