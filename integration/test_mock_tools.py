"""Self-tests of the mock model's tool calls (no CLI needed, a second): each API's call on the
wire, the text reply once every result came back, calls numbered across the conversation,
and the requests carrying results counted as the same turn."""

from __future__ import annotations

import json
import urllib.request

import pytest

from .mock_server import MockServer
from .mock_tools import directives, next_call

A, B = "/w/a.txt", "/w/b.txt"
TYPED = f"please (write {A} one two) and (rm {B}) now"


@pytest.fixture
def server(tmp_path):
    with MockServer(log_path=tmp_path / "mock.jsonl") as srv:
        yield srv


def _post(url: str, body: dict) -> str:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read().decode()


def _data(stream: str) -> list[dict]:
    return [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]


def test_directives_are_read_in_order_with_their_text():
    assert directives(TYPED) == [("write", A, "one two"), ("rm", B, "")]
    assert directives("(write relative.txt x) (think) plain") == []      # absolute paths only
    assert next_call("responses", {"input": []}, "no directive here") is None


def test_codex_gets_exec_command_calls_then_the_text(server):
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"(write {A} it's) x"}]}
    first = _post(server.url + "/v1/responses", {"stream": True, "input": [user]})
    (item,) = [e["item"] for e in _data(first) if e["type"] == "response.output_item.done"]
    assert item["type"] == "function_call" and item["name"] == "exec_command"
    assert json.loads(item["arguments"]) == {"cmd": "printf '%s\\n' 'it'\"'\"'s' > /w/a.txt"}
    call = {"type": "function_call", "call_id": item["call_id"], "name": item["name"], "arguments": item["arguments"]}
    result = {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}
    after = _post(server.url + "/v1/responses", {"stream": True, "input": [user, call, result]})
    assert "function_call" not in after and server.requests[-1]["reply"] == "MOCK-REPLY-1"
    assert server.user_texts() == [f"(write {A} it's) x"]               # one turn, not two
    assert [r["tool_call"] is not None for r in server.requests] == [True, False]


def test_claude_gets_write_then_bash_and_merged_results_count(server):
    url = server.url + "/v1/messages?beta=true"
    user = {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                        {"type": "text", "text": TYPED}]}
    first = _data(_post(url, {"stream": True, "messages": [user]}))
    block = next(e["content_block"] for e in first if e["type"] == "content_block_start")
    args = json.loads(next(e["delta"]["partial_json"] for e in first if e["type"] == "content_block_delta"))
    assert (block["type"], block["name"], args) == ("tool_use", "Write", {"file_path": A, "content": "one two\n"})
    assert next(e for e in first if e["type"] == "message_delta")["delta"]["stop_reason"] == "tool_use"
    use1 = {"role": "assistant", "content": [{"type": "tool_use", "id": block["id"], "name": "Write", "input": args}]}
    res1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}]}
    second = _data(_post(url, {"stream": True, "messages": [user, use1, res1]}))
    block2 = next(e["content_block"] for e in second if e["type"] == "content_block_start")
    assert block2["name"] == "Bash" and block2["id"] != block["id"]
    # claude merges consecutive calls and their results into one message each
    use = {"role": "assistant", "content": use1["content"] + [{"type": "tool_use", "id": block2["id"],
                                                                  "name": "Bash", "input": {}}]}
    res = {"role": "user", "content": res1["content"] + [{"type": "tool_result", "tool_use_id": block2["id"],
                                                          "content": "ok"},
                                                         {"type": "text", "text": "<system-reminder>y</system-reminder>"}]}
    third = _post(url, {"stream": True, "messages": [user, use, res]})
    assert "tool_use" not in third and server.requests[-1]["reply"] == "MOCK-REPLY-1"
    # the next typed message: turn 2, and its call's id differs from every earlier one
    answer = {"role": "assistant", "content": [{"type": "text", "text": "MOCK-REPLY-1"}]}
    again = {"role": "user", "content": [{"type": "text", "text": f"(write {A} three)"}]}
    fourth = _data(_post(url, {"stream": True, "messages": [user, use, res, answer, again]}))
    block4 = next(e["content_block"] for e in fourth if e["type"] == "content_block_start")
    assert block4["id"] not in (block["id"], block2["id"])
    assert server.user_texts() == [TYPED, f"(write {A} three)"]
    assert [r["turn"] for r in server.requests] == [1, 1, 1, 2]


def test_gemini_and_opencode_get_their_write_tools(server):
    gem = _data(_post(server.url + "/v1beta/models/m:streamGenerateContent?alt=sse",
                      {"contents": [{"role": "user", "parts": [{"text": f"(write {A} g)"}]}]}))
    part = gem[0]["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "write_file", "args": {"file_path": A, "content": "g\n"}}}
    chat = _data(_post(server.url + "/v1/chat/completions",
                       {"stream": True, "messages": [{"role": "user", "content": f"(rm {A})"}]}))
    (call,) = chat[0]["choices"][0]["delta"]["tool_calls"]
    assert call["function"]["name"] == "bash" and chat[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(chat[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"])["command"] == \
        "rm -f /w/a.txt"
    done = _post(server.url + "/v1/chat/completions", {"stream": True, "messages": [
        {"role": "user", "content": f"(rm {A})"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": call["id"], "type": "function",
                                                               "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "ok"}]})
    assert "tool_calls" not in done and server.requests[-1]["reply"] == "MOCK-REPLY-1"
