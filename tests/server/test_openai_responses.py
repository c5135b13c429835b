"""The OpenAI Responses API, with the official `openai` SDK as the client, against a
real server on loopback whose scripted model answers in several real families'
wire formats; plus the sans-IO pieces (request mapping, custom-input decoding)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tokenyard.apis.openai_responses.requests import to_conversation
from tokenyard.apis.openai_responses.schema import ResponsesRequest
from tokenyard.apis.openai_responses.stream import CustomInputDecoder, ResponseStream
from tokenyard.apis.replay_state import ReplayState
from tokenyard.conversation import Reasoning, ToolCall, ToolResult
from tokenyard.engines.scripted import SCRIPTED_COMMAND
from tokenyard.events import Finish, ReasoningDelta, TextDelta
from tokenyard.faults import ENGINE_FAILED_MESSAGE, EngineError
from tokenyard.sealing import ReasoningSeal
from tokenyard.server.app import ServerConfig

from .serving import SERVER_KEY, prompt_log, running_server

EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command in a PTY.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
        "required": ["cmd"],
    },
    "strict": False,
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Use the `apply_patch` tool to edit files.",
    "format": {
        "type": "grammar",
        "syntax": "lark",
        "definition": 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF',
    },
}
HOSTED = [
    {"type": "web_search"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "local_shell"},
    {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example"},
]
DEVELOPER = {
    "type": "message",
    "role": "developer",
    "content": [{"type": "input_text", "text": "You are Codex, a coding agent."}],
}
PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Hello "world" \\ ✓ 😀\n*** End Patch'

FAMILIES = [
    # (fixture, reasoning parser override, tool parser override)
    ("qwen3", None, None),
    ("qwen3-coder", "qwen3", None),
    ("kimi-k2", "kimi_k25", "kimi_k2"),
    ("gpt-oss", None, None),
]


def client(url: str, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, **kwargs)


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def codex_body(input_items: list, **overrides) -> dict:
    """A request shaped like Codex 0.169.0's (REFERENCE §4)."""
    return {
        "model": "test/model",
        "input": input_items,
        "tools": [EXEC, APPLY_PATCH, *HOSTED],
        "tool_choice": "auto",
        "parallel_tool_calls": True,  # as Codex 0.169.0 sends it (CODEX_NOTES)
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "codex-session-1",
        **overrides,
    }


def stream(c: openai.OpenAI, body: dict):
    with c.responses.stream(**body) as s:
        events = list(s)
        final = s.get_final_response()
    return final, events


def check_stream(events, final) -> None:
    """Sequence numbers grow by one from 0; streamed item ids are the final ones."""
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    added = [e.item.id for e in events if e.type == "response.output_item.added"]
    done = [e.item.id for e in events if e.type == "response.output_item.done"]
    assert added == done == [item.id for item in final.output]
    assert all(getattr(e, "item_id", None) in (None, *added) for e in events)
    assert events[-1].type == "response.completed" and events[-1].response.id == final.id


def replayed(item) -> dict:
    """An output item as Codex sends it back: reasoning without its raw content."""
    data = item.model_dump(exclude_none=True)
    if item.type == "reasoning":
        data.pop("content", None)
        data.pop("status", None)
    return data


@pytest.mark.parametrize("family,reasoning,tools", FAMILIES)
def test_codex_tool_loop_replays_reasoning_byte_for_byte(family, reasoning, tools, tmp_path):
    with running_server(family, reasoning=reasoning, tools=tools, tmp_path=tmp_path) as (url, state):
        c = client(url)
        turn1 = [DEVELOPER, user("List the files.")]
        first, events = stream(c, codex_body(turn1))
        check_stream(events, first)
        assert [i.type for i in first.output] == ["reasoning", "function_call"]
        thought, call = first.output
        text = thought.content[0].text
        assert text and thought.summary[0].text == text  # summary "auto": the reasoning itself
        assert thought.encrypted_content.startswith("tky1.") and text not in thought.encrypted_content
        assert call.name == "exec_command" and json.loads(call.arguments) == {"cmd": SCRIPTED_COMMAND}
        assert "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta") == call.arguments
        summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
        assert summary == text == "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
        usage = first.usage
        assert (
            usage.input_tokens > 0
            and usage.output_tokens > 0
            and usage.total_tokens == usage.input_tokens + usage.output_tokens
        )
        assert 0 < usage.output_tokens_details.reasoning_tokens < usage.output_tokens
        assert usage.input_tokens_details.cached_tokens == 0
        assert [t.name for t in first.tools] == ["exec_command", "apply_patch"]  # hosted tools were left out

        output = {"type": "function_call_output", "call_id": call.call_id, "output": "tokenyard-scripted-42"}
        second, events = stream(c, codex_body([*turn1, *(replayed(i) for i in first.output), output]))
        check_stream(events, second)
        assert [i.type for i in second.output] == ["reasoning", "message"]
        assert "tokenyard-scripted-42" in second.output_text and second.status == "completed"

        sent = prompt_log(state)
        assert len(sent) == 2 and all(r["session"] == "codex-session-1" for r in sent)
        assert "web_search" not in sent[0]["prompt_text"] and "apply_patch" in sent[0]["prompt_text"]
        # Turn 1's reasoning, restored from encrypted_content alone, and its call re-enter turn 2.
        assert text in sent[1]["prompt_text"] and "tokenyard-scripted-42" in sent[1]["prompt_text"]
        assert sent[1]["prefix_matched_tokens"] >= sent[0]["prompt_tokens"]


def test_custom_tool_call_streams_its_input_and_replays_exactly(tmp_path):
    script = [
        [{"reasoning": "A patch is needed."}, {"call": {"name": "apply_patch", "arguments": {"input": PATCH}}}],
        [{"text": "Patched."}],
    ]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, state):
        c = client(url)
        turn1 = [DEVELOPER, user("Add hello.txt")]
        first, events = stream(c, codex_body(turn1))
        check_stream(events, first)
        assert [i.type for i in first.output] == ["reasoning", "custom_tool_call"]
        call = first.output[1]
        assert call.type == "custom_tool_call" and call.name == "apply_patch" and call.input == PATCH
        deltas = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
        assert "".join(deltas) == PATCH  # decoded text, not JSON (sent once the call is complete)
        assert [e.input for e in events if e.type == "response.custom_tool_call_input.done"] == [PATCH]
        assert not any(e.type.startswith("response.function_call") for e in events)

        output = {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success. Updated: A hello.txt"}
        second, _ = stream(c, codex_body([*turn1, *(replayed(i) for i in first.output), output]))
        assert second.output_text == "Patched."
        sent = prompt_log(state)
        # The model's own arguments text re-enters the prompt unchanged.
        assert sent[1]["prompt_text"].startswith(sent[0]["prompt_text"])
        assert "Success. Updated: A hello.txt" in sent[1]["prompt_text"]


def test_custom_tool_in_an_xml_parameter_family(tmp_path):
    script = [[{"call": {"name": "apply_patch", "arguments": {"input": PATCH}}}]]
    with running_server("qwen3-coder", reasoning="qwen3", script=script, tmp_path=tmp_path) as (url, _):
        final, events = stream(client(url), codex_body([user("go")]))
        assert [(i.type, i.input) for i in final.output] == [("custom_tool_call", PATCH)]
        assert "".join(e.delta for e in events if e.type == "response.custom_tool_call_input.delta") == PATCH


def test_interleaved_reasoning_and_calls_are_one_assistant_turn(tmp_path):
    script = [
        [
            {"reasoning": "First look at the tree."},
            {"call": {"name": "exec_command", "arguments": {"cmd": "ls"}}},
            {"reasoning": "Then read the readme."},
            {"call": {"name": "exec_command", "arguments": {"cmd": "cat README.md"}}},
        ],
        [{"text": "Done."}],
    ]
    with running_server("qwen3.5", script=script, tmp_path=tmp_path) as (url, state):
        c = client(url)
        first, events = stream(c, codex_body([user("go")]))
        check_stream(events, first)
        assert [i.type for i in first.output] == ["reasoning", "function_call", "reasoning", "function_call"]
        calls = [i for i in first.output if i.type == "function_call"]
        outputs = [
            {"type": "function_call_output", "call_id": x.call_id, "output": f"out-{n}"} for n, x in enumerate(calls)
        ]
        stream(c, codex_body([user("go"), *(replayed(i) for i in first.output), *outputs]))
        prompt = prompt_log(state)[1]["prompt_text"]
        order = [
            prompt.index(s)
            for s in (
                "First look at the tree.",
                "ls\n</parameter>",
                "Then read the readme.",
                "cat README.md",
                "out-0",
                "out-1",
            )
        ]
        assert order == sorted(order)


def test_text_answer_non_streaming(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        response = client(url).responses.create(
            model="test/model",
            instructions="Be terse.",
            input="hello there",
            max_output_tokens=300,
            temperature=0.2,
            metadata={"k": "v"},
            store=True,
        )
        assert response.status == "completed" and response.output_text == "You said: hello there"
        thought, message = response.output
        assert thought.summary == [] and thought.encrypted_content is None  # neither was asked for
        assert thought.content[0].text and message.role == "assistant" and message.status == "completed"
        assert (
            response.instructions,
            response.max_output_tokens,
            response.temperature,
            response.metadata,
            response.store,
        ) == ("Be terse.", 300, 0.2, {"k": "v"}, True)
        assert "Be terse." in prompt_log(state)[0]["prompt_text"]
        # Nothing was stored, so there is nothing to retrieve.
        assert httpx.get(f"{url}/v1/responses/{response.id}").status_code in (404, 405)


def test_concise_summary_is_the_first_paragraph(tmp_path):
    script = [[{"reasoning": "Short plan.\n\nLong details that a concise summary leaves out."}, {"text": "ok"}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, _):
        final, events = stream(client(url), {"model": "test/model", "input": "go", "reasoning": {"summary": "concise"}})
        thought = final.output[0]
        assert thought.summary[0].text == "Short plan."
        assert "Long details" in thought.content[0].text
        assert "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta") == "Short plan."


def test_kimi_keeps_the_models_own_call_ids(tmp_path):
    script = [
        [
            {"call": {"name": "exec_command", "arguments": {"cmd": "ls"}}},
            {"call": {"name": "exec_command", "arguments": {"cmd": "pwd"}}},
        ]
    ]
    with running_server("kimi-k2", reasoning="kimi_k25", tools="kimi_k2", script=script, tmp_path=tmp_path) as (url, _):
        final, events = stream(client(url), codex_body([user("go")], reasoning={"effort": "none"}))
        check_stream(events, final)
        assert [(i.call_id, json.loads(i.arguments)["cmd"]) for i in final.output] == [
            ("functions.exec_command:0", "ls"),
            ("functions.exec_command:1", "pwd"),
        ]


def test_max_output_tokens_ends_incomplete(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        c = client(url)
        with c.responses.stream(**codex_body([user("go")], max_output_tokens=20)) as s:
            events = list(s)
        last = events[-1]
        assert last.type == "response.incomplete"
        assert last.response.status == "incomplete" and last.response.incomplete_details.reason == "max_output_tokens"
        assert last.response.usage.output_tokens == 20
        assert [e.sequence_number for e in events] == list(range(len(events)))
        done = [e.item for e in events if e.type == "response.output_item.done"]
        assert done and done[-1].status == "incomplete" and [i.id for i in last.response.output] == [i.id for i in done]
        response = c.responses.create(model="test/model", input="go", max_output_tokens=5)
        assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"


class Failing:
    """Wraps the engine and crashes it after a few chunks."""

    def __init__(self, inner):
        self.inner = inner

    def info(self):
        return self.inner.info()

    async def start(self):
        return None

    async def close(self):
        return None

    async def generate(self, request):
        n = 0
        async for chunk in self.inner.generate(request):
            yield chunk
            n += 1
            if n == 5:
                raise EngineError("the engine crashed")


def test_engine_failure_is_response_failed(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        state.pipeline.engine = Failing(state.pipeline.engine)
        c = client(url)
        with c.responses.stream(model="test/model", input="hi", reasoning={"summary": "auto"}) as s:
            events = list(s)
        last = events[-1]
        assert last.type == "response.failed" and last.response.status == "failed"
        assert last.response.error.message == ENGINE_FAILED_MESSAGE and last.response.error.code == "server_error"
        assert [e.sequence_number for e in events] == list(range(len(events)))
        # The item cut short is closed, not left dangling.
        assert events[-2].type == "response.output_item.done" and events[-2].item.status == "incomplete"
        with pytest.raises(openai.InternalServerError):
            c.responses.create(model="test/model", input="hi")


def test_stateful_features_are_refused_clearly(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        c = client(url)
        cases = [
            ({"previous_response_id": "resp_123"}, "previous_response_id"),
            ({"background": True}, "background"),
            ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input.0"),
        ]
        for extra, param in cases:
            with pytest.raises(openai.BadRequestError) as caught:
                c.responses.create(**{"model": "test/model", "input": "hi", **extra})
            body = caught.value.body
            assert body["param"] == param and "stateless" in body["message"] and body["type"] == "invalid_request_error"


def test_bad_requests_get_openai_errors(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):

        def post(body):
            return httpx.post(f"{url}/v1/responses", json=body, timeout=30)

        reply = post({"model": "test/model", "input": ["not an item"]})
        assert reply.status_code == 400 and reply.json()["error"]["param"] == "input.0"
        reply = post({"model": "test/model", "input": "hi", "tools": [{"type": "function", "description": "no name"}]})
        assert reply.status_code == 400 and reply.json()["error"]["param"] == "tools.0"
        reply = post(
            {"model": "test/model", "input": "hi", "tools": [EXEC], "tool_choice": {"type": "function", "name": "nope"}}
        )
        assert reply.status_code == 400 and reply.json()["error"]["param"] == "tool_choice"
        reply = post({"model": "test/model", "input": [{"type": "function_call", "name": "x"}]})
        assert reply.status_code == 400 and "call_id" in reply.json()["error"]["message"]
        reply = post({"model": "other", "input": "hi"})
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "model_not_found"
        reply = httpx.post(
            f"{url}/v1/responses", content=b"{", headers={"content-type": "application/json"}, timeout=30
        )
        assert reply.status_code == 400 and reply.json()["error"]["type"] == "invalid_request_error"


def test_foreign_reasoning_and_client_ids_are_tolerated(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        history = [
            user("go"),
            {
                "type": "reasoning",
                "id": "rs_foreign",
                "summary": [{"type": "summary_text", "text": "Another server summarised this."}],
                "encrypted_content": "gAAAAABoForeignOpaqueBlob==",
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "tky1.not-really-ours"},
            {
                "type": "function_call",
                "id": "whatever-1",
                "call_id": "toolu01A",
                "name": "exec_command",
                "arguments": '{"cmd":  "ls"}',
            },
            {
                "type": "function_call_output",
                "call_id": "toolu01A",
                "output": [{"type": "input_text", "text": "a.txt"}],
            },
        ]
        final, _ = stream(client(url), codex_body(history))
        assert final.output[-1].type == "message"
        prompt = prompt_log(state)[0]["prompt_text"]
        assert "Another server summarised this." in prompt and '{"cmd":  "ls"}' in prompt and "a.txt" in prompt
        assert "gAAAAB" not in prompt and "tky1." not in prompt


def test_session_header_when_there_is_no_prompt_cache_key(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        client(url, default_headers={"session_id": "hdr-session"}).responses.create(model="test/model", input="hi")
        assert prompt_log(state)[0]["session"] == "hdr-session"


def test_streaming_tool_dispatch_comes_before_arguments_done(tmp_path):
    script = [
        [{"call": {"name": "exec_command", "arguments": {"cmd": "ls"}}}, {"text": "and meanwhile more text follows"}]
    ]
    config = ServerConfig(enable_streaming_tool_dispatch=True)
    with running_server("qwen3", script=script, config=config, tmp_path=tmp_path) as (url, _):
        body = {"model": "test/model", "input": "go", "tools": [EXEC], "stream": True}
        with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
        types = [e["type"] for e in events]
        assert types.count("response.tool_call_dispatch") == 1
        dispatch = events[types.index("response.tool_call_dispatch")]
        assert dispatch["item"]["name"] == "exec_command" and json.loads(dispatch["item"]["arguments"]) == {"cmd": "ls"}
        assert types.index("response.tool_call_dispatch") < types.index("response.function_call_arguments.done")
        assert types.index("response.tool_call_dispatch") < types.index("response.output_text.delta")
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        # The official SDK tolerates the extra event.
        final, _ = stream(client(url), {"model": "test/model", "input": "go", "tools": [EXEC]})
        assert [i.type for i in final.output] == ["function_call", "message"]


def test_keepalives_during_a_slow_turn_are_sse_comments(tmp_path):
    config = ServerConfig(keepalive_seconds=0.05)
    with running_server("qwen3", token_delay=0.12, config=config, tmp_path=tmp_path) as (url, _):
        body = {"model": "test/model", "input": "hi", "max_output_tokens": 4, "stream": True}
        with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
            lines = list(response.iter_lines())
        assert ": keepalive" in lines
        events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        with client(url).responses.stream(model="test/model", input="hi", max_output_tokens=4) as s:
            assert list(s)[-1].type == "response.incomplete"


# ---- sans-IO --------------------------------------------------------------------------


def test_one_assistant_turn_becomes_one_message_with_ordered_parts():
    seal = ReasoningSeal(SERVER_KEY)
    sealed = seal.seal("exact  reasoning\n", "openai-reasoning")
    request = ResponsesRequest.model_validate(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "go"},
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "shown"}],
                    "encrypted_content": sealed,
                },
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
                {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "raw second"}]},
                {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": PATCH},
                {"type": "function_call_output", "call_id": "c1", "output": "x"},
                {"type": "custom_tool_call_output", "call_id": "c2", "output": "y"},
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            ],
            "tools": [EXEC, APPLY_PATCH, {"type": "web_search"}],
        }
    )
    conversation = to_conversation(request, replay=ReplayState(seal))
    _, assistant, results = conversation.messages
    assert [type(p) for p in assistant.parts] == [Reasoning, ToolCall, Reasoning, ToolCall]
    assert assistant.parts[0].text == "exact  reasoning\n" and assistant.parts[2].text == "raw second"
    assert assistant.parts[3].kind == "custom" and json.loads(assistant.parts[3].arguments) == {"input": PATCH}
    assert [(r.tool_call_id, r.name, r.text()) for r in results.parts if isinstance(r, ToolResult)] == [
        ("c1", "exec_command", "x"),
        ("c2", "apply_patch", "y"),
    ]
    assert [(t.name, t.kind) for t in conversation.tools] == [("exec_command", "function"), ("apply_patch", "custom")]
    assert conversation.tools[1].parameters["required"] == ["input"]
    assert "*** Begin Patch" in conversation.tools[1].parameters["properties"]["input"]["description"]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_custom_input_decodes_across_any_split(size):
    arguments = json.dumps({"input": PATCH + "\u00e9\ud83d\ude00"}, ensure_ascii=True)  # escapes and a surrogate pair
    decoder = CustomInputDecoder()
    text = "".join(decoder.feed(arguments[i : i + size]) for i in range(0, len(arguments), size))
    assert text == PATCH + "\u00e9\U0001f600" and decoder.live


def test_custom_input_of_another_shape_is_not_decoded_live():
    decoder = CustomInputDecoder()
    assert decoder.feed('{"patch": "abc"}') == "" and not decoder.live


def test_concise_summary_waits_for_a_newline_that_may_end_the_paragraph():
    encoder = ResponseStream("resp_1", {}, created_at=0, summary="concise")
    frames = encoder.start()
    for event in (ReasoningDelta("Plan.\n"), ReasoningDelta("\nMore detail."), TextDelta("ok"), Finish("stop")):
        frames += encoder.feed(event)
    assert all(name == data["type"] for name, data in frames)
    events = [data for _, data in frames]
    summary = [e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"]
    assert summary == ["Plan."]
    assert encoder.response()["output"][0]["content"][0]["text"] == "Plan.\n\nMore detail."
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_recompacted_function_arguments_replay_as_the_model_wrote_them(tmp_path):
    # OpenClaw sends arguments back re-serialised compactly; the prompt must keep the
    # model's own spacing.
    script = [
        [{"raw": '<tool_call>\n{"name": "exec_command", "arguments": {"cmd": "ls  -la", "n": 1}}\n</tool_call>'}],
        [{"text": "done"}],
    ]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, state):
        c = client(url)
        first, _ = stream(c, codex_body([user("go")]))
        call = next(item for item in first.output if item.type == "function_call")
        assert call.arguments == '{"cmd": "ls  -la", "n": 1}'
        echoed = {**replayed(call), "arguments": json.dumps(json.loads(call.arguments), separators=(",", ":"))}
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "x"}
        stream(c, codex_body([user("go"), echoed, output]))
        assert '{"cmd": "ls  -la", "n": 1}' in prompt_log(state)[1]["prompt_text"]


def test_the_response_object_carries_every_field_openai_always_sends(tmp_path):
    tool = {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        raw = httpx.post(f"{url}/v1/responses", json={"model": "test/model", "input": "hi", "tools": [tool]}).json()
    assert raw["completed_at"] >= raw["created_at"] and raw["status"] == "completed"
    assert (raw["temperature"], raw["top_p"], raw["presence_penalty"], raw["frequency_penalty"]) == (1.0, 1.0, 0.0, 0.0)
    assert raw["top_logprobs"] == 0 and raw["max_tool_calls"] is None and raw["service_tier"] == "default"
    assert raw["tools"] == [{**tool, "description": None, "strict": True}]
    assert raw["usage"]["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
    openai.types.responses.Response.model_validate(raw)
