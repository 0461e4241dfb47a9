"""The recording of an interactive session: what the tool showed, as an asciicast v3 file.

asciicast v3 (docs.asciinema.org/manual/asciicast/v3): newline-delimited
JSON, a header object `{"version": 3, "term": {"cols", "rows", "type"},
"timestamp", …}`, then one event per line `[interval, code, data]` where
`interval` is the seconds since the previous event (not since the start, as
in v2). Codes written here: `o` output, `r` resize (`"COLSxROWS"`), `m`
marker (a turn's start: `turn N: first words`, or a note such as the size
cap), `x` the exit status. Keys typed are never recorded: the screen's echo
of them is part of the output.

The proxy's output thread hands each chunk to `Recorder.__call__`, which
costs one clock read, two integer updates and one `SimpleQueue.put` (C, no
lock held by Python code): the file is written by a thread of its own that
wakes on the first chunk, lets a burst gather (BATCH_SECS), and writes it
as a few events. When that thread falls behind by MAX_BACKLOG_BYTES the
output is dropped rather than waited for, and a marker says how much; past
`max_bytes` of asciicast text the recording stops, with a marker saying so.
An idle session costs nothing: the thread sleeps in `get()`.

Encoding output as JSON (decode, escape, ~3.5 ns a byte) holds the
interpreter lock, which the proxy's copy threads need after each of their
system calls; on a loaded machine it also takes the CPU the copy needs. So
while the tool floods its terminal (a batch of BURST_BYTES or more: a `cat`,
a build log) the writer only keeps the raw chunks, as they came, up to
HELD_BYTES in memory, then appended to `<id>.cast.spool` (one `writev`, the
lock released) with each event's time and length;
the events are encoded once the burst is over (batches below BURST_BYTES for
QUIET_SECS, or QUIET_SECS without output), or when the spool reaches SPOOL_MAX_BYTES.
The work is the same; it is done while the screen is quiet. Output at a
person's pace (a TUI redrawing, a spinner) is encoded as it comes.

The file is `<state>/recordings/<session id>.cast` while the session runs
(0600, created with O_EXCL | O_NOFOLLOW), gzip-compressed to
`<session id>.cast.gz` when it ends; recordings older than the checkpoints'
`keep_days` are deleted at a later session's end (`recording_files.expire`).

A recorder may be made before its file (`Recorder(…, deferred=True)`, then
`open()`): chunks queue from the first one, and the file, its header, the
writer thread and the JSON module come once the tool's first bytes are on
the screen (`session/recorded.py`).
"""

import os
import time
from _operator import itemgetter
from time import monotonic

from wrapagent.history.recording_files import SPOOL_SUFFIX, compress, recordings_dir

TYPE_CHECKING = False  # typing, json and the private-files module load once the file is opened:
if TYPE_CHECKING:  # a tool that goes first is recorded from its first byte, before they are needed
    from typing import Iterator, Mapping

BATCH_SECS = 0.05
"""After the first chunk of a burst, the writer lets more gather this long: one wake-up per burst."""
COALESCE_SECS = 0.005
"""Output chunks this close together are one `o` event: a replay cannot show the difference."""
EVENT_BYTES = 64 * 1024
"""At most this much output per `o` event, and per write: the writer's C calls (decode, JSON,
write) stay short, so it never holds the interpreter lock long while the output thread waits
for it after each of its system calls."""
MAX_BACKLOG_BYTES = 16 * 1024 * 1024
"""Output queued for the writer beyond this is dropped (a marker says how much): never a wait."""
BURST_BYTES = 512 * 1024
"""A batch (BATCH_SECS of output) this large is a burst (~10 MB/s): spooled raw, encoded after it."""
QUIET_SECS = 0.2
"""Spooled events are encoded once no output came for this long (or a batch is no burst)."""
SPOOL_MAX_BYTES = 256 * 1024 * 1024
"""A spool this large is encoded even while the burst goes on: what a crash can lose, bounded.
With a size cap (the default 64 MiB) the spool never gets past the cap: see `_spool`."""
HELD_BYTES = 1024 * 1024
"""The first this-much of a burst stays in memory as it came (the chunks the queue held anyway);
a longer burst goes on to the spool file. Not more: chunks kept alive make every new chunk of
the copy fresh memory (page faults, cache misses), and a 30 MB `cat` held in memory ran 5 %
slower than one spooled to the file, in the same run."""
IOV_MAX = 512
"""Chunks per `writev` (Linux and macOS both allow 1024)."""
SPOOL_READ_BYTES = 4 * 1024 * 1024
"""The spool is read back and encoded this much at a time (memory, not speed)."""
JOIN_SECS = 5.0
"""At the end, how long the writer gets to write what is queued (plus ENCODE_SECS_PER_MB)."""
ENCODE_SECS_PER_MB = 0.1
"""…and this long per MB still queued or spooled: a burst that just ended is encoded now
(~3.5 ns a byte, 10x that allowed for a loaded machine)."""
_first, _second = itemgetter(0), itemgetter(1)
"""An item's time and its chunk, for `map`: C calls, no Python frame per chunk."""
MARKER_WORDS = 8
MARKER_CHARS = 60


def marker_label(turn: int, text: str, by: "str | None" = None) -> str:
    """`turn N: first words` of a message, on one line, short."""
    words = " ".join(text.split()[:MARKER_WORDS])
    words = "".join(ch if ch.isprintable() else " " for ch in words)
    if len(words) > MARKER_CHARS:
        words = words[:MARKER_CHARS - 1] + "…"
    head = f"turn {turn}" + (f" ({by})" if by else "")
    return f"{head}: {words}" if words else head


class Recorder:
    """Writes one session's asciicast in a thread; fed by the proxy's threads (module docstring)."""

    def __init__(self, path: str, rows: int, cols: int, *, max_bytes: int, term_type: "str | None" = None,
                 title: "str | None" = None, deferred: bool = False, started: "float | None" = None) -> None:
        """A recorder whose file is created now, or with `deferred` by `open()` (OSError if it cannot be).

        Deferred, chunks queue from now on (timed from now, as they come) and
        nothing else happens: no file, no thread, no import of `json`, not
        even of `_queue` (a shared library to load): a list holds them until
        `open` hands them to the writer's queue, in order. `started` (a
        `monotonic()` time, default now) is the recording's time 0: the
        moment the tool started, when what it wrote was kept before this
        recorder existed (`take_early`).
        """
        import _thread

        self.path = path
        self.max_bytes = max_bytes
        self.started = monotonic() if started is None else started
        self._header: dict = {"version": 3, "term": {"cols": cols, "rows": rows}, "timestamp": int(time.time())}
        if term_type:
            self._header["term"]["type"] = term_type
        if title:
            self._header["title"] = title
        self.fd = -1
        self._queue = None  # the writer's SimpleQueue, from `open` on
        self._early: list = []
        """What came before `open`, in order (with `_early_lock`: `open` may run beside the output thread)."""
        self._early_lock = _thread.allocate_lock()
        self._put = self._put_early
        """Puts one item for the writer: `_put_early` until `open`, then the queue's own `put` (C)."""
        self.queued = 0
        """Output thread: bytes of output queued (with `taken`: the backlog)."""
        self.taken = 0
        """Writer thread: bytes of output it took off the queue."""
        self.dropped = 0
        """Output thread: bytes dropped because the writer was MAX_BACKLOG_BYTES behind."""
        self.stopped = False
        """Writer thread: the size cap was reached, nothing more is queued."""
        self.written = 0
        self.events = 0
        self.markers = 0
        self.error: str | None = None
        self._noted_dropped = 0
        self._spool_fd: int | None = None
        self._spooled: list[tuple] = []
        """Writer thread: the spooled events, in order: output as (at, chunk) held in memory or
        (at, length) in the spool file; resizes and markers as queued; or a batch of output
        alone as one run `(None, times, chunks or lengths)` (`_spool_run`)."""
        self._spool_bytes = 0
        self._spool_in_file = False
        """Some of the spooled output is in the spool file (the rest of the burst goes there too)."""
        self._slow_since: float | None = None
        """Writer thread: when the output first came slower than a burst since the spool began."""
        self._last = 0.0
        """Seconds since `started` of the last event written (intervals are relative)."""
        self._done = None
        if not deferred:
            self.open()

    def open(self) -> None:
        """Create the file (0600, never through a link), write the header, start the writer thread.

        On an OSError nothing more is queued, what was is dropped, and the error is raised.
        """
        import _thread
        import codecs
        import json
        from json.encoder import encode_basestring

        from wrapagent.history.private_files import create_private

        try:
            self.fd = create_private(self.path)
            self._write_line(json.dumps(self._header, ensure_ascii=False))
        except OSError:
            self.discard()
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            raise
        self._quote = encode_basestring
        """JSON string quoting (C): the event line without an encoder object per event."""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        from _queue import SimpleQueue  # `queue` would load threading and heapq

        with self._early_lock:
            queue = SimpleQueue()
            for item in self._early:
                queue.put(item)
            self._early = []
            self._queue = queue
            self._put = queue.put
        self._done = _thread.allocate_lock()
        self._done.acquire()
        _thread.start_new_thread(self._run, ())

    def discard(self) -> None:
        """No recording after all (not wanted, or its file cannot be made): what was queued is dropped."""
        self.stopped = True
        self._discard_queued()

    def _put_early(self, item: tuple) -> None:
        with self._early_lock:
            if self.stopped:
                return
            if self._queue is None:
                self._early.append(item)
            else:  # `open` ran since this call looked up `_put`
                self._queue.put(item)

    def _discard_queued(self) -> None:
        with self._early_lock:
            self._early = []
            queue = self._queue
        if queue is None:
            return
        from _queue import Empty

        try:
            while True:
                queue.get_nowait()
        except Empty:
            pass

    # -- the proxy's side: never blocks ------------------------------------------------

    def __call__(self, data: bytes) -> None:
        """A chunk the tool wrote (already shown to the user); from the output thread."""
        if self.stopped:
            return
        if self.queued - self.taken > MAX_BACKLOG_BYTES:
            self.dropped += len(data)
            return
        self.queued += len(data)
        self._put((monotonic(), data))

    def take_early(self, items: "list[tuple]", dropped: int = 0) -> None:
        """What the tool wrote before this recorder existed, timed as it came: `(at, chunk)` and
        `(at, "r", "COLSxROWS")` items in order (`session.recorded.EarlyOutput`), and how many
        bytes were dropped meanwhile. Call before anything else is fed to it."""
        self.dropped += dropped
        for item in items:
            if self.stopped:
                return
            if len(item) == 2:
                self.queued += len(item[1])
            self._put(item)

    def resized(self, rows: int, cols: int) -> None:
        """The user's terminal changed size (the child got the new size)."""
        self._put((monotonic(), "r", f"{cols}x{rows}"))

    def marker(self, label: str) -> None:
        """A marker at this moment (a turn's start)."""
        self._put((monotonic(), "m", label))

    # -- the writer thread -------------------------------------------------------------

    def _run(self) -> None:
        from queue import Empty

        get, get_nowait = self._queue.get, self._queue.get_nowait
        try:
            while True:
                if self._spooled:
                    try:
                        first = get(timeout=QUIET_SECS)
                    except Empty:  # the burst is over: its events now
                        self._unspool()
                        continue
                else:
                    first = get()
                batch = [first]
                if first is not None:
                    time.sleep(BATCH_SECS)
                    try:
                        while batch[-1] is not None:
                            batch.append(get_nowait())
                    except Empty:
                        pass
                if not self._take(batch):
                    break
        except Exception as exc:  # a full disk: the session goes on, the record says why
            self.error = f"{type(exc).__name__}: {exc}"
            self.stopped = True
        finally:
            self._done.release()

    def _take(self, batch: list) -> bool:
        """A burst goes to the spool; anything else is written, after what was spooled.

        A burst's batch (~900 chunks of a `cat` every BATCH_SECS) is handled by C
        loops (`map`, list building), not by Python code per chunk: this thread then
        holds the interpreter lock for microseconds, not the half millisecond the
        output thread would otherwise wait for it after its reads (measured: 7 % of
        a `cat`'s throughput).
        """
        end = batch[-1] is None
        items = batch[:-1] if end else batch
        plain = 3 not in map(len, items)  # only output: no resize or marker among them
        if plain:
            chunks = list(map(_second, items))
            sizes = list(map(len, chunks))
            size = sum(sizes)
        else:
            size = sum(len(item[1]) for item in items if len(item) == 2)
        if not end and not self.stopped and (size >= BURST_BYTES or self._dip_in_burst(size)):
            if size >= BURST_BYTES:
                self._slow_since = None
            if plain:
                self._spool_run(list(map(_first, items)), chunks, sizes, size)
            else:
                self._spool(items, size)
            if self._spool_bytes >= SPOOL_MAX_BYTES:
                self._unspool()
            return True
        if self._spooled:
            self._unspool()
        return self._write_batch(batch)

    def _dip_in_burst(self, size: int) -> bool:
        """A batch below BURST_BYTES while a burst is spooled: a dip (the machine was busy for a
        moment, the tool paused between files) unless the output stays slow for QUIET_SECS.

        Encoding the spool at the first slow batch took the interpreter lock for seconds in the
        middle of a long `cat` (~3.5 ns a byte of what was spooled): the copy stalled behind it.
        The burst is over once its output stayed slow this long, or stopped (`_run`: QUIET_SECS
        without output), or when the spool is full.
        """
        if not self._spooled:
            return False
        now = monotonic()
        if self._slow_since is None:
            self._slow_since = now
        return now - self._slow_since < QUIET_SECS

    def _spool_run(self, times: "list[float]", chunks: "list[bytes]", sizes: "list[int]", size: int) -> None:
        """`_spool` for a batch of output alone, kept as one entry `(None, times, chunks or sizes)`."""
        self.taken += size
        if not self._spool_in_file and self._spool_bytes + size <= HELD_BYTES:
            self._spooled.append((None, times, chunks))
            self._spool_bytes += size
            return
        if self.max_bytes and self.written + self._spool_bytes > self.max_bytes:
            return  # never written: see `_spool`
        _write_chunks(self._spool_file(), chunks)
        self._spooled.append((None, times, sizes))
        self._spool_bytes += size
        self._spool_in_file = True

    def _spool(self, batch: list, size: int) -> None:
        """Keep a burst's output raw, in memory up to HELD_BYTES, then in the spool file, with
        its events' times: (at, chunk) held, (at, length) in the file, other events as queued."""
        if not self._spool_in_file and self._spool_bytes + size <= HELD_BYTES:
            for item in batch:
                if len(item) == 2:
                    self.taken += len(item[1])
                self._spooled.append(item)
            self._spool_bytes += size
            return
        chunks: list[bytes] = []
        # What is spooled already cannot fit under the cap (its JSON is never shorter): more
        # would never be written, and the spool stays bounded by the cap. The cap's marker comes
        # when the spool is encoded.
        over = bool(self.max_bytes) and self.written + self._spool_bytes > self.max_bytes
        for item in batch:
            if len(item) != 2:
                self._spooled.append(item)
                continue
            data = item[1]
            self.taken += len(data)
            if not over:  # past the cap it could never be written: the cap's marker says so
                chunks.append(data)
                self._spooled.append((item[0], len(data)))
        if not chunks:
            return
        _write_chunks(self._spool_file(), chunks)
        self._spool_bytes += sum(len(c) for c in chunks)
        self._spool_in_file = True

    def _spool_file(self) -> int:
        """The spool file's fd, made on first use (0600, never through a link; read back when encoded)."""
        if self._spool_fd is None:
            from wrapagent.history.private_files import CREATE_FLAGS

            flags = (CREATE_FLAGS & ~(os.O_WRONLY | os.O_APPEND)) | os.O_RDWR
            self._spool_fd = os.open(self.path + SPOOL_SUFFIX, flags, 0o600)
        return self._spool_fd

    def _unspool(self) -> None:
        """Encode the spooled events into the recording, in order, then empty the spool."""
        entries, self._spooled = self._spooled, []
        fd, offset = self._spool_fd, 0
        part: list = []
        part_bytes = 0
        for item in _each_item(entries):
            if len(item) == 2:
                data = item[1]
                if isinstance(data, int):  # in the spool file
                    assert fd is not None
                    length, data = data, os.pread(fd, data, offset)
                    offset += length
                part.append((item[0], data))
                part_bytes += len(data)
                if part_bytes < SPOOL_READ_BYTES:
                    continue
            else:
                part.append(item)
                continue
            self._write_batch(part, taken=False)
            part, part_bytes = [], 0
        if part:
            self._write_batch(part, taken=False)
        if fd is not None:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        self._spool_bytes = 0
        self._spool_in_file = False
        self._slow_since = None

    def _write_batch(self, batch: list, taken: bool = True) -> bool:
        """Write a batch of queued items as events; False at the end marker (None).

        `taken` false: the output was counted off the queue already (spooled)."""
        lines: list[str] = []
        run: list[bytes] = []
        run_at = 0.0
        run_size = 0
        more = True
        for item in batch:
            if item is None:
                more = False
                break
            if len(item) == 2:
                at, data = item
                if taken:
                    self.taken += len(data)
                if run and (at - run_at > COALESCE_SECS or run_size >= EVENT_BYTES):
                    self._output(lines, run_at, run)
                    run, run_size = [], 0
                    self._flush(lines)
                if not run:
                    run_at = at
                run.append(data)
                run_size += len(data)
                continue
            if run:
                self._output(lines, run_at, run)
                run, run_size = [], 0
            self._event(lines, item[0], item[1], item[2])
        if run:
            self._output(lines, run_at, run)
        if self.dropped != self._noted_dropped:
            self._event(lines, monotonic(), "m", f"recording: {self.dropped - self._noted_dropped} bytes "
                        "of output not recorded (the recording fell behind)")
            self._noted_dropped = self.dropped
        self._flush(lines)
        return more

    def _flush(self, lines: "list[str]") -> None:
        """Write the lines gathered (one write: the lock is released while it runs)."""
        if lines and not self.stopped:
            self._write_line("\n".join(lines))
        lines.clear()

    def _output(self, lines: "list[str]", at: float, run: "list[bytes]") -> None:
        text = self._decoder.decode(b"".join(run))
        if text:
            self._event(lines, at, "o", text)

    def _event(self, lines: "list[str]", at: float, code: str, data: str) -> None:
        if self.stopped:
            return
        rel = max(at - self.started, self._last)
        line = f'[{round(rel - self._last, 6)!r}, "{code}", {self._quote(data)}]'  # = json.dumps of the list
        self._last = rel
        if self.max_bytes and self.written + sum(len(x) + 1 for x in lines) + len(line) > self.max_bytes:
            import json

            lines.append(json.dumps([0.0, "m", f"recording stopped: its size cap of {self.max_bytes} bytes "
                                     "was reached ([record] max_bytes)"]))
            self.stopped = True
            self._write_line("\n".join(lines))
            lines.clear()
            return
        lines.append(line)
        self.events += 1
        self.markers += code == "m"

    def _write_line(self, text: str) -> None:
        data = (text + "\n").encode("utf-8", "surrogatepass")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        self.written += len(data)

    # -- the end -----------------------------------------------------------------------

    def close(self, exit_code: "int | None") -> dict:
        """Write what is queued and the exit event, compress; what the record says about it."""
        if self._done is None:  # never opened: no file, nothing to say but that
            self.discard()
            return {"events": 0, "markers": 0, "bytes": 0, "error": "the file was never created"}
        import json

        self._put(None)
        pending = max(self.queued - self.taken, 0) + self._spool_bytes  # (the writer's, read as a hint)
        wait = JOIN_SECS + pending / 1e6 * ENCODE_SECS_PER_MB
        finished = self._done.acquire(timeout=wait)
        info: dict = {"events": self.events, "markers": self.markers, "bytes": self.written}
        if not finished:
            info["note"] = f"the writer did not finish within {wait:.3g} s: the recording is cut"
        elif exit_code is not None and not self.stopped and self.error is None:
            try:
                self._write_line(json.dumps([round(max(monotonic() - self.started - self._last, 0.0), 6),
                                             "x", str(exit_code)]))
            except OSError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
        if self.dropped:
            info["dropped_bytes"] = self.dropped
        if self.stopped and self.error is None:
            info["capped"] = True
        if self.error:
            info["error"] = self.error
        if not finished:
            # The writer may still write: its fd stays open (closed, the number could be reused
            # by the next open() and the writer's bytes land in another file). wrapagent exits soon.
            info["file"] = self.path
            return info
        os.close(self.fd)
        self._drop_spool()
        info.update(compress(self.path))
        return info

    def _drop_spool(self) -> None:
        """The spool is empty once the writer is done: closed and removed."""
        if self._spool_fd is None:
            return
        os.close(self._spool_fd)
        self._spool_fd = None
        try:
            os.unlink(self.path + SPOOL_SUFFIX)
        except OSError:
            pass


def _each_item(entries: list) -> "Iterator[tuple]":
    """The spooled items one by one: a run `(None, times, chunks or sizes)` as its `(at, chunk or size)`."""
    for entry in entries:
        if entry[0] is None:
            yield from zip(entry[1], entry[2])
        else:
            yield entry


def _write_chunks(fd: int, chunks: list[bytes]) -> None:
    """All of `chunks`, in order, in few `writev` calls (no copy into one buffer, the lock released)."""
    for start in range(0, len(chunks), IOV_MAX):
        group = chunks[start:start + IOV_MAX]
        done = os.writev(fd, group)
        total = sum(len(c) for c in group)
        if done < total:  # a short write (a full disk, a signal): the rest one buffer at a time
            view = memoryview(b"".join(group))[done:]
            while view:
                view = view[os.write(fd, view):]


def start(session_id: str, settings, env: "Mapping[str, str]", rows: int, cols: int,
          title: "str | None" = None) -> "tuple[Recorder | None, str | None]":
    """The session's recorder, or (None, why not) when it cannot be created."""
    recorder = prepare(session_id, env, rows, cols, title=title)
    why_not = open_prepared(recorder, env, settings.max_bytes)
    return (None, why_not) if why_not is not None else (recorder, None)


def prepare(session_id: str, env: "Mapping[str, str]", rows: int, cols: int,
            title: "str | None" = None, started: "float | None" = None) -> "Recorder":
    """The session's recorder before its file (`open_prepared` makes it): chunks queue meanwhile.
    `started`: its time 0, when earlier than now (see `Recorder`)."""
    path = os.path.join(recordings_dir(env), session_id + ".cast")
    return Recorder(path, rows, cols, max_bytes=0, term_type=env.get("TERM"), title=title, deferred=True,
                    started=started)


def open_prepared(recorder: "Recorder", env: "Mapping[str, str]", max_bytes: int) -> "str | None":
    """Make the recordings folder and the file of a `prepare`d recorder, capped at `max_bytes`
    (0: no cap); why not, when they cannot be made (the recorder then takes nothing more)."""
    from wrapagent.history.private_files import private_dir

    recorder.max_bytes = max_bytes
    try:
        private_dir(recordings_dir(env))
        recorder.open()
    except OSError as exc:
        recorder.discard()
        return f"recording: not recorded: {exc}"
    return None
