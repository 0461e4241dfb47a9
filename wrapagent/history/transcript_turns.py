"""Each tool's own transcript read as turns: the user's message and the agent's reply, in order.

One reader per format (measured on the pinned releases against the mock model):

| tool     | file (copied into the session's `transcript/`)  | user message / agent reply                           |
|----------|-------------------------------------------------|------------------------------------------------------|
| codex    | rollout JSONL                                   | `event_msg` `item_completed` `UserMessage` / `AgentMessage` (else `response_item` messages) |
| claude   | `<uuid>.jsonl`                                  | `type: user` with text content / `type: assistant` text blocks |
| gemini   | `session-*.jsonl` (or one `.json`)              | `type: user` / `type: gemini` (`content` text or parts) |
| opencode | `opencode export` JSON                          | `messages[].info.role` user / assistant, `parts[].text` |
| demo     | the demo agent's JSONL                          | `type: user` / `type: assistant`                     |

A turn is `{"user": text, "agent": text}`; a transcript that cannot be
read gives no turns (the caller falls back to the recording). Tool calls,
thinking and system context are left out: what a person said and what the
agent answered.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


def jsonl_objects(data: bytes) -> list[dict]:
    """The JSON objects of a JSONL text, one per line; other lines (a cut one, a stray value) skipped."""
    out = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _text_of(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text", "Text")) -> str:
    """The text of a message's content: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and (block.get("type") in kinds or ("text" in block and "type" not in block)):
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


class _Turns:
    """Builds turns from a sequence of user and agent texts."""

    def __init__(self) -> None:
        self.turns: list[dict[str, str]] = []

    def user(self, text: str) -> None:
        if text.strip():
            self.turns.append({"user": text, "agent": ""})

    def agent(self, text: str) -> None:
        if not text.strip():
            return
        if not self.turns:
            self.turns.append({"user": "", "agent": text})
            return
        last = self.turns[-1]
        last["agent"] = f"{last['agent']}\n\n{text}" if last["agent"] else text


CODEX_CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions instructions>")


def codex_turns(data: bytes) -> list[dict[str, str]]:
    entries = jsonl_objects(data)
    turns = _Turns()
    for entry in entries:
        payload = entry.get("payload")
        if entry.get("type") != "event_msg" or not isinstance(payload, dict):
            continue
        item = payload.get("item")
        if payload.get("type") != "item_completed" or not isinstance(item, dict):
            continue
        if item.get("type") == "UserMessage":
            turns.user(_text_of(item.get("content")))
        elif item.get("type") == "AgentMessage":
            turns.agent(_text_of(item.get("content")))
    if turns.turns:
        return turns.turns
    for entry in entries:  # releases without item events: the model's own messages
        payload = entry.get("payload")
        if entry.get("type") != "response_item" or not isinstance(payload, dict) or payload.get("type") != "message":
            continue
        text = _text_of(payload.get("content"))
        if payload.get("role") == "user" and not text.lstrip().startswith(CODEX_CONTEXT):
            turns.user(text)
        elif payload.get("role") == "assistant":
            turns.agent(text)
    return turns.turns


def claude_turns(data: bytes) -> list[dict[str, str]]:
    turns = _Turns()
    for entry in jsonl_objects(data):
        message = entry.get("message")
        if not isinstance(message, dict) or entry.get("isMeta") or entry.get("isSidechain"):
            continue
        if entry.get("type") == "user" and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content):
                continue  # a tool's result, not something the person typed
            text = _text_of(content)
            if text.lstrip().startswith(("<command-name>", "<local-command-stdout>", "<command-message>")):
                continue  # a slash command's echo
            turns.user(text)
        elif entry.get("type") == "assistant":
            turns.agent(_text_of(message.get("content"), ("text",)))
    return turns.turns


def gemini_turns(data: bytes) -> list[dict[str, str]]:
    entries = jsonl_objects(data)
    if len(entries) == 1 and isinstance(entries[0].get("messages"), list):
        entries = [m for m in entries[0]["messages"] if isinstance(m, dict)]  # one JSON document
    turns = _Turns()
    for entry in entries:
        kind = entry.get("type")
        content = entry.get("content")
        if content is None:
            content = entry.get("parts")
        if kind == "user":
            turns.user(_text_of(content))
        elif kind in ("gemini", "model", "assistant"):
            turns.agent(_text_of(content))
    return turns.turns


def opencode_turns(data: bytes) -> list[dict[str, str]]:
    try:
        doc = json.loads(data)
    except ValueError:
        start = data.find(b"{")  # `opencode export` may print a line before the JSON
        try:
            doc = json.loads(data[start:]) if start >= 0 else None
        except ValueError:
            return []
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return []
    turns = _Turns()
    for message in doc["messages"]:
        if not isinstance(message, dict):
            continue
        info = message.get("info") if isinstance(message.get("info"), dict) else {}
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text"
                 and not p.get("synthetic")]
        text = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        if info.get("role") == "user":
            turns.user(text)
        elif info.get("role") == "assistant":
            turns.agent(text)
    return turns.turns


def demo_turns(data: bytes) -> list[dict[str, str]]:
    turns = _Turns()
    for entry in jsonl_objects(data):
        text = entry.get("text")
        if not isinstance(text, str):
            continue
        if entry.get("type") == "user":
            turns.user(text)
        elif entry.get("type") == "assistant":
            turns.agent(text)
    return turns.turns


READERS: dict[str, Callable[[bytes], list[dict[str, str]]]] = {
    "codex": codex_turns,
    "claude": claude_turns,
    "gemini": gemini_turns,
    "opencode": opencode_turns,
    "demo": demo_turns,
}


def turns_of(tool: str, files: Iterable[bytes]) -> list[dict[str, str]] | None:
    """The turns of the tool's transcripts, oldest conversation first; None when there is no reader."""
    reader = READERS.get(tool)
    if reader is None:
        return None
    out: list[dict[str, str]] = []
    for data in files:
        try:
            out.extend(reader(data))
        except (ValueError, TypeError, AttributeError, KeyError):
            continue
    return out
