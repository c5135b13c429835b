"""Codex's control-plane items in the Responses spoke (sans-IO): namespace tools,
client-run tool_search, additional_tools, agent_message, array tool outputs, and
the cut-off call that is never presented as runnable."""

from __future__ import annotations

import json

import pytest

from tokenyard.apis.openai_responses.requests import (
    TOOL_SEARCH,
    call_routes,
    codex_request_kind,
    codex_thread_key,
    to_conversation,
)
from tokenyard.apis.openai_responses.schema import ResponsesRequest
from tokenyard.apis.openai_responses.stream import ResponseStream
from tokenyard.apis.replay_state import ReplayState
from tokenyard.conversation import ToolCall, ToolResult
from tokenyard.events import Finish, ToolCallDelta, ToolCallIncomplete, ToolCallReady, ToolCallStart
from tokenyard.faults import ApiError
from tokenyard.prompting.profiles import PROFILES
from tokenyard.prompting.replay import NO_TOOLS_LOADED, loaded_tools_text, template_input
from tokenyard.prompting.template import ChatTemplate
from tokenyard.sealing import ReasoningSeal

from ..fixtures import load_tokenizer

CLOSE = {
    "type": "function",
    "name": "close_agent",
    "description": "Close an agent.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
}
NAMESPACE = {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [CLOSE]}
SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "# Tool discovery",
    "parameters": {
        "type": "object",
        "properties": {"limit": {"type": "number"}, "query": {"type": "string"}},
        "required": ["query"],
    },
}


def request(items, tools=(SEARCH,), **extra) -> ResponsesRequest:
    return ResponsesRequest.model_validate({"model": "m", "input": items, "tools": list(tools), **extra})


def user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def encoder(wire: ResponsesRequest, **kwargs) -> ResponseStream:
    routes = call_routes(wire, to_conversation(wire))
    return ResponseStream("resp_1", {}, created_at=0, routes=routes, **kwargs)


def call_events(name: str, arguments: str, call_id: str = "call_1"):
    return [
        ToolCallStart(0, call_id, name),
        ToolCallDelta(0, arguments),
        ToolCallReady(0, call_id, name, arguments, ""),
    ]


def test_namespace_tools_reach_the_model_under_one_name_with_the_namespace_description():
    empty = {"type": "namespace", "name": "empty", "description": "", "tools": []}
    bare = {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "f", "description": ""}]}
    conversation = to_conversation(request([user("hi")], tools=[NAMESPACE, empty, bare]))
    assert [(t.name, t.namespace, t.model_name) for t in conversation.tools] == [
        ("close_agent", "multi_agent_v1", "multi_agent_v1__close_agent"),
        ("f", "ns", "ns__f"),
    ]
    assert conversation.tools[0].description == "multi_agent_v1: Sub-agents.\n\nClose an agent."
    assert conversation.tools[1].description == ""
    assert [t.name for t in conversation.model_tools()] == ["multi_agent_v1__close_agent", "ns__f"]


def test_a_namespace_holds_only_functions_and_custom_tools():
    nested = {"type": "namespace", "name": "outer", "tools": [NAMESPACE]}
    with pytest.raises(ApiError, match=r"tools\.0\.tools\.0"):
        to_conversation(request([user("hi")], tools=[nested]))


def test_a_namespaced_call_streams_bare_with_its_namespace_and_dispatch_carries_it():
    wire = request([user("hi")], tools=[NAMESPACE])
    stream = encoder(wire, dispatch=True)
    frames = [f for e in call_events("multi_agent_v1__close_agent", '{"target": "a"}') for _, f in stream.feed(e)]
    added = frames[0]["item"]
    assert (added["type"], added["name"], added["namespace"]) == ("function_call", "close_agent", "multi_agent_v1")
    [dispatch] = [f for f in frames if f["type"] == "response.tool_call_dispatch"]
    assert dispatch["item"]["namespace"] == "multi_agent_v1"
    done = frames[-1]["item"]
    assert done["arguments"] == '{"target": "a"}' and done["status"] == "completed"


def test_namespaced_history_renders_back_under_the_model_facing_name_byte_exactly():
    memory = ReplayState(ReasoningSeal(bytes(32)))
    wire = request([user("hi")], tools=[NAMESPACE])
    stream = encoder(wire, replay=memory)
    written = '{"target":  "a"}'  # the model's own spacing
    frames = [f for e in call_events("multi_agent_v1__close_agent", written) for _, f in stream.feed(e)]
    echoed = {**frames[-1]["item"], "arguments": json.dumps({"target": "a"})}  # re-serialised by the client
    output = {"type": "function_call_output", "call_id": "call_1", "output": "invalid agent id"}
    conversation = to_conversation(request([user("hi"), echoed, output], tools=[NAMESPACE]), replay=memory)
    call = conversation.messages[1].parts[0]
    assert isinstance(call, ToolCall) and (call.name, call.namespace, call.arguments) == (
        "close_agent",
        "multi_agent_v1",
        written,
    )
    result = conversation.messages[2].parts[0]
    assert isinstance(result, ToolResult) and result.name == "multi_agent_v1__close_agent"
    prepared = template_input(
        conversation, PROFILES["qwen3"], ChatTemplate(load_tokenizer("qwen3").chat_template).traits
    )
    [rendered] = prepared.messages[1]["tool_calls"]
    assert rendered["function"]["name"] == "multi_agent_v1__close_agent"
    assert rendered["function"]["arguments"] == written


def test_tool_search_is_offered_as_a_function_with_codex_schema():
    conversation = to_conversation(request([user("hi")]))
    [search] = conversation.tools
    assert (search.name, search.description, search.parameters) == (
        TOOL_SEARCH,
        SEARCH["description"],
        SEARCH["parameters"],
    )


def test_a_tool_search_call_streams_as_a_tool_search_call_item_with_object_arguments():
    stream = encoder(request([user("hi")]), dispatch=True)
    frames = [f for e in call_events(TOOL_SEARCH, '{"query": "close agent", "limit": 4}') for _, f in stream.feed(e)]
    assert not [f for f in frames if f["type"].startswith("response.function_call_arguments")]
    item = frames[-1]["item"]
    assert frames[-1]["type"] == "response.output_item.done"
    assert item == {
        "id": item["id"],
        "type": "tool_search_call",
        "status": "completed",
        "call_id": "call_1",
        "execution": "client",
        "arguments": {"query": "close agent", "limit": 4},
    }


def test_tool_search_history_replays_the_call_and_lists_the_loaded_tools_in_place():
    memory = ReplayState(ReasoningSeal(bytes(32)))
    stream = encoder(request([user("hi")]), replay=memory)
    written = '{"query": "close agent", "limit": 4}'
    call = [f for e in call_events(TOOL_SEARCH, written) for _, f in stream.feed(e)][-1]["item"]
    output = {
        "type": "tool_search_output",
        "call_id": "call_1",
        "execution": "client",
        "status": "completed",
        "tools": [NAMESPACE],
    }
    wire = request([user("hi"), call, output])
    conversation = to_conversation(wire, replay=memory)
    replayed = conversation.messages[1].parts[0]
    assert isinstance(replayed, ToolCall) and (replayed.name, replayed.arguments) == (TOOL_SEARCH, written)
    result = conversation.messages[2].parts[0]
    assert isinstance(result, ToolResult) and [t.model_name for t in result.loaded_tools] == [
        "multi_agent_v1__close_agent"
    ]
    # Declared from here on (parsing, typing, routing), never in the system tool list.
    assert [t.name for t in conversation.tools] == [TOOL_SEARCH]
    assert "multi_agent_v1__close_agent" in [t.name for t in conversation.model_tools()]
    assert call_routes(wire, conversation)["multi_agent_v1__close_agent"].namespace == "multi_agent_v1"
    prepared = template_input(
        conversation, PROFILES["qwen3"], ChatTemplate(load_tokenizer("qwen3").chat_template).traits
    )
    assert [t["function"]["name"] for t in prepared.tools] == [TOOL_SEARCH]
    tool_message = prepared.messages[2]
    assert tool_message["role"] == "tool" and tool_message["content"] == loaded_tools_text(result.loaded_tools)
    listed = json.loads(tool_message["content"].splitlines()[1])
    assert listed == {
        "name": "multi_agent_v1__close_agent",
        "description": "multi_agent_v1: Sub-agents.\n\nClose an agent.",
        "parameters": CLOSE["parameters"],
    }
    assert loaded_tools_text([]) == NO_TOOLS_LOADED


def test_additional_tools_items_declare_tools():
    functions = {
        "type": "namespace",
        "name": "functions",
        "tools": [{"type": "custom", "name": "exec", "description": "JS"}],
    }
    item = {"type": "additional_tools", "role": "developer", "tools": [functions, NAMESPACE]}
    wire = request([item, user("hi")], tools=[])
    conversation = to_conversation(wire)
    assert [t.model_name for t in conversation.tools] == ["functions__exec", "multi_agent_v1__close_agent"]
    route = call_routes(wire, conversation)["functions__exec"]
    assert (route.item_type, route.name, route.namespace) == ("custom_tool_call", "exec", "functions")
    assert [m.role for m in conversation.messages] == ["user"]


def test_agent_messages_and_array_tool_outputs_keep_their_content():
    agent = {
        "type": "agent_message",
        "author": "worker-1",
        "content": [{"type": "input_text", "text": "done: 3 files"}],
    }
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    output = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_text", "text": "first"}, {"type": "input_text", "text": "second"}],
    }
    conversation = to_conversation(request([user("hi"), call, output, agent], tools=[]))
    result = conversation.messages[2].parts[0]
    assert isinstance(result, ToolResult) and [p.text for p in result.content] == ["first", "second"]  # type: ignore[union-attr]
    assert conversation.messages[3].text() == "Message from agent worker-1:done: 3 files"


def test_a_call_cut_off_is_never_presented_as_runnable():
    stream = encoder(request([user("hi")], tools=[CLOSE]))
    frames = stream.feed(ToolCallStart(0, "call_1", "close_agent")) + stream.feed(ToolCallDelta(0, '{"target": "a'))
    raw = '<tool_call>{"name": "close_agent", "arguments": {"target": "a'
    frames += stream.feed(ToolCallIncomplete(0, "call_1", "close_agent", '{"target": "a', raw, "truncated"))
    frames += stream.feed(Finish("length"))
    # No call item at all: the model's text for it is a message, cut off as the response is.
    assert not [f for _, f in frames if f.get("item", {}).get("type") == "function_call"]
    assert not [f for _, f in frames if f["type"].startswith("response.function_call_arguments")]
    [cut] = stream.response()["output"]
    assert cut["type"] == "message" and cut["content"][0]["text"] == raw
    assert cut["status"] == "incomplete" and stream.response()["status"] == "incomplete"


def test_codex_thread_headers_key_the_prefix_watch_and_compaction_is_labelled():
    assert codex_thread_key({"thread-id": "t1"}) == "t1"
    assert codex_thread_key({"thread-id": "t2", "x-codex-parent-thread-id": "t1"}) == "t1/t2"
    assert codex_thread_key({}) is None
    wire = request([user("hi")], prompt_cache_key="k")
    assert to_conversation(wire, thread_key="t1/t2").session_key == "t1/t2"
    assert to_conversation(wire).session_key == "k"
    compact = request([user("hi"), user("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff")])
    assert codex_request_kind(compact) == "compaction" and to_conversation(compact).request_kind == "compaction"
    turn = json.dumps({"thread_id": "t1", "request_kind": "compaction"})
    tagged = request([user("summarise")], client_metadata={"x-codex-turn-metadata": turn})
    assert codex_request_kind(tagged) == "compaction"
    # Watched apart from the thread's own turns.
    assert to_conversation(tagged, thread_key="t1").session_key == "t1#compaction"
    assert codex_request_kind(wire) is None
    assert codex_request_kind(request([user("hi")], client_metadata={"request_kind": "compaction"})) == "compaction"


def test_tool_choice_names_a_namespaced_tool_by_its_namespace():
    choice = {"type": "function", "name": "close_agent", "namespace": "multi_agent_v1"}
    conversation = to_conversation(request([user("hi")], tools=[NAMESPACE], tool_choice=choice))
    assert (conversation.tool_choice.mode, conversation.tool_choice.name) == ("named", "multi_agent_v1__close_agent")
    with pytest.raises(ApiError, match="no function tool named 'close_agent'"):
        to_conversation(
            request([user("hi")], tools=[NAMESPACE], tool_choice={"type": "function", "name": "close_agent"})
        )
