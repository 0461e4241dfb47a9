"""Each tool's own transcript read as turns: what the person said and what the agent answered, nothing else."""

from __future__ import annotations

import json

from wrapagent.history.transcript_turns import (claude_turns, codex_turns, demo_turns, gemini_turns, opencode_turns,
                                                turns_of)


def jsonl(*entries: object) -> bytes:
    return b"\n".join(json.dumps(e).encode() for e in entries) + b"\nnot json\n"


TURNS = [{"user": "hello", "agent": "hi there\n\nanything else?"}, {"user": "bye", "agent": "ok"}]


def test_codex_item_events_and_the_older_model_messages_without_context() -> None:
    def item(kind: str, text: str) -> dict:
        return {"type": "event_msg", "payload": {"type": "item_completed",
                                                 "item": {"type": kind, "content": [{"type": "Text", "text": text}]}}}

    assert codex_turns(jsonl(item("UserMessage", "hello"), item("AgentMessage", "hi there"),
                             item("AgentMessage", "anything else?"), item("UserMessage", "bye"),
                             item("AgentMessage", "ok"))) == TURNS

    def message(role: str, text: str) -> dict:
        return {"type": "response_item", "payload": {"type": "message", "role": role,
                                                     "content": [{"type": "input_text", "text": text}]}}

    assert codex_turns(jsonl(message("user", "<environment_context>cwd</environment_context>"),
                             message("user", "hello"), message("assistant", "hi there\n\nanything else?"),
                             message("user", "bye"), message("assistant", "ok"))) == TURNS


def test_claude_leaves_out_tool_results_slash_command_echoes_and_side_chains() -> None:
    def entry(kind: str, content: object, **extra: object) -> dict:
        return {"type": kind, "message": {"role": kind, "content": content}, **extra}

    data = jsonl(entry("user", "hello"), entry("assistant", [{"type": "text", "text": "hi there"},
                                                             {"type": "tool_use", "name": "ls"}]),
                 entry("user", [{"type": "tool_result", "content": "a.txt"}]),
                 entry("assistant", [{"type": "thinking", "thinking": "hm"},
                                     {"type": "text", "text": "anything else?"}]),
                 entry("user", "<command-name>/model</command-name>"), entry("user", "side", isSidechain=True),
                 entry("user", "bye"), entry("assistant", [{"type": "text", "text": "ok"}]))
    assert claude_turns(data) == TURNS


def test_gemini_lines_or_one_document() -> None:
    entries = [{"type": "user", "content": "hello"}, {"type": "gemini", "content": "hi there"},
               {"type": "gemini", "parts": [{"text": "anything else?"}]}, {"type": "info", "content": "x"},
               {"type": "user", "content": "bye"}, {"type": "gemini", "content": "ok"}]
    assert gemini_turns(jsonl(*entries)) == TURNS
    assert gemini_turns(json.dumps({"messages": entries}).encode()) == TURNS


def test_opencode_export_after_a_line_of_its_own_and_without_synthetic_parts() -> None:
    def message(role: str, *texts: str, synthetic: bool = False) -> dict:
        return {"info": {"role": role}, "parts": [{"type": "text", "text": t, "synthetic": synthetic} for t in texts]}

    doc = {"messages": [message("user", "hello"), message("user", "<context/>", synthetic=True),
                        message("assistant", "hi there"), message("assistant", "anything else?"),
                        message("user", "bye"), message("assistant", "ok")]}
    assert opencode_turns(b"Exporting session...\n" + json.dumps(doc).encode()) == TURNS
    assert opencode_turns(b"not json at all") == []


def test_the_demo_agents_log_and_several_conversations_in_order() -> None:
    first = jsonl({"type": "user", "text": "hello"}, {"type": "assistant", "text": "hi there"},
                  {"type": "assistant", "text": "anything else?"})
    second = jsonl({"type": "user", "text": "bye"}, {"type": "assistant", "text": "ok"})
    assert demo_turns(first + second) == TURNS
    assert turns_of("demo", [first, second]) == TURNS


def test_an_unknown_tool_has_no_reader_and_a_reply_before_any_message_stands_alone() -> None:
    assert turns_of("aider", [b"{}"]) is None
    assert demo_turns(jsonl({"type": "assistant", "text": "welcome"})) == [{"user": "", "agent": "welcome"}]
