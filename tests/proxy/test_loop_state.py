"""The proxy's shared plumbing: wake-up pipes that never block, and writes that either finish or say why not."""

from __future__ import annotations

import os
import signal
import threading

from wrapagent.proxy.loop_state import LoopState, block_signals_in_this_thread, drain_pipe, poke, wake_pipe, write_all


def test_a_full_wake_pipe_still_says_look_again_and_poking_never_blocks() -> None:
    r, w = wake_pipe()
    try:
        for _ in range(200_000):  # far more than a pipe holds
            poke(w)
        assert os.read(r, 1) == b"x"
        while True:
            try:
                drain_pipe(r)
                if not os.read(r, 65536):
                    break
            except BlockingIOError:
                break
        drain_pipe(r)  # empty: no exception
    finally:
        os.close(r)
        os.close(w)


def test_poking_a_closed_pipe_is_harmless() -> None:
    r, w = wake_pipe()
    os.close(r)
    os.close(w)
    poke(w)
    drain_pipe(r)


def test_write_all_finishes_on_a_non_blocking_fd_and_reports_a_reader_gone() -> None:
    r, w = os.pipe()
    os.set_blocking(w, False)
    data = os.urandom(1 << 20)  # more than the pipe holds: it must wait for the reader, not spin or drop
    got = bytearray()

    def reader() -> None:
        while chunk := os.read(r, 65536):
            got.extend(chunk)

    thread = threading.Thread(target=reader)
    thread.start()
    assert write_all(w, data) is True
    os.close(w)
    thread.join(60)
    os.close(r)
    assert bytes(got) == data
    r, w = os.pipe()
    os.close(r)
    old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        assert write_all(w, b"to nobody") is False
    finally:
        signal.signal(signal.SIGPIPE, old)
        os.close(w)


def test_a_copy_thread_blocks_the_signals_the_main_thread_waits_for() -> None:
    seen: list[set[int]] = []

    def copy_thread() -> None:
        block_signals_in_this_thread()
        seen.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))

    thread = threading.Thread(target=copy_thread)
    thread.start()
    thread.join(60)
    assert {signal.SIGWINCH, signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP} <= seen[0]
    assert signal.SIGWINCH not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # this thread untouched


def test_a_run_starts_with_everything_open_and_closes_its_pipes() -> None:
    state = LoopState(pid=1, master=-1, stdin_fd=0, stdout_fd=1)
    assert state.stdin_open and state.stdout_ok and state.master_open and not state.paused
    fds = (state.main_r, state.main_w, state.in_r, state.in_w, state.out_r, state.out_w)
    state.close_pipes()
    for fd in fds:
        try:
            os.fstat(fd)
        except OSError:
            continue
        raise AssertionError(f"fd {fd} still open")
