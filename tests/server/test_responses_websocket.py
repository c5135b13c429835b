"""Responses over a WebSocket (what Codex uses when its catalog says
`prefer_websockets`): the official `openai` SDK's Responses connection for a tool
round trip, and the wire itself (`websockets`) for the protocol's edges: a warm-up,
`previous_response_id` continuation, error messages, the handshake guard, and a
client that closes mid-response."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from urllib.parse import urlsplit

import openai
import pytest
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedOK, InvalidStatus
from websockets.frames import Close, Frame, Opcode
from websockets.protocol import State
from websockets.sync.client import connect
from websockets.uri import parse_uri

from tokenyard.engines.base import EngineChunk
from tokenyard.engines.scripted import SCRIPTED_COMMAND
from tokenyard.server.app import ServerConfig
from tokenyard.server.limits import server_options
from tokenyard.server.metrics import REGISTRY
from tokenyard.settings import ServeSettings

from .serving import WrappedEngine, prompt_log, running_server
from .test_disconnect import _EndlessEngine, _wait_for
from .test_openai_responses import DEVELOPER, codex_body, user

# No client here may use a deprecated API (the openai SDK's sync connection did: it
# calls websockets' connect() outside a context manager).
pytestmark = pytest.mark.filterwarnings("error::DeprecationWarning")

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
OPTIONS = server_options(ServeSettings())  # the production protocol options, as `tokenyard serve` runs


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/v1/responses"


def until_terminal(ws) -> list[dict]:
    events = []
    while True:
        event = json.loads(ws.recv(timeout=60))
        events.append(event)
        if event["type"] in TERMINAL or event["type"] == "error":
            return events


def test_sdk_tool_round_trip_continues_from_the_previous_response(tmp_path):
    """Turn 1 calls exec_command; turn 2 sends only the tool's output with
    `previous_response_id`, and the server expands it into the whole conversation:
    the prompt is exactly what the HTTP replay of the same items renders."""
    before = _websocket_responses()
    with running_server("qwen3", tmp_path=tmp_path, uvicorn_options=OPTIONS) as (url, state):
        turn1 = [DEVELOPER, user("List the files.")]
        body = {k: v for k, v in codex_body(turn1).items() if k != "stream"}

        async def scenario():
            async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0) as client:
                async with client.responses.connect() as connection:
                    await connection.response.create(**body)
                    first = await _sdk_events(connection)
                    assert [e.sequence_number for e in first] == list(range(len(first)))
                    assert first[0].type == "response.created" and first[-1].type == "response.completed"
                    response = first[-1].response
                    assert [i.type for i in response.output] == ["reasoning", "function_call"]
                    call = response.output[1]
                    assert call.name == "exec_command" and json.loads(call.arguments) == {"cmd": SCRIPTED_COMMAND}

                    output = {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": "tokenyard-scripted-42",
                    }
                    await connection.response.create(**{**body, "input": [output], "previous_response_id": response.id})
                    second = await _sdk_events(connection)
                    final = second[-1].response
                    assert second[-1].type == "response.completed" and final.id != response.id
                    assert [i.type for i in final.output] == ["reasoning", "message"]
                    assert "tokenyard-scripted-42" in final.output_text

                ws_sent = prompt_log(state)
                assert len(ws_sent) == 2
                # The same conversation over HTTP, replayed in full as a stateless client sends it.
                http = await client.responses.create(
                    **{**body, "input": [*turn1, *(i.model_dump() for i in response.output), output]}
                )
                assert http.status == "completed"
                assert prompt_log(state)[-1]["prompt_text"] == ws_sent[1]["prompt_text"]
                assert ws_sent[1]["prefix_matched_tokens"] >= ws_sent[0]["prompt_tokens"]

        asyncio.run(scenario())  # the SDK's async connection: see pytestmark
    # Both turns went over the WebSocket (the HTTP replay is not counted there).
    assert _websocket_responses() - before == 2


async def _sdk_events(events) -> list:
    """One response's events, up to its end (`events`: a connection or its iterator)."""
    out = []
    async for event in events:
        out.append(event)
        if event.type in TERMINAL or event.type == "error":
            break
    return out


def _websocket_responses() -> float:
    return REGISTRY.get_sample_value("tokenyard_websocket_responses_total", {"model": "test/model"}) or 0.0


def test_warm_up_then_an_empty_continuation_generates_the_warmed_request(tmp_path):
    """Codex's prewarm: `generate: false` answers created + completed with no output
    and no generation; the next create names it and sends no new input."""
    with running_server("qwen3", tmp_path=tmp_path, uvicorn_options=OPTIONS) as (url, state):
        with connect(ws_url(url)) as ws:
            body = {"type": "response.create", **codex_body([DEVELOPER, user("List the files.")])}
            ws.send(json.dumps({**body, "generate": False}))
            warm = until_terminal(ws)
            assert [e["type"] for e in warm] == ["response.created", "response.in_progress", "response.completed"]
            assert warm[-1]["response"]["output"] == [] and prompt_log(state) == []
            ws.send(json.dumps({"type": "response.processed", "response_id": warm[-1]["response"]["id"]}))
            ws.send(json.dumps({**body, "input": [], "previous_response_id": warm[-1]["response"]["id"]}))
            events = until_terminal(ws)
            assert events[-1]["type"] == "response.completed"
            assert [i["type"] for i in events[-1]["response"]["output"]] == ["reasoning", "function_call"]
        [sent] = prompt_log(state)
        assert "List the files." in sent["prompt_text"]


@pytest.mark.parametrize(
    ("message", "status", "code"),
    [
        ("{not json", 400, "invalid_request_error"),
        (json.dumps(["a list"]), 400, "invalid_request_error"),
        (json.dumps({"type": "session.update"}), 400, "unknown_event_type"),
        (json.dumps({"type": "response.create", "input": "hi"}), 400, "invalid_request_error"),  # no model
        (json.dumps({"type": "response.create", "model": "nope", "input": "hi"}), 404, "model_not_found"),
        (
            json.dumps({"type": "response.create", "model": "test/model", "input": [], "previous_response_id": "r"}),
            400,
            "previous_response_not_found",
        ),
        (b"\x00binary", 400, "invalid_request_error"),
    ],
)
def test_bad_messages_get_error_messages_and_the_connection_stays_usable(message, status, code, tmp_path):
    with running_server("qwen3", tmp_path=tmp_path, uvicorn_options=OPTIONS) as (url, _):
        with connect(ws_url(url)) as ws:
            ws.send(message)
            error = json.loads(ws.recv(timeout=60))
            assert error["type"] == "error" and error["status"] == status, error
            assert code in (error["error"]["code"], error["error"]["type"]), error
            assert error["error"]["message"]
            ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
            assert until_terminal(ws)[-1]["type"] == "response.completed"


@pytest.mark.parametrize(
    ("headers", "config", "status"),
    [
        ({"Origin": "http://evil.example"}, ServerConfig(), 403),  # a web page's WebSocket to localhost
        ({"Host": "attacker.example"}, ServerConfig(), 403),  # DNS rebinding: a name that resolves here
        ({}, ServerConfig(api_key="secret"), 401),
    ],
)
def test_the_handshake_is_guarded_like_http(headers, config, status):
    with running_server("qwen3", config=config, uvicorn_options=OPTIONS) as (url, _):
        target = ws_url(url)
        options: dict = {"additional_headers": headers}
        if "Host" in headers:  # the URL's name is the Host; the connection goes to loopback all the same
            port = urlsplit(url).port
            target = f"ws://{headers['Host']}:{port}/v1/responses"
            options = {"sock": socket.create_connection(("127.0.0.1", port))}
        with pytest.raises(InvalidStatus) as refused:
            connect(target, **options)
        response = refused.value.response
        assert response.status_code == status
        assert json.loads(response.body)["error"]["message"]
        if status == 401:  # the key opens it
            with connect(ws_url(url), additional_headers={"Authorization": "Bearer secret"}) as ws:
                ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
                assert until_terminal(ws)[-1]["type"] == "response.completed"


def test_the_same_origin_and_an_allowed_origin_are_served():
    config = ServerConfig(allowed_origins="http://app.example")
    with running_server("qwen3", config=config, uvicorn_options=OPTIONS) as (url, _):
        for origin in ("http://app.example", url):
            with connect(ws_url(url), additional_headers={"Origin": origin}) as ws:
                ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
                assert until_terminal(ws)[-1]["type"] == "response.completed"


def test_closing_mid_response_aborts_the_generation(caplog):
    caplog.set_level(logging.INFO)
    config = ServerConfig(max_concurrency=1, max_queue=10)
    with running_server("qwen3", config=config, uvicorn_options=OPTIONS) as (url, state):
        engine = _EndlessEngine(state.pipeline.engine, state.pipeline.model.tokenizer.encode("la")[0])
        state.pipeline.engine = engine
        with connect(ws_url(url)) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
            assert json.loads(ws.recv(timeout=60))["type"] == "response.created"
            ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "again"}))
            while (event := json.loads(ws.recv(timeout=60)))["type"] != "error":
                pass  # one response at a time: the second create is refused, the first streams on
            assert event["status"] == 409
        _wait_for(lambda: len(engine.closed) == 1, "the generation to be aborted")
        _wait_for(lambda: state.busy == 0, "the slot to be given back")
    assert any("closed mid-response" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


class _GatedEngine(WrappedEngine):
    """The scripted engine, each generation silent until the test opens the gate."""

    def __init__(self, inner):
        super().__init__(inner)
        self.gate = threading.Event()
        self.closed: list[str] = []

    async def generate(self, request):
        try:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
            async for chunk in self.inner.generate(request):
                yield chunk
        except GeneratorExit:
            self.closed.append(request.request_id)  # stopped before its end: aborted
            raise


class _SilentEngine(_EndlessEngine):
    """Starts a generation and then says nothing, ever (a long prefill); records its abort."""

    async def generate(self, request):
        with self.lock:
            self.started.append(request.request_id)
        try:
            yield EngineChunk(cached_tokens=0)
            await asyncio.Event().wait()
        finally:
            with self.lock:
                self.closed.append(request.request_id)


def test_the_handshake_carries_the_headers_codex_reads():
    """`x-reasoning-included` (usage counts the prompt as rendered) and `openai-model`
    where one id is served; with two ids the model is the request's, so none is named."""
    with running_server("qwen3", uvicorn_options=OPTIONS) as (url, _):
        with connect(ws_url(url)) as ws:
            assert ws.response.headers["x-reasoning-included"] == "true"
            assert ws.response.headers["openai-model"] == "test/model"
    with running_server("qwen3", names=("test/model", "alias"), uvicorn_options=OPTIONS) as (url, _):
        with connect(ws_url(url)) as ws:
            assert ws.response.headers["x-reasoning-included"] == "true"
            assert "openai-model" not in ws.response.headers


CALL_LS = {"call": {"name": "exec_command", "arguments": {"cmd": "ls"}}}


def test_sdk_steer_stops_the_response_after_a_tool_call_and_joins_its_output(tmp_path, caplog):
    """The official SDK's `response.steer` while a response is in flight: accepted,
    numbered within that response; the response stops at its next output-item
    boundary, right after its first complete tool call (the second call never made,
    the generation aborted). The steer is `pending` with the owed output's stub, and
    joins the next create that continues the response, after the output."""
    caplog.set_level(logging.INFO)
    script = [[{"reasoning": "The user wants the files."}, CALL_LS, CALL_LS], [{"text": "Done."}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path, uvicorn_options=OPTIONS) as (url, state):
        engine = _GatedEngine(state.pipeline.engine)
        state.pipeline.engine = engine
        body = {k: v for k, v in codex_body([DEVELOPER, user("List the files.")]).items() if k != "stream"}

        async def scenario():
            async with (
                openai.AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0) as client,
                client.responses.connect() as connection,
            ):
                await connection.response.create(**body)
                events = aiter(connection)
                created, in_progress = await anext(events), await anext(events)
                assert (created.type, in_progress.type) == ("response.created", "response.in_progress")
                first = created.response.id
                await connection.response.steer(previous_response_id=first, input="Hidden ones too.")
                accepted = await anext(events)
                assert accepted.type == "response.steer.accepted" and accepted.steer.previous_response_id == first
                engine.gate.set()
                original = [created, in_progress, accepted, *await _sdk_events(events)]
                assert [e.sequence_number for e in original] == list(range(len(original)))
                stopped = original[-1].response
                assert original[-1].type == "response.incomplete" and stopped.id == first
                assert stopped.incomplete_details.reason == "steered"
                assert [i.type for i in stopped.output] == ["reasoning", "function_call"]
                pending = await anext(events)
                assert pending.type == "response.steer.pending" and pending.steer.id == accepted.steer.id
                call = stopped.output[1]
                assert [(i.type, i.call_id, i.name) for i in pending.required_input] == [
                    ("function_call_output", call.call_id, "exec_command")
                ]
                output = {"type": "function_call_output", "call_id": call.call_id, "output": "tokenyard-files"}
                await connection.response.create(**{**body, "input": [output], "previous_response_id": first})
                answer = await _sdk_events(events)
                assert answer[-1].type == "response.completed" and answer[-1].response.output_text == "Done."

        asyncio.run(scenario())
        _wait_for(lambda: len(engine.closed) == 1, "the steered generation to be aborted")
        sent = prompt_log(state)
        assert len(sent) == 2
        assert "Hidden ones too." not in sent[0]["prompt_text"]
        prompt = sent[1]["prompt_text"]
        turn = prompt.split("List the files.", 1)[1]
        assert turn.count("<tool_call>") == 1, "the call never made is not in the conversation"
        assert prompt.index("tokenyard-files") < prompt.index("Hidden ones too.")
    # The steer stopped the generation, not the client: logged as what it is.
    logged = [r.getMessage() for r in caplog.records]
    assert [m for m in logged if "a steer stopped" in m] and not [m for m in logged if "went away" in m]


def test_a_steer_on_a_response_that_completes_first_gets_an_automatic_successor(tmp_path):
    """A response whose only item ends with it completes; a successor with the
    original settings and the steer appended streams on its own, unasked."""
    script = [[{"text": "Hello."}], [{"text": "Bonjour."}]]
    with running_server("qwen3", script=script, tmp_path=tmp_path, uvicorn_options=OPTIONS) as (url, state):
        engine = _GatedEngine(state.pipeline.engine)
        state.pipeline.engine = engine
        with connect(ws_url(url)) as ws:
            create = {"type": "response.create", "model": "test/model", "instructions": "Be brief.", "input": "Hi."}
            ws.send(json.dumps(create))
            created = json.loads(ws.recv(timeout=60))
            assert json.loads(ws.recv(timeout=60))["type"] == "response.in_progress"
            rid = created["response"]["id"]
            ws.send(json.dumps({"type": "response.steer", "previous_response_id": rid, "input": "In French."}))
            assert json.loads(ws.recv(timeout=60))["type"] == "response.steer.accepted"
            engine.gate.set()
            first = until_terminal(ws)[-1]
            assert first["type"] == "response.completed" and first["response"]["id"] == rid
            successor = until_terminal(ws)
            assert successor[0]["type"] == "response.created" and successor[0]["response"]["id"] != rid
            final = successor[-1]["response"]
            assert successor[-1]["type"] == "response.completed" and final["instructions"] == "Be brief."
            assert final["output"][-1]["content"][0]["text"] == "Bonjour."
        first_prompt, steered = (entry["prompt_text"] for entry in prompt_log(state))
        assert "In French." not in first_prompt
        assert steered.index("Hi.") < steered.index("Hello.") < steered.index("In French.")


def test_the_lifetime_ends_the_connection_after_its_response_in_flight(caplog):
    """Past `ws_max_lifetime` the response in flight still completes; then OpenAI's
    `websocket_connection_limit_reached` error, and the connection closes."""
    caplog.set_level(logging.INFO)
    config = ServerConfig(ws_max_lifetime=0.5)
    with running_server("qwen3", config=config, uvicorn_options=OPTIONS) as (url, state):
        engine = _GatedEngine(state.pipeline.engine)
        state.pipeline.engine = engine
        with connect(ws_url(url)) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
            assert json.loads(ws.recv(timeout=60))["type"] == "response.created"
            _wait_for(lambda: any("lifetime" in r.getMessage() for r in caplog.records), "the lifetime to pass")
            engine.gate.set()
            assert until_terminal(ws)[-1]["type"] == "response.completed"
            error = json.loads(ws.recv(timeout=60))
            assert error["type"] == "error" and error["error"]["code"] == "websocket_connection_limit_reached"
            with pytest.raises(ConnectionClosedOK):
                ws.recv(timeout=60)
            assert ws.close_code == 1000
        # An idle connection gets the same ending.
        with connect(ws_url(url)) as ws:
            error = json.loads(ws.recv(timeout=60))
            assert error["error"]["code"] == "websocket_connection_limit_reached"


def test_pings_keep_a_silent_response_alive_and_an_unanswered_one_stops_it():
    """During a silence (a generation that says nothing yet) the server pings: a peer
    that answers (any WebSocket client does) stays connected through many intervals
    and gets its response; one that never answers is closed (1011) and its generation
    aborted, its slot free again. That one is the `websockets` protocol over a raw
    socket, so its pongs are never sent."""
    config = ServerConfig(max_concurrency=1, max_queue=10)
    interval = 0.2
    options = server_options(ServeSettings(ws_ping_interval=interval))
    with running_server("qwen3", config=config, uvicorn_options=options) as (url, state):
        gated = _GatedEngine(state.pipeline.engine)
        state.pipeline.engine = gated
        with connect(ws_url(url)) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}))
            assert json.loads(ws.recv(timeout=60))["type"] == "response.created"
            time.sleep(10 * interval)  # silent for ten ping intervals
            gated.gate.set()
            assert until_terminal(ws)[-1]["type"] == "response.completed"
        engine = _SilentEngine(gated.inner, 0)
        state.pipeline.engine = engine
        port = urlsplit(url).port
        client = ClientProtocol(parse_uri(ws_url(url)))
        with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
            client.send_request(client.connect())
            raw.sendall(b"".join(client.data_to_send()))
            while client.state is not State.OPEN:
                client.receive_data(raw.recv(65536))
            client.send_text(json.dumps({"type": "response.create", "model": "test/model", "input": "hi"}).encode())
            raw.sendall(b"".join(client.data_to_send()))  # the create; no pong is ever sent
            frames = []
            while data := raw.recv(65536):  # until the server hangs up
                client.receive_data(data)
                frames += [e for e in client.events_received() if isinstance(e, Frame)]
            opcodes = [f.opcode for f in frames]
            assert Opcode.PING in opcodes and opcodes[-1] == Opcode.CLOSE
            assert Close.parse(frames[-1].data).code == 1011
            texts = [json.loads(f.data) for f in frames if f.opcode == Opcode.TEXT]
            assert [t["type"] for t in texts] == ["response.created", "response.in_progress"]
        _wait_for(lambda: len(engine.closed) == 1, "the generation to be aborted")
        _wait_for(lambda: state.busy == 0, "the slot to be given back")
