"""Input a careless or hostile client sends, through the real app on 127.0.0.1: never a
5xx, an API-shaped refusal where one is due, and the same rule on every API."""

from __future__ import annotations

import json
import logging
import socket
import time

import httpx
import pytest

from tokenyard import wire_json
from tokenyard.server.limits import server_options
from tokenyard.settings import ServeSettings

from .serving import prompt_log, running_server

JSON = {"content-type": "application/json"}
# Half an emoji: what a JavaScript client writes after cutting "😀" ("\ud83d\ude00") in two.
CUT = "cut \ud83d here"
TOOL = {"type": "object", "properties": {"command": {"type": "string"}}}
USER_HI = [{"role": "user", "content": "hi"}]


def anthropic(**fields):
    return "/v1/messages", {"model": "test/model", "max_tokens": 8, "messages": USER_HI, **fields}


def chat_call(arguments: str):
    messages = [
        *USER_HI,
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "B", "arguments": arguments}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    return "/v1/chat/completions", {"model": "test/model", "messages": messages}


# The places a lone surrogate answered 500 (issue 22).
SURROGATE_PLACES = {
    "prompt": anthropic(messages=[{"role": "user", "content": CUT}]),
    "system": anthropic(system=CUT),
    "tool name": anthropic(tools=[{"name": "B\ud800", "input_schema": TOOL}]),
    "property key": anthropic(
        tools=[{"name": "B", "input_schema": {"type": "object", "properties": {"c\ud800": {"type": "string"}}}}]
    ),
    "tool_use.input key": anthropic(
        messages=[
            *USER_HI,
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "B", "input": {"c\udc00": "x"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": CUT}]},
        ]
    ),
    # The arguments string holds the escape `\ud83d` itself (JSON.stringify's output).
    "chat arguments (escaped)": chat_call(json.dumps({"command": CUT})),
    "chat arguments (raw)": chat_call('{"command": "' + CUT + '"}'),
    "responses instructions": ("/v1/responses", {"model": "test/model", "instructions": CUT, "input": "hi"}),
    "responses input": ("/v1/responses", {"model": "test/model", "input": CUT}),
    "responses function_call": (
        "/v1/responses",
        {
            "model": "test/model",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "B", "arguments": json.dumps({"command": CUT})},
                {"type": "function_call_output", "call_id": "c1", "output": CUT},
            ],
        },
    ),
    "tokenize (prompt)": ("/v1/tokenize", {"model": "test/model", "prompt": CUT}),
    "tokenize (chat)": ("/v1/tokenize", {"model": "test/model", "messages": [{"role": "user", "content": CUT}]}),
    "count_tokens": (
        "/v1/messages/count_tokens",
        {"model": "test/model", "messages": [{"role": "user", "content": CUT}]},
    ),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("served")) as (url, state):
        yield url, state


@pytest.mark.parametrize("in_pieces", [False, True], ids=["whole", "in pieces"])
@pytest.mark.parametrize("place", list(SURROGATE_PLACES))
def test_a_lone_surrogate_is_u_fffd_everywhere(served, place, in_pieces, monkeypatch):
    url, state = served
    if in_pieces:  # as a large body is decoded: checked a piece at a time, its containers untracked
        monkeypatch.setattr(wire_json, "PIECEWISE_BYTES", 0)
    path, body = SURROGATE_PLACES[place]
    logged = len(prompt_log(state))
    # json.dumps writes a lone surrogate as its `\ud83d` escape, as JSON.stringify does.
    response = httpx.post(url + path, content=json.dumps(body), headers=JSON, timeout=60)
    assert response.status_code == 200, response.text
    if path == "/v1/tokenize":
        ids = response.json()["tokens"]
        detokenized = httpx.post(url + "/v1/detokenize", json={"tokens": ids}, timeout=60).json()["prompt"]
        assert "\ufffd" in detokenized
    elif path != "/v1/messages/count_tokens":
        prompt = prompt_log(state)[logged:][-1]["prompt_text"]
        prompt.encode("utf-8")  # no surrogate left
        # Escaped arguments stay the client's exact (ASCII) text; decoded text gets U+FFFD.
        assert ("\\ud83d" if place == "chat arguments (escaped)" else "\ufffd") in prompt


@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_streams_on_every_api(served, stream):
    url, _ = served
    for path, body in (
        SURROGATE_PLACES["prompt"],
        SURROGATE_PLACES["chat arguments (raw)"],
        SURROGATE_PLACES["responses input"],
    ):
        response = httpx.post(url + path, content=json.dumps({**body, "stream": stream}), headers=JSON, timeout=60)
        assert response.status_code == 200, response.text
        assert "api_error" not in response.text and "server_error" not in response.text


def test_a_surrogate_in_raw_utf8_bytes_is_u_fffd(served):
    """CESU-style bytes (ED A0 BD) that Python's JSON decoder lets through as a surrogate."""
    url, state = served
    path, body = anthropic(messages=[{"role": "user", "content": "SURROGATE"}])
    raw = json.dumps(body).encode().replace(b"SURROGATE", b"cut \xed\xa0\xbd here")
    response = httpx.post(url + path, content=raw, headers=JSON, timeout=60)
    assert response.status_code == 200, response.text
    assert "cut \ufffd here" in prompt_log(state)[-1]["prompt_text"]


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "where,path,body",
    [
        ("metadata.user_id", *anthropic(metadata={"user_id": DEEP})),
        (
            "arguments",
            "/v1/responses",
            {
                "model": "test/model",
                "input": [
                    {"type": "function_call", "call_id": "c1", "name": "B", "arguments": DEEP},
                    {"type": "function_call_output", "call_id": "c1", "output": "x"},
                ],
            },
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_json_nested_deeply_inside_a_string_field_is_a_400(served, where, path, body, stream):
    url, _ = served
    response = httpx.post(url + path, content=json.dumps({**body, "stream": stream}), headers=JSON, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and where in error["message"]


def _exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send one request; read until its response is complete (Content-Length) or EOF."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _chunked_request(content_length: bool) -> bytes:
    body = json.dumps({"model": "test/model", "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
    if content_length:
        head += "content-length: 4\r\n"  # disagrees with the chunked framing
    head += "transfer-encoding: chunked\r\n\r\n"
    return head.encode() + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


def test_content_length_with_transfer_encoding_closes_the_connection():
    """RFC 9112 §6.1: served by its chunked framing, then the connection is closed
    (never reused: the request may be a smuggling attempt). A chunked request alone
    keeps its connection."""
    with running_server(
        "qwen3", uvicorn_options=server_options(ServeSettings(keep_alive_timeout=300, header_timeout=300))
    ) as (url, _):
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        with socket.create_connection(address, timeout=60) as sock:
            first = _exchange(sock, _chunked_request(content_length=True))
            assert first.startswith(b"HTTP/1.1 200")
            assert sock.recv(1) == b""  # closed by the server
        with socket.create_connection(address, timeout=60) as sock:
            assert _exchange(sock, _chunked_request(content_length=False)).startswith(b"HTTP/1.1 200")
            assert _exchange(sock, _chunked_request(content_length=False)).startswith(b"HTTP/1.1 200")


def test_a_client_that_leaves_while_sending_its_body_is_an_info_line(caplog):
    caplog.set_level(logging.INFO)
    paths = ["/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/messages/count_tokens", "/v1/tokenize"]
    with running_server("qwen3", uvicorn_options=server_options(ServeSettings())) as (url, _):
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        for path in paths:
            with socket.create_connection(address) as sock:
                head = f"POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                sock.sendall(f"{head}content-length: 1000\r\n\r\n".encode() + b'{"model": ')
        deadline = time.monotonic() + 60
        while sum("went away while sending" in r.getMessage() for r in caplog.records) < len(paths):
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.01)
        assert httpx.get(f"{url}/health").status_code == 200
    gone = [r for r in caplog.records if "went away" in r.getMessage()]
    assert all(r.levelno == logging.INFO for r in gone)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_tokenize_and_detokenize_are_bounded_by_the_window():
    """Bodies over 16 bytes a token of the window are refused unread (413); more ids
    than the window are a 400; both in OpenAI's envelope."""
    with running_server("qwen3", max_model_len=2048) as (url, _):
        limit = 16 * 2048 + 64 * 1024
        huge = {"model": "test/model", "tokens": [785] * (limit // 3)}
        response = httpx.post(f"{url}/v1/detokenize", json=huge, timeout=60)
        assert response.status_code == 413 and f"exceeds {limit} bytes" in response.json()["error"]["message"]
        response = httpx.post(f"{url}/v1/tokenize", json={"prompt": "word " * (limit // 4)}, timeout=60)
        assert response.status_code == 413, response.text
        over = httpx.post(f"{url}/v1/detokenize", json={"tokens": [785] * 2049}, timeout=60)
        assert over.status_code == 400 and over.json()["error"]["param"] == "tokens", over.text
        assert "window of 2,048 tokens" in over.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/detokenize", json={"tokens": [785] * 2048}, timeout=60).status_code == 200


def test_more_tools_than_any_request_needs_is_a_400_before_validation(served):
    url, _ = served
    tool = {"name": "t", "input_schema": TOOL}
    function = {"type": "function", "function": {"name": "t", "parameters": TOOL}}
    bodies = {
        "/v1/messages": {**anthropic()[1], "tools": [tool] * 10_001},
        "/v1/messages/count_tokens": {"model": "test/model", "messages": USER_HI, "tools": [tool] * 10_001},
        "/v1/chat/completions": {"model": "test/model", "messages": USER_HI, "tools": [function] * 10_001},
        "/v1/responses": {"model": "test/model", "input": "hi", "tools": [{"type": "function", "name": "t"}] * 10_001},
        "/v1/tokenize": {"model": "test/model", "messages": USER_HI, "tools": [function] * 10_001},
    }
    namespace = {"type": "namespace", "name": "mcp", "tools": [{"type": "function", "name": "t"}] * 5_001}
    namespaced = {"model": "test/model", "input": "hi", "tools": [namespace, namespace]}
    for path, body in bodies.items():
        response = httpx.post(url + path, json=body, timeout=60)
        assert response.status_code == 400, (path, response.text)
        assert "at most 10,000" in response.text
    response = httpx.post(url + "/v1/responses", json=namespaced, timeout=60)
    assert response.status_code == 400 and "10,002 tools" in response.text, response.text
