"""Property-based fuzzing of every endpoint against a real server on 127.0.0.1.

Valid bodies of each API, mutated by hypothesis (a subtree replaced by any JSON
value, keys dropped or added, values wrapped, deep nesting), with random headers:
never a 5xx, every refusal in the API's own error envelope, and the server still
answers afterwards. Fixed budget and seed (derandomized), so CI runs the same cases.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .serving import running_server

TOOL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "enum": ["ls", "pwd"]}, "n": {"anyOf": [{"type": "integer"}]}},
    "required": ["command"],
}
ANTHROPIC = {
    "model": "test/model",
    "max_tokens": 32,
    "system": [{"type": "text", "text": "You are a coding agent."}],
    "tools": [{"name": "Bash", "description": "Run a command", "input_schema": TOOL_SCHEMA}],
    "tool_choice": {"type": "auto"},
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "metadata": {"user_id": '{"session_id": "s1"}'},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "List files."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "look first", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.txt"}]},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        },
    ],
}
CHAT = {
    "model": "test/model",
    "max_tokens": 32,
    "temperature": 0.5,
    "stop": ["\n\n\n"],
    "tools": [{"type": "function", "function": {"name": "Bash", "description": "Run", "parameters": TOOL_SCHEMA}}],
    "tool_choice": "auto",
    "reasoning_effort": "low",
    "stream_options": {"include_usage": True},
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "List files."}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
    ],
}
RESPONSES = {
    "model": "test/model",
    "max_output_tokens": 32,
    "instructions": "You are a coding agent.",
    "tools": [{"type": "function", "name": "Bash", "description": "Run", "parameters": TOOL_SCHEMA}],
    "reasoning": {"effort": "low"},
    "text": {"format": {"type": "text"}},
    "input": [
        {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files."}]},
        {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": '{"command": "ls"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
    ],
}
ENDPOINTS = [
    ("/v1/messages", ANTHROPIC, "anthropic"),
    ("/v1/messages/count_tokens", {k: v for k, v in ANTHROPIC.items() if k != "max_tokens"}, "anthropic"),
    ("/v1/chat/completions", CHAT, "openai"),
    ("/v1/responses", RESPONSES, "openai"),
    ("/v1/tokenize", {**CHAT, "add_generation_prompt": True}, "openai"),
    ("/v1/detokenize", {"model": "test/model", "tokens": [1, 2, 3]}, "openai"),
]

# What hostile or careless clients were found to send (issue 22): lone surrogates (a
# JavaScript client that cut an emoji in half), JSON nested deep inside a string
# (arguments, metadata.user_id), tool names that begin with a digit or `-`, and
# block types that used to be dropped or to fail.
HOSTILE_STRINGS = [
    "\ud800",
    "half \ud83d an emoji",
    "\udfff",
    "[" * 5000 + "]" * 5000,
    '{"session_id": "' + "[" * 2000,
    '{"a":' * 300 + "1" + "}" * 300,
    "2fa_verify",
    "-x",
    "required",  # a forced tool_choice (Chat, Responses) the scripted model may not follow
]
HOSTILE_BLOCKS = [
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc \ud800"}, "title": "t"},
    {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": "@@not base64"}},
    {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "x"}, 5]}},
    {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
    {
        "type": "search_result",
        "source": "https://example.com",
        "title": "r",
        "content": [{"type": "text", "text": "y"}],
    },
    {"type": "tool_use", "id": "t", "name": "3d", "input": {"\ud800": 1}},
    {"type": "any"},  # a forced tool_choice (Anthropic)
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(HOSTILE_STRINGS)
    | st.sampled_from(HOSTILE_BLOCKS).map(copy.deepcopy),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += paths(child, (*prefix, index))
    return out


def parent_of(body: Any, path: tuple) -> Any:
    for key in path[:-1]:
        body = body[key]
    return body


@st.composite
def mutated(draw, valid: dict) -> Any:
    body: Any = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        all_paths = paths(body)
        path = draw(st.sampled_from(all_paths))
        action = draw(st.sampled_from(["replace", "delete", "add", "wrap", "nest", "stream"]))
        if action == "stream":
            if isinstance(body, dict):
                body["stream"] = draw(st.booleans())
            continue
        if not path:
            if action == "replace":
                body = draw(json_values)
            continue
        parent = parent_of(body, path)
        key = path[-1]
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
        elif action == "wrap":
            parent[key] = [parent[key]] if draw(st.booleans()) else {"value": parent[key]}
        elif action == "nest":
            parent[key] = f"__NEST_{draw(st.sampled_from([50, 5000, 100_000]))}__"
    return body


def encode(body: Any) -> bytes:
    """JSON text, with each nesting marker spelled as that many nested arrays (the
    deepest left unclosed): deeper than Python's own recursion limit."""
    text = json.dumps(body)
    for depth in (50, 5000, 100_000):
        nested = "[" * depth + ("]" * depth if depth < 100_000 else "")
        text = text.replace(f'"__NEST_{depth}__"', nested)
    return text.encode()


header_names = st.sampled_from(
    [
        "anthropic-version",
        "anthropic-beta",
        "x-api-key",
        "authorization",
        "x-claude-code-session-id",
        "x-session-id",
        "session_id",
        "accept",
        "openai-beta",
        "x-stainless-retry-count",
    ]
)
header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40).map(str.strip)


def assert_api_shaped(response: httpx.Response, shape: str) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code < 400:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            assert "api_error" not in response.text and "server_error" not in response.text, response.text[-500:]
        return
    body = response.json()
    if shape == "anthropic":
        assert body["type"] == "error", body
        assert isinstance(body["error"]["type"], str) and isinstance(body["error"]["message"], str), body
    else:
        assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["type"], str), body


@pytest.fixture(scope="module")
def server():
    with running_server("qwen3") as (url, _):
        with httpx.Client(base_url=url, timeout=60) as client:
            yield client


FUZZ = settings(
    # CI budget; TOKENYARD_FUZZ_EXAMPLES raises it for a longer hunt.
    max_examples=int(os.environ.get("TOKENYARD_FUZZ_EXAMPLES", 60)),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@pytest.mark.parametrize("path,valid,shape", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_valid_bodies_are_served(server, path, valid, shape):
    response = server.post(path, content=json.dumps(valid), headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("path,valid,shape", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
@FUZZ
@given(data=st.data())
def test_mutated_bodies_never_fail_the_server(server, path, valid, shape, data):
    body = data.draw(mutated(valid), label="body")
    headers = data.draw(st.dictionaries(header_names, header_values, max_size=3), label="headers")
    response = server.post(path, content=encode(body), headers={**headers, "content-type": "application/json"})
    assert_api_shaped(response, shape)


@FUZZ
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
    path=st.sampled_from(["/v1/models", "/v1/models/test/model", "/health", "/v1/x", "/", "/v1/messages/batches"])
    | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="?#%"), max_size=20).map(
        lambda p: "/v1/" + p
    ),
    headers=st.dictionaries(header_names, header_values, max_size=3),
)
def test_any_path_and_method_answers_json(server, method, path, headers):
    response = server.request(method, path, headers={**headers, "content-type": "application/json"}, content=b"{}")
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert "error" in response.json()


def test_server_alive_after_fuzzing(server):
    assert server.get("/health").status_code == 200


INVALID_SCHEMAS = [
    {"type": "object", "properties": {"a": {"anyOf": 5}}},
    {"type": "object", "properties": {"a": {"enum": 5}}},
    {"type": "object", "properties": {"a": {"type": 5}}},
    {"type": "object", "properties": 5},
    {"type": "object", "properties": {"a": 5}},
    {"type": "object", "required": 5},
    {"type": "object", "properties": {"a": {"type": "array", "items": 5}}},
]
# Odd but harmless: accepted, the parameter is untyped where it is not understood.
ODD_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "file"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}},
    {"type": "object", "properties": {"a": True}, "x-vendor": [1, {"y": None}]},
    {"type": "object", "properties": {"a": {"type": ["string", "null"], "format": 5, "description": 7}}},
]


def tool_bodies(schema: dict, stream: bool) -> list[tuple[str, dict, str]]:
    messages = [{"role": "user", "content": "run ls"}]
    return [
        (
            "/v1/messages",
            {
                "model": "test/model",
                "max_tokens": 32,
                "stream": stream,
                "tools": [{"name": "Bash", "input_schema": schema}],
                "tool_choice": {"type": "any"},
                "messages": messages,
            },
            "anthropic",
        ),
        (
            "/v1/chat/completions",
            {
                "model": "test/model",
                "stream": stream,
                "tools": [{"type": "function", "function": {"name": "Bash", "parameters": schema}}],
                "tool_choice": "required",
                "messages": messages,
            },
            "openai",
        ),
        (
            "/v1/responses",
            {
                "model": "test/model",
                "stream": stream,
                "tools": [{"type": "function", "name": "Bash", "parameters": schema}],
                "tool_choice": "required",
                "input": "run ls",
            },
            "openai",
        ),
    ]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("schema", INVALID_SCHEMAS, ids=[json.dumps(s)[:48] for s in INVALID_SCHEMAS])
def test_invalid_tool_schemas_are_400_before_any_stream(server, schema, stream):
    for path, body, shape in tool_bodies(schema, stream):
        response = server.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
        assert response.status_code == 400, (path, response.text)
        assert_api_shaped(response, shape)
        assert "tools.0" in response.text  # the message names the field


@pytest.mark.parametrize("schema", ODD_SCHEMAS, ids=[json.dumps(s)[:48] for s in ODD_SCHEMAS])
def test_odd_but_harmless_tool_schemas_are_served(server, schema):
    for path, body, shape in tool_bodies(schema, True):
        response = server.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
        assert response.status_code == 200, (path, response.text)
        assert_api_shaped(response, shape)
