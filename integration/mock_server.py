"""A local mock model server speaking the four APIs the coding-agent CLIs use.

One `ThreadingHTTPServer` (HTTP/1.1, chunked SSE), stdlib only, bound to
127.0.0.1 on a free port:

| CLI      | API                                   | endpoints |
|----------|---------------------------------------|-----------|
| codex    | OpenAI Responses (SSE)                | `POST /v1/responses` |
| claude   | Anthropic Messages (SSE)              | `POST /v1/messages[?beta=true]`, `POST /v1/messages/count_tokens`, `HEAD /` |
| gemini   | Gemini generateContent                | `POST /v1beta/models/<m>:generateContent` (router/summary: JSON or text), `…:streamGenerateContent?alt=sse`, `…:countTokens` |
| opencode | OpenAI chat completions (SSE)         | `POST /v1/chat/completions` |

Replies are deterministic: they depend only on the request's content, never on
a global counter, so running a CLI twice against the same mock prints the same
bytes. The reply to a real user turn is `MOCK-REPLY-<n>` where n is the turn
number within the conversation (1 + the number of assistant messages already
in the request's history).

Every request is recorded (in memory and as JSON lines in `log_path`):
`seq, time, method, path, query, headers, body (parsed JSON or None),
raw_body (text, when not JSON), api, kind, user_text, reply`.
`kind` is `turn` for a real user turn and `title`, `router`, `summary`,
`count_tokens`, `probe`, `other` for the rest. `user_text` is the text the user
typed in the latest user message of a turn (see `extract_user_text`).

A user turn whose text contains `(full)` reports a nearly full context in its reply's usage
(`FULL_CONTEXT_TOKENS` input tokens, see `usage_tokens`): a CLI then compacts the conversation
by itself (at its next request, or before the next user message).

A user turn whose text contains `(think)` gets a *thinking* reply: the stream
opens at once (headers and the first events), the text follows `think_secs`
(default 6) later, like a model that thinks before it writes. The wall time
at which each turn's reply text was sent is kept (`reply_times`), so a test
can order it against what happened in the terminal.

A CLI's request to summarise the conversation (its compaction: claude's and codex's own
prompts, `COMPACTION_PROMPTS`, or gemini's `summary` request) is answered `SUMMARY_SECS` late,
as a real model takes its time over a long conversation: answered at once, claude sometimes
compacted without ever drawing its `Compacting conversation…` line, which a user never sees.

A user turn whose text holds `(write /PATH TEXT)` or `(rm /PATH)` directives gets one tool
call per directive first, made with the CLI's own tool (`mock_tools.py`: codex
`exec_command`, claude `Write`/`Bash`, gemini `write_file`, opencode `write`), then its
text reply once every result came back. The record's `tool_call` names the call sent
(None for a text reply); the requests carrying tool results count as the same turn.

Standalone: `python integration/mock_server.py [--port 0] [--log FILE]` prints
`MOCK_URL=http://127.0.0.1:<port>` and serves until interrupted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

try:  # a module of the integration package, or run as a script from its folder
    from .mock_tools import is_tool_call_message, is_tool_result_message, next_call, send_call
except ImportError:
    from mock_tools import is_tool_call_message, is_tool_result_message, next_call, send_call  # type: ignore[no-redef]

REPLY_PREFIX = "MOCK-REPLY-"
THINK_MARKER = "(think)"
THINK_SECS = 6.0
COMPACTION_PROMPTS = ("CRITICAL: Respond with TEXT ONLY", "You are performing a CONTEXT CHECKPOINT COMPACTION")
"""How claude 2.1 and codex 0.169 begin the request that summarises a conversation they compact."""
SUMMARY_SECS = 1.5
TITLE_REPLY = "Mock session title"
SUMMARY_REPLY = "Mock summary."
MOCK_MODEL = "mock-model"

CODEX_TITLE_PREFIX = "Generate a concise, single-line task title"
OPENCODE_TITLE_MARKER = "You are a title generator"
CLAUDE_TITLE_MARKERS = ("Write the title", "Generate a concise", "title for this conversation")

APIS = ("responses", "messages", "gemini", "chat")
#: which API each CLI talks
TOOL_API = {"codex": "responses", "claude": "messages", "gemini": "gemini", "opencode": "chat"}


FULL_MARKER = "(full)"
FULL_CONTEXT_TOKENS = 990_000
"""Input tokens reported for a turn whose user text holds FULL_MARKER. claude 2.1.330 takes its
model (claude-opus-5-5) for a 1M window: 190,000 did not make it compact, this does. gemini:
above 0.5 of its 1,048,576 limit; codex and opencode: above the small limits the tests set."""
PLAIN_INPUT_TOKENS = 10
FULL_CALL_MARKER = "(full-call)"
"""With tool-call directives (`mock_tools.py`): the tool calls' replies report a nearly full
context, the turn's text reply a plain one, so a CLI compacts in the middle of the turn (before
it sends the tool's result back) and not again before the next message."""


def usage_tokens(kind: str, user_text: str | None) -> int:
    """Input tokens a reply reports: a nearly full context for a `(full)` turn, else a few."""
    if kind == "turn" and FULL_MARKER in (user_text or ""):
        return FULL_CONTEXT_TOKENS
    return PLAIN_INPUT_TOKENS


def reply_text(turn: int) -> str:
    return f"{REPLY_PREFIX}{turn}"


LOOKALIKE_MARKER = "(lookalike)"
#: A reply that looks like a dialog line by line: numbered Yes/No choices, `›`/`❯`/`●` lines,
#: questions and key hints. A user turn containing LOOKALIKE_MARKER gets it after its
#: `MOCK-REPLY-<n>`, so screens of transcripts full of look-alikes can be recorded and tested.
LOOKALIKE_REPLY = (
    "\n\nDo you want to proceed?\n\n"
    "1. Yes\n"
    "2. Yes, and don't ask again\n"
    "3. No, use pytest\n\n"
    "› 1. Yes, allow once\n\n"
    "❯ No, exit\n\n"
    "● 1. Trust folder\n\n"
    "Continue? (y/n)\n\n"
    "Press enter to continue, Enter to confirm, enter select · esc back\n\n"
    "Do you trust the files in this folder? Enter your API key to go on."
)


COMPACTED_LOOKALIKE_MARKER = "(compacted)"
#: A reply holding the four CLIs' compaction notices as text, and the in-progress lines: a user
#: turn containing COMPACTED_LOOKALIKE_MARKER gets it after its `MOCK-REPLY-<n>`, so screens of
#: transcripts that only quote the notices can be recorded (they must not count as compactions).
COMPACTED_LOOKALIKE_REPLY = (
    "\n\nConversation compacted\n"
    "✻ Conversation compacted · ctrl+o for history\n"
    "✢ Compacting conversation… (3s)\n"
    "• Context compacted · 0s\n"
    "Context compacted · 0s\n"
    "ℹ Context compressed from 94% to 1%.\n"
    "Chat history compressed from 990000 to 12 tokens.\n"
    "Session compacted"
)


# --------------------------------------------------------------------------------------------
# Request content helpers (pure functions on parsed bodies)


def _texts_of(content: Any, part_types: tuple[str, ...]) -> list[str]:
    """Text parts of a message `content` that is a string or a list of typed parts."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") in part_types and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


def _last_user_texts(api: str, body: dict) -> list[str]:
    """All text parts of the latest user message of a request body."""
    if api == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return [items]
        for item in reversed(items or []):
            if isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message":
                texts = _texts_of(item.get("content"), ("input_text", "text"))
                # codex sends <environment_context> as its own user message before the typed one
                if texts and not all(t.lstrip().startswith("<environment_context>") for t in texts):
                    return texts
        return []
    if api in ("messages", "chat"):
        for msg in reversed(body.get("messages") or []):
            if isinstance(msg, dict) and msg.get("role") == "user" and not is_tool_result_message(api, msg):
                texts = _texts_of(msg.get("content"), ("text",))
                if texts:
                    return texts
        return []
    if api == "gemini":
        for content in reversed(body.get("contents") or []):
            if isinstance(content, dict) and content.get("role", "user") == "user" and not is_tool_result_message(api, content):
                texts = [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
                if texts:
                    return texts
        return []
    return []


def extract_user_text(api: str, body: dict) -> str | None:
    """The text the user typed in the latest user message.

    - responses (codex): the latest user message that is not codex's own
      `<environment_context>` message; its `input_text` parts joined.
    - messages (claude): the LAST text block of the latest user message
      (claude puts its own `<system-reminder>` blocks before the typed text).
    - gemini: the LAST text part of the latest user content (the first turn
      also carries a `<session_context>` part before it).
    - chat (opencode): the latest user message; a string as is, else its last text part.
    """
    texts = _last_user_texts(api, body)
    if not texts:
        return None
    if api == "responses":
        return "".join(texts)
    return texts[-1]


def assistant_turns(api: str, body: dict) -> int:
    """How many assistant replies the request's history already holds."""
    if api == "responses":
        items = body.get("input")
        if not isinstance(items, list):
            return 0
        return sum(
            1
            for item in items
            if isinstance(item, dict) and item.get("role") == "assistant" and item.get("type", "message") == "message"
        )
    if api in ("messages", "chat"):
        return sum(
            1
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "assistant" and not is_tool_call_message(api, m)
        )
    if api == "gemini":
        return sum(
            1
            for c in body.get("contents") or []
            if isinstance(c, dict) and c.get("role") == "model" and not is_tool_call_message(api, c)
        )
    return 0


def _system_text(api: str, body: dict) -> str:
    if api == "messages":
        system = body.get("system")
        if isinstance(system, str):
            return system
        return "\n".join(_texts_of(system, ("text",)))
    if api == "chat":
        return "\n".join(
            "\n".join(_texts_of(m.get("content"), ("text",)))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "system"
        )
    if api == "responses":
        return body.get("instructions") or ""
    if api == "gemini":
        si = body.get("systemInstruction") or body.get("system_instruction") or {}
        if isinstance(si, dict):
            return "\n".join(p.get("text", "") for p in si.get("parts") or [] if isinstance(p, dict))
        return str(si)
    return ""


def classify(api: str, path: str, body: dict | None) -> str:
    """`turn` for a real user turn; else title / router / summary / count_tokens / other."""
    if body is None:
        return "other"
    if "count_tokens" in path or ":countTokens" in path:
        return "count_tokens"
    user_text = extract_user_text(api, body) or ""
    if api == "responses":
        if user_text.startswith(CODEX_TITLE_PREFIX):
            return "title"
        return "turn"
    if api == "chat":
        if OPENCODE_TITLE_MARKER in _system_text(api, body) or user_text.startswith(
            "Generate a title for this conversation"
        ):
            return "title"
        # opencode's title request carries the user text as a separate message after the
        # "Generate a title…" message
        for msg in body.get("messages") or []:
            if isinstance(msg, dict) and msg.get("role") == "user":
                texts = _texts_of(msg.get("content"), ("text",))
                if texts and texts[0].startswith("Generate a title for this conversation"):
                    return "title"
        return "turn"
    if api == "messages":
        system = _system_text(api, body)
        if any(marker in user_text for marker in CLAUDE_TITLE_MARKERS) and user_text.lstrip().startswith("<session>"):
            return "title"
        if "title" in system.lower() and "generate" in system.lower() and not body.get("tools"):
            return "title"
        if body.get("max_tokens") == 1:
            return "probe"
        return "turn"
    if api == "gemini":
        if ":streamGenerateContent" in path:
            return "turn"
        cfg = body.get("generationConfig") or body.get("generation_config") or {}
        if "json" in str(cfg.get("responseMimeType", "")).lower() or cfg.get("responseJsonSchema") or cfg.get(
            "responseSchema"
        ):
            return "router"
        return "summary"
    return "other"


# --------------------------------------------------------------------------------------------
# The server


class MockServer:
    """In-process mock model server. Use as a context manager or call start()/stop()."""

    def __init__(self, log_path: str | Path | None = None, host: str = "127.0.0.1", port: int = 0):
        self.log_path = Path(log_path) if log_path else None
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        self._seq = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.think_secs = THINK_SECS
        self._sent: list[dict] = []

    # lifecycle ----------------------------------------------------------------------------
    def start(self) -> "MockServer":
        handler = type("BoundMockHandler", (_Handler,), {"mock": self})
        self._httpd = ThreadingHTTPServer((self._host, self._port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="mock-model-server", daemon=True)
        self._thread.start()
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.touch()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "MockServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "mock server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (no trailing slash, no /v1)."""
        return f"http://127.0.0.1:{self.port}"

    # recording ----------------------------------------------------------------------------
    def _record(self, entry: dict) -> dict:
        with self._lock:
            self._seq += 1
            entry = {"seq": self._seq, **entry}
            self._requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def _reply_sent(self, seq: int, turn: int | None) -> None:
        with self._lock:
            self._sent.append({"seq": seq, "turn": turn, "time": time.time()})

    def reply_times(self, since: int = 0) -> list[float]:
        """Wall times at which the text of each real turn's reply was sent (after any thinking)."""
        with self._lock:
            return [e["time"] for e in self._sent if e["seq"] > since]

    @property
    def requests(self) -> list[dict]:
        """A snapshot of every recorded request, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def mark(self) -> int:
        """The current sequence number: pass it as `since=` to look only at later requests."""
        with self._lock:
            return self._seq

    # queries ------------------------------------------------------------------------------
    def turn_requests(self, api: str | None = None, since: int = 0) -> list[dict]:
        """Requests that are real user turns (title, router, summary, probes filtered out)."""
        return [
            r
            for r in self.requests
            if r["kind"] == "turn" and r["seq"] > since and (api is None or r["api"] == api)
        ]

    def user_texts(self, api: str | None = None, since: int = 0) -> list[str]:
        """The typed text of every real turn, in order (one entry per distinct turn).

        A CLI that retries a request sends the same turn again; consecutive
        requests with the same history length and text are counted once.
        """
        out: list[str] = []
        seen: set[tuple] = set()
        for r in self.turn_requests(api, since):
            key = (r["api"], r["turn"], r["user_text"])
            if key in seen:
                continue
            seen.add(key)
            out.append(r["user_text"])
        return out

    def first_user_text(self, api: str | None = None, since: int = 0) -> str | None:
        """The typed text of the first real turn, or None if no turn arrived yet."""
        texts = self.user_texts(api, since)
        return texts[0] if texts else None

    def wait_for_turns(self, count: int, api: str | None = None, timeout: float = 30.0, since: int = 0) -> list[str]:
        """Block until `count` real turns arrived; returns their texts. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            texts = self.user_texts(api, since)
            if len(texts) >= count:
                return texts
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"mock: expected {count} user turn(s) (api={api}) within {timeout:.0f} s, got {len(texts)}: "
                    f"{texts!r}\nrequests: {self.summary()}"
                )
            time.sleep(0.05)

    def summary(self) -> str:
        """One line per request, for failure messages."""
        lines = []
        for r in self.requests:
            text = r.get("user_text")
            lines.append(
                f"#{r['seq']} {r['method']} {r['path']} api={r['api']} kind={r['kind']} "
                f"user_text={(text[:80] + '…') if text and len(text) > 80 else text!r}"
            )
        return "\n".join(lines) or "(no requests)"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "wrapagent-mock/1"
    mock: MockServer  # set on the bound subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # the request log is the record; keep pytest output clean

    # plumbing ----------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, obj: Any, status: int = 200) -> None:
        self._before_text()  # a no-op unless this is a real turn's (non-streamed) reply
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _before_text(self) -> None:
        """A thinking turn waits here, stream open, before its text; then the send time is kept."""
        if getattr(self, "_thinking", False):
            time.sleep(self.mock.think_secs)
        if getattr(self, "_summarising", False):
            time.sleep(SUMMARY_SECS)
        if getattr(self, "_seq", None) is not None:
            self.mock._reply_sent(self._seq, self._turn)

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _event(self, event: str | None, data: Any) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        text = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        self._chunk(text.encode())

    # dispatch ----------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        raw = self._read_body() if self.command == "POST" else b""
        split = urlsplit(self.path)
        path = split.path
        body: dict | None = None
        raw_text = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else {"_": parsed}
            except ValueError:
                raw_text = raw.decode("utf-8", "replace")
        api = _api_for(path)
        kind = classify(api, path, body) if api else ("probe" if self.command in ("HEAD", "GET") else "other")
        user_text = extract_user_text(api, body) if (api and body is not None) else None
        turn = assistant_turns(api, body) + 1 if (api and body is not None) else None
        if kind == "turn":
            reply = reply_text(turn)
            if LOOKALIKE_MARKER in (user_text or ""):
                reply += LOOKALIKE_REPLY
            if COMPACTED_LOOKALIKE_MARKER in (user_text or ""):
                reply += COMPACTED_LOOKALIKE_REPLY
        elif kind == "title":
            reply = TITLE_REPLY
        elif kind == "summary":
            reply = SUMMARY_REPLY
        elif kind == "router":
            reply = json.dumps(
                {
                    "reasoning": "mock router",
                    "complexity_reasoning": "mock router",
                    "complexity_score": 1,
                    "model_choice": "flash",
                    "next_speaker": "user",
                }
            )
        else:
            reply = None
        call = next_call(api, body, user_text) if kind == "turn" else None
        if call is not None:
            reply = f"tool call {call.name} {json.dumps(call.arguments)}"
        self._thinking = kind == "turn" and THINK_MARKER in (user_text or "") and call is None
        self._summarising = kind == "summary" or (
            kind == "turn" and (user_text or "").lstrip().startswith(COMPACTION_PROMPTS))
        self._turn = turn
        self._input_tokens = usage_tokens(kind, user_text)
        full_call = kind == "turn" and FULL_CALL_MARKER in (user_text or "")
        self._call_tokens = FULL_CONTEXT_TOKENS if full_call else PLAIN_INPUT_TOKENS
        entry = self.mock._record(
            {
                "time": time.time(),
                "method": self.command,
                "path": self.path,
                "query": {k: v[0] if len(v) == 1 else v for k, v in parse_qs(split.query).items()},
                "headers": {k: v for k, v in self.headers.items()},
                "body": body,
                "raw_body": raw_text,
                "api": api,
                "kind": kind,
                "user_text": user_text,
                "turn": turn,
                "reply": reply,
                "tool_call": None if call is None else {"name": call.name, "arguments": call.arguments},
            }
        )
        self._seq = entry["seq"] if kind == "turn" and call is None else None
        try:
            if call is not None:
                return send_call(self, api, body or {}, call)
            self._respond(api, path, body or {}, kind, reply or "")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _respond(self, api: str | None, path: str, body: dict, kind: str, reply: str) -> None:
        if self.command in ("HEAD", "GET") and api is None:
            if path in ("/", ""):
                return self._send_json({"ok": True})
            if path.rstrip("/").endswith("/models"):
                return self._send_json({"object": "list", "data": [{"id": MOCK_MODEL, "object": "model"}]})
            return self._send_json({"error": {"message": f"mock: no route for {self.command} {path}"}}, 404)
        if api == "responses":
            return self._responses(body, reply)
        if api == "messages":
            if kind == "count_tokens":
                return self._send_json({"input_tokens": 42})
            return self._messages(body, reply)
        if api == "gemini":
            if kind == "count_tokens":
                return self._send_json({"totalTokens": 42})
            return self._gemini(path, body, reply)
        if api == "chat":
            return self._chat(body, reply)
        return self._send_json({"error": {"message": f"mock: no route for {self.command} {path}"}}, 404)

    # OpenAI Responses (codex) ---------------------------------------------------------------
    def _responses(self, body: dict, reply: str) -> None:
        resp_id = "resp_mock"
        item_id = "msg_mock"
        item = {
            "type": "message",
            "id": item_id,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply, "annotations": []}],
        }
        tokens = getattr(self, "_input_tokens", PLAIN_INPUT_TOKENS)
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + 5,
        }
        model = body.get("model") or MOCK_MODEL
        if not body.get("stream"):
            return self._send_json(
                {"id": resp_id, "object": "response", "status": "completed", "model": model, "output": [item], "usage": usage}
            )
        self._start_sse()
        seq = 0

        def ev(name: str, data: dict) -> None:
            nonlocal seq
            self._event(name, {"type": name, "sequence_number": seq, **data})
            seq += 1

        base = {"id": resp_id, "object": "response", "model": model, "output": []}
        ev("response.created", {"response": {**base, "status": "in_progress"}})
        ev("response.in_progress", {"response": {**base, "status": "in_progress"}})
        ev(
            "response.output_item.added",
            {"output_index": 0, "item": {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}},
        )
        ev(
            "response.content_part.added",
            {"item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}},
        )
        self._before_text()
        for piece in _pieces(reply):
            ev("response.output_text.delta", {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece})
        ev("response.output_text.done", {"item_id": item_id, "output_index": 0, "content_index": 0, "text": reply})
        ev(
            "response.content_part.done",
            {"item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": reply, "annotations": []}},
        )
        ev("response.output_item.done", {"output_index": 0, "item": item})
        ev("response.completed", {"response": {**base, "status": "completed", "output": [item], "usage": usage}})
        self._end_chunks()

    # Anthropic Messages (claude) ------------------------------------------------------------
    def _messages(self, body: dict, reply: str) -> None:
        model = body.get("model") or MOCK_MODEL
        tokens = getattr(self, "_input_tokens", PLAIN_INPUT_TOKENS)
        usage = {"input_tokens": tokens, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self._send_json(
                {
                    "id": "msg_mock",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": reply}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        self._start_sse()
        self._event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_mock",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )
        self._event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        self._event("ping", {"type": "ping"})
        self._before_text()
        for piece in _pieces(reply):
            self._event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
            )
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}},
        )
        self._event("message_stop", {"type": "message_stop"})
        self._end_chunks()

    # Gemini (gemini-cli) --------------------------------------------------------------------
    def _gemini(self, path: str, body: dict, reply: str) -> None:
        model = path.rsplit("/", 1)[-1].split(":", 1)[0] or MOCK_MODEL

        tokens = getattr(self, "_input_tokens", PLAIN_INPUT_TOKENS)

        def response(text: str) -> dict:
            return {
                "candidates": [
                    {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": 5, "totalTokenCount": tokens + 5},
                "modelVersion": model,
            }

        if ":streamGenerateContent" in path:
            self._start_sse()
            self._before_text()
            self._event(None, response(reply))
            self._end_chunks()
            return
        self._send_json(response(reply))

    # OpenAI chat completions (opencode) ------------------------------------------------------
    def _chat(self, body: dict, reply: str) -> None:
        model = body.get("model") or MOCK_MODEL
        tokens = getattr(self, "_input_tokens", PLAIN_INPUT_TOKENS)
        usage = {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}
        created = 1700000000
        if not body.get("stream"):
            return self._send_json(
                {
                    "id": "chatcmpl-mock",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                    "usage": usage,
                }
            )
        self._start_sse()

        def chunk(delta: dict, finish: str | None = None, with_usage: bool = False) -> None:
            data = {
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if with_usage:
                data["usage"] = usage
            self._event(None, data)

        chunk({"role": "assistant", "content": ""})
        self._before_text()
        for piece in _pieces(reply):
            chunk({"content": piece})
        chunk({}, "stop", with_usage=True)
        self._event(None, "[DONE]")
        self._end_chunks()


def _pieces(text: str) -> list[str]:
    """Split a reply in two deltas, so clients really assemble a stream."""
    if len(text) < 2:
        return [text]
    half = len(text) // 2
    return [text[:half], text[half:]]


_GEMINI_RE = re.compile(r"^/v1(beta|alpha)?/models/[^/]+:(generateContent|streamGenerateContent|countTokens)$")


def _api_for(path: str) -> str | None:
    if path.rstrip("/") == "/v1/responses" or path.endswith("/responses"):
        return "responses"
    if path.startswith("/v1/messages"):
        return "messages"
    if path.endswith("/chat/completions"):
        return "chat"
    if _GEMINI_RE.match(path):
        return "gemini"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="wrapagent mock model server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default=None, help="JSON-lines request log")
    args = parser.parse_args(argv)
    server = MockServer(log_path=args.log, port=args.port).start()
    print(f"MOCK_URL={server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
