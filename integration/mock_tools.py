"""Tool calls for the mock model: a user turn can ask the mock to make the CLI change files.

A real user turn whose typed text holds directives gets, instead of its text reply, one tool
call per directive, one request at a time (the CLI runs the tool and sends its result back;
the mock then makes the next call); once every directive has its result, the usual
`MOCK-REPLY-<n>` text follows. Directives, anywhere in the text:

| directive            | what the CLI's own tool does                                  |
|----------------------|---------------------------------------------------------------|
| `(write PATH TEXT)`  | PATH holds exactly TEXT and one newline afterwards            |
| `(rm PATH)`          | PATH is removed (a shell command in every CLI)                |

PATH should be absolute (claude's Write, gemini's write_file and opencode's write want an
absolute path); TEXT runs to the closing parenthesis. Which tool each CLI gets, by API:

| API (CLI)            | write                                   | rm                          |
|----------------------|-----------------------------------------|-----------------------------|
| responses (codex)    | `exec_command` `printf '%s\\n' TEXT > PATH` | `exec_command` `rm -f PATH` |
| messages (claude)    | `Write` {file_path, content}            | `Bash` `rm -f PATH`         |
| gemini               | `write_file` {file_path, content}       | `run_shell_command`         |
| chat (opencode)      | `write` {filePath, content}             | `bash`                      |

How far a turn got is read from the request alone (the tool results after the latest typed
user message), so the same request always gets the same reply, like every reply of the mock.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

DIRECTIVE = re.compile(r"\((write|rm) (/[^\s)]+)(?: ([^)]*))?\)")


@dataclass(frozen=True)
class ToolCall:
    """One call the mock makes: the tool's name in that API, its arguments, a stable id."""

    name: str
    arguments: dict
    call_id: str


def directives(user_text: str | None) -> list[tuple[str, str, str]]:
    """(verb, path, text) of every directive in the typed text, in order."""
    return [(m.group(1), m.group(2), m.group(3) or "") for m in DIRECTIVE.finditer(user_text or "")]


def _shell(verb: str, path: str, text: str) -> str:
    if verb == "write":
        return f"printf '%s\\n' {shlex.quote(text)} > {shlex.quote(path)}"
    return f"rm -f {shlex.quote(path)}"


def tool_for(api: str, verb: str, path: str, text: str, number: int) -> ToolCall:
    """The call that makes `api`'s CLI carry out one directive, with its own tool.

    `number` counts the calls of the whole conversation: claude takes a call id seen
    before for an interrupted call."""
    call_id = f"call_mock_{number}"
    if api == "responses":
        return ToolCall("exec_command", {"cmd": _shell(verb, path, text)}, call_id)
    if api == "messages":
        call_id = f"toolu_mock_{number}"
        if verb == "write":
            return ToolCall("Write", {"file_path": path, "content": text + "\n"}, call_id)
        return ToolCall("Bash", {"command": _shell(verb, path, text), "description": "Remove a file"}, call_id)
    if api == "gemini":
        if verb == "write":
            return ToolCall("write_file", {"file_path": path, "content": text + "\n"}, call_id)
        return ToolCall("run_shell_command", {"command": _shell(verb, path, text)}, call_id)
    if api == "chat":
        if verb == "write":
            return ToolCall("write", {"filePath": path, "content": text + "\n"}, call_id)
        return ToolCall("bash", {"command": _shell(verb, path, text), "description": "Remove a file"}, call_id)
    raise ValueError(f"no tool calls for api {api!r}")


# --------------------------------------------------------------------------------------------
# Reading the request: how many tool results came back since the typed message


def _is_result_part(part: Any) -> bool:
    return isinstance(part, dict) and (part.get("type") == "tool_result" or "functionResponse" in part)


def is_tool_result_message(api: str, msg: Any) -> bool:
    """A user-side message that carries tool results rather than typed text."""
    if not isinstance(msg, dict):
        return False
    if api == "messages":
        content = msg.get("content")
        return msg.get("role") == "user" and isinstance(content, list) and any(_is_result_part(p) for p in content)
    if api == "gemini":
        return msg.get("role", "user") == "user" and any(_is_result_part(p) for p in msg.get("parts") or [])
    if api == "chat":
        return msg.get("role") == "tool"
    if api == "responses":
        return msg.get("type") == "function_call_output"
    return False


def is_tool_call_message(api: str, msg: Any) -> bool:
    """An assistant message that is a tool call, not an answer (it does not end a turn)."""
    if not isinstance(msg, dict):
        return False
    if api == "messages":
        content = msg.get("content")
        return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_use" for p in content)
    if api == "gemini":
        return any(isinstance(p, dict) and "functionCall" in p for p in msg.get("parts") or [])
    if api == "chat":
        return bool(msg.get("tool_calls"))
    return False  # responses: a function_call is an item of its own, never a message


def _history(api: str, body: dict) -> list:
    key = {"responses": "input", "messages": "messages", "chat": "messages", "gemini": "contents"}[api]
    items = body.get(key)
    return items if isinstance(items, list) else []


def _results_in(api: str, item: dict) -> int:
    """How many tool results one history item carries (claude and gemini put several in one)."""
    if api == "messages":
        return sum(1 for p in item.get("content") or [] if _is_result_part(p))
    if api == "gemini":
        return sum(1 for p in item.get("parts") or [] if _is_result_part(p))
    return 1


def results_since_typed(api: str, body: dict) -> int:
    """Tool results in the history after the latest user message that was typed (not a result).

    claude merges the results of consecutive calls into one user message, so results are
    counted, not messages."""
    count = 0
    for item in reversed(_history(api, body)):
        if is_tool_result_message(api, item):
            count += _results_in(api, item)
        elif isinstance(item, dict) and item.get("role") == "user":
            break
    return count


def results_in_all(api: str, body: dict) -> int:
    """Tool results in the whole history (numbers the next call)."""
    return sum(_results_in(api, item) for item in _history(api, body) if is_tool_result_message(api, item))


def next_call(api: str | None, body: dict | None, user_text: str | None) -> ToolCall | None:
    """The tool call this turn's request gets, or None when its text reply is due."""
    if api is None or not body:
        return None
    wanted = directives(user_text)
    done = results_since_typed(api, body)
    if done >= len(wanted):
        return None
    return tool_for(api, *wanted[done], number=results_in_all(api, body) + 1)


# --------------------------------------------------------------------------------------------
# Sending the call, per API (the handler's SSE plumbing: _start_sse, _event, _end_chunks)


def send_call(handler, api: str, body: dict, call: ToolCall) -> None:
    """Stream `call` as the model's whole reply, the way `api` streams a tool call."""
    {"responses": _responses, "messages": _messages, "gemini": _gemini, "chat": _chat}[api](handler, body, call)


def _responses(handler, body: dict, call: ToolCall) -> None:
    args = json.dumps(call.arguments)
    item_id = f"fc_{call.call_id}"
    done_item = {"type": "function_call", "id": item_id, "call_id": call.call_id, "name": call.name,
                 "arguments": args, "status": "completed"}
    base = {"id": "resp_mock", "object": "response", "model": body.get("model") or "mock-model", "output": []}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    handler._start_sse()
    events = [
        ("response.created", {"response": {**base, "status": "in_progress"}}),
        ("response.in_progress", {"response": {**base, "status": "in_progress"}}),
        ("response.output_item.added", {"output_index": 0, "item": {**done_item, "arguments": "", "status": "in_progress"}}),
        ("response.function_call_arguments.delta", {"item_id": item_id, "output_index": 0, "delta": args}),
        ("response.function_call_arguments.done", {"item_id": item_id, "output_index": 0, "arguments": args}),
        ("response.output_item.done", {"output_index": 0, "item": done_item}),
        ("response.completed", {"response": {**base, "status": "completed", "output": [done_item], "usage": usage}}),
    ]
    for seq, (name, data) in enumerate(events):
        handler._event(name, {"type": name, "sequence_number": seq, **data})
    handler._end_chunks()


def _messages(handler, body: dict, call: ToolCall) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    handler._start_sse()
    handler._event("message_start", {"type": "message_start", "message": {
        "id": f"msg_mock_{call.call_id}", "type": "message", "role": "assistant", "model": body.get("model") or "mock-model",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})
    handler._event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
        "type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}})
    handler._event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": json.dumps(call.arguments)}})
    handler._event("content_block_stop", {"type": "content_block_stop", "index": 0})
    handler._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                     "usage": {"output_tokens": 5}})
    handler._event("message_stop", {"type": "message_stop"})
    handler._end_chunks()


def _gemini(handler, body: dict, call: ToolCall) -> None:
    handler._start_sse()
    handler._event(None, {
        "candidates": [{"content": {"parts": [{"functionCall": {"name": call.name, "args": call.arguments}}],
                                    "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    })
    handler._end_chunks()


def _chat(handler, body: dict, call: ToolCall) -> None:
    base = {"id": "chatcmpl-mock-tool", "object": "chat.completion.chunk", "created": 1700000000,
            "model": body.get("model") or "mock-model"}

    def chunk(delta: dict, finish: str | None = None, **extra: Any) -> None:
        handler._event(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    handler._start_sse()
    chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": call.call_id, "type": "function",
                                                                   "function": {"name": call.name, "arguments": ""}}]})
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(call.arguments)}}]})
    chunk({}, "tool_calls", usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    handler._event(None, "[DONE]")
    handler._end_chunks()
