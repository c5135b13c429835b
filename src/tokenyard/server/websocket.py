"""Responses over a WebSocket (`GET /v1/responses` with an upgrade): the transport
Codex prefers when its catalog says `prefer_websockets`. The protocol is
apis/openai_responses/websocket.py's; each `response.create` is served exactly as
`POST /v1/responses` with `stream: true` (routes.start_generation, then the same
frames sse.encoded_frames yields), sent as one JSON text message per event.

The handshake passes the same guard as HTTP (RequestGuard: loopback Host without an
API key, no foreign Origin) and the same authentication; a refusal is an HTTP
answer in the API's envelope where the server can send one. Its answer carries the
headers Codex reads from the upgrade (HANDSHAKE_HEADERS). The connection is read
while a response streams, so a client that closes it stops its generation at once
(the engine request is aborted), and a steer is answered while it runs; one
response at a time.

Keep-alive is the WebSocket's own: uvicorn pings every `--ws-ping-interval`
seconds, silences included, and closes a peer that leaves a ping unanswered that
long (which stops its generation). Codex answers pings; its own idle timer counts
only messages, so the launcher raises it (`stream_idle_timeout_ms`). After
`--ws-max-lifetime` seconds (OpenAI: 60 minutes) the connection, once its response
in flight has ended, gets OpenAI's `websocket_connection_limit_reached` error and is
closed; Codex then reconnects and resends the conversation in full.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .. import json_out
from ..apis.errors import fault_of, invalid_request
from ..apis.openai_responses.spoke import SPOKE
from ..apis.openai_responses.stream import ResponseStream
from ..apis.openai_responses.websocket import STEERED, Create, ResponsesSocket, error_message, lifetime_error
from ..events import Finish
from ..faults import ApiError, Fault
from . import metrics
from .admission import acquire_slot
from .intake import check_auth, decode_json, header_map
from .limits import deny_websocket
from .routes import context, start_generation
from .sse import encoded_frames
from .state import ServerState

log = logging.getLogger("tokenyard.server.websocket")
ITEM_ADDED, ITEM_DONE = "response.output_item.added", "response.output_item.done"


async def responses_socket(websocket: WebSocket) -> None:
    state: ServerState = websocket.app.state.tokenyard
    try:
        check_auth(websocket, state)
    except Exception as error:
        await deny_websocket(websocket.scope, websocket.send, websocket.url.path, fault_of(error))
        return
    await websocket.accept(headers=handshake_headers(state))
    metrics.WEBSOCKET_CONNECTIONS.inc()
    log.info("a Responses WebSocket opened")
    socket = ResponsesSocket()
    lock = asyncio.Lock()  # one message at a time on the wire

    async def send(event: dict[str, Any]) -> None:
        async with lock:
            await websocket.send_text(json_out.dumps(event).decode())

    lifetime = state.config.ws_max_lifetime
    running: asyncio.Task[None] | None = None
    try:
        try:
            async with asyncio.timeout(lifetime or None):
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    try:
                        answer = await read_message(state, socket, message.get("text"))
                    except Exception as error:
                        await send(error_message(error))
                        continue
                    if isinstance(answer, Create):
                        running = asyncio.create_task(respond(state, websocket, socket, answer, send))
                    elif answer is not None:  # a steer's acceptance or refusal
                        for event in answer:
                            await send(event)
        except TimeoutError:
            pass
        # The lifetime is over: the response in flight (and a steered successor) ends
        # first; what the client sends meanwhile is not read.
        log.info("a Responses WebSocket reached its %g s lifetime; closing it", lifetime)
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        await send(lifetime_error(lifetime / 60))
        await websocket.close(1000, "connection lifetime reached")
    except WebSocketDisconnect:
        pass
    finally:
        if running is not None and not running.done():
            log.info("a Responses WebSocket closed mid-response; its generation was stopped")
            running.cancel()
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        log.info("a Responses WebSocket closed")


def handshake_headers(state: ServerState) -> list[tuple[bytes, bytes]]:
    """What Codex reads from the upgrade answer: `x-reasoning-included` (usage already
    counts the reasoning a conversation carries: input tokens are the rendered prompt's,
    so Codex does not add its own estimate), and `openai-model` where one model id is
    served (Codex reports any other id as a rerouted model). Not sent:
    `x-codex-turn-state` (sticky routing between OpenAI's servers) and `x-models-etag`
    (the catalog does not change while a server runs)."""
    headers = [(b"x-reasoning-included", b"true")]
    ids = state.model_ids()
    if len(ids) == 1:
        headers.append((b"openai-model", ids[0].encode()))
    return headers


async def read_message(
    state: ServerState, socket: ResponsesSocket, text: str | None
) -> Create | list[dict[str, Any]] | None:
    if text is None:
        raise invalid_request("binary messages are not part of the protocol; send JSON text")
    if len(text) > state.config.max_body_bytes:
        raise ApiError(Fault.REQUEST_TOO_LARGE, f"message exceeds {state.config.max_body_bytes} bytes")
    return socket.receive(await decode_json(text, state.pipeline.offload), len(text))


async def respond(state: ServerState, websocket: WebSocket, socket: ResponsesSocket, create: Create, send: Any) -> None:
    """One `response.create`, then the automatic successors steering asks for."""
    current: Create | None = create
    while current is not None:
        for notice in current.notices:
            await send(notice)
        await respond_one(state, websocket, socket, current, send)
        after = socket.after_terminal()
        if isinstance(after, Create):
            log.info("Responses WebSocket: a steered successor continues %s", after.continues)
        else:
            for event in after:
                await send(event)
        current = after if isinstance(after, Create) else None


async def respond_one(
    state: ServerState, websocket: WebSocket, socket: ResponsesSocket, create: Create, send: Any
) -> None:
    """One response: a refusal is one error message; a response streams its events
    up to the terminal one."""
    if create.continues is not None:
        log.info("Responses WebSocket: continuing %s with %d new input items", create.continues, create.new_items)
    try:
        if not create.generate:
            await warm_up(state, websocket, socket, create, send)
            return
        parsed, generation, encoder = await start_generation(
            SPOKE, create.body, create.size, header_map(websocket.scope), state
        )
    except Exception as error:
        for event in socket.failed(error):
            await send(event)
        return
    metrics.WEBSOCKET_RESPONSES.labels(parsed.model).inc()
    try:
        slot = await acquire_slot(state, generation.conversation.hints)
        frames = encoded_frames(state, generation, encoder, slot)
        try:
            async for batch in frames:
                if batch is None:
                    continue  # a silence: the WebSocket's own pings keep it alive
                for _, data in batch:
                    assert isinstance(data, dict)  # Responses frames are JSON objects
                    await send(socket.outgoing(data))
                if socket.steered() and item_boundary(batch):
                    break  # a steer waits: stop at this output-item boundary
            else:
                return
        finally:
            await frames.aclose()  # a break: the engine request is aborted here
            slot.release()
        assert isinstance(encoder, ResponseStream)  # the Responses spoke's encoder
        log.info("Responses WebSocket: a steer stopped %s at an output-item boundary", encoder.response_id)
        for _, data in encoder.interrupt(STEERED):
            assert isinstance(data, dict)
            await send(socket.outgoing(data))
    except (WebSocketDisconnect, asyncio.CancelledError):
        raise
    except Exception as error:  # refused after the start (no slot in time): the error message
        for event in socket.failed(error):
            await send(event)


async def warm_up(state: ServerState, websocket: WebSocket, socket: ResponsesSocket, create: Create, send: Any) -> None:
    """`generate: false`: the request is validated and its model looked up, and the
    response is created and completed at once, with no output; a later create may
    continue from it (with the same input, as Codex does after its prewarm)."""
    ctx = context(header_map(websocket.scope), state)
    parsed = await state.pipeline.offload.run_if_large(create.size, SPOKE.parse, create.body, ctx)
    state.pipeline_for(parsed.model)
    encoder = SPOKE.encoder(parsed, ctx)
    for _, data in [*encoder.start(), *encoder.feed(Finish("stop"))]:
        assert isinstance(data, dict)
        await send(socket.outgoing(data))


def item_boundary(batch: list[Any]) -> bool:
    """Whether a batch ends an output item and opens none after it (the item in flight
    when a steer came is finished, never cut)."""
    items = [data["type"] for _, data in batch if data.get("type") in (ITEM_ADDED, ITEM_DONE)]
    return bool(items) and items[-1] == ITEM_DONE


def routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/v1/responses", responses_socket)]
