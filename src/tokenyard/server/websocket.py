"""Responses over a WebSocket (`GET /v1/responses` with an upgrade): the transport
Codex prefers when its catalog says `prefer_websockets`. The protocol is
apis/openai_responses/websocket.py's; each `response.create` is served exactly as
`POST /v1/responses` with `stream: true` (routes.start_generation, then the same
frames sse.encoded_frames yields), sent as one JSON text message per event.

The handshake passes the same guard as HTTP (RequestGuard: loopback Host without an
API key, no foreign Origin) and the same authentication; a refusal is an HTTP
answer in the API's envelope where the server can send one. The connection is
read while a response streams, so a client that closes it stops its generation at
once (the engine request is aborted); one response at a time.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..apis.errors import fault_of, invalid_request
from ..apis.openai_responses.spoke import SPOKE
from ..apis.openai_responses.websocket import Create, ResponsesSocket, error_message
from ..events import Finish
from ..faults import ApiError, Fault
from . import metrics
from .admission import acquire_slot
from .intake import check_auth, decode_json
from .limits import deny_websocket
from .routes import context, start_generation
from .sse import encoded_frames
from .state import ServerState

log = logging.getLogger("tokenyard.server.websocket")


async def responses_socket(websocket: WebSocket) -> None:
    state: ServerState = websocket.app.state.tokenyard
    try:
        check_auth(websocket, state)
    except Exception as error:
        await deny_websocket(websocket.scope, websocket.send, websocket.url.path, fault_of(error))
        return
    await websocket.accept()
    metrics.WEBSOCKET_CONNECTIONS.inc()
    log.info("a Responses WebSocket opened")
    socket = ResponsesSocket()
    lock = asyncio.Lock()  # one message at a time on the wire

    async def send(event: dict[str, Any]) -> None:
        async with lock:
            await websocket.send_text(json.dumps(event, ensure_ascii=False, separators=(",", ":")))

    running: asyncio.Task[None] | None = None
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            try:
                create = await read_message(state, socket, message.get("text"))
            except Exception as error:
                await send(error_message(error))
                continue
            if create is not None:
                running = asyncio.create_task(respond(state, websocket, socket, create, send))
    except WebSocketDisconnect:
        pass
    finally:
        if running is not None and not running.done():
            log.info("a Responses WebSocket closed mid-response; its generation was stopped")
            running.cancel()
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        log.info("a Responses WebSocket closed")


async def read_message(state: ServerState, socket: ResponsesSocket, text: str | None) -> Create | None:
    if text is None:
        raise invalid_request("binary messages are not part of the protocol; send JSON text")
    if len(text) > state.config.max_body_bytes:
        raise ApiError(Fault.REQUEST_TOO_LARGE, f"message exceeds {state.config.max_body_bytes} bytes")
    return socket.receive(await decode_json(text, state.pipeline.offload), len(text))


async def respond(state: ServerState, websocket: WebSocket, socket: ResponsesSocket, create: Create, send: Any) -> None:
    """One `response.create`: a refusal is one error message; a response streams its
    events up to the terminal one."""
    if create.continues is not None:
        log.info("Responses WebSocket: continuing %s with %d new input items", create.continues, create.new_items)
    try:
        if not create.generate:
            await warm_up(state, websocket, socket, create, send)
            return
        parsed, generation, encoder = await start_generation(SPOKE, create.body, create.size, websocket.headers, state)
    except Exception as error:
        await send(socket.failed(error))
        return
    metrics.WEBSOCKET_RESPONSES.labels(parsed.model).inc()
    try:
        slot = await acquire_slot(state, generation.conversation.hints)
        frames = encoded_frames(state, generation, encoder, slot)
        try:
            async for batch in frames:
                if batch is None:
                    continue  # a WebSocket has its own pings; Codex ignores unknown events anyway
                for _, data in batch:
                    assert isinstance(data, dict)  # Responses frames are JSON objects
                    socket.sent(data)
                    await send(data)
        finally:
            await frames.aclose()
            slot.release()
    except (WebSocketDisconnect, asyncio.CancelledError):
        raise
    except Exception as error:  # refused after the start (no slot in time): the error message
        await send(socket.failed(error))


async def warm_up(state: ServerState, websocket: WebSocket, socket: ResponsesSocket, create: Create, send: Any) -> None:
    """`generate: false`: the request is validated and its model looked up, and the
    response is created and completed at once, with no output; a later create may
    continue from it (with the same input, as Codex does after its prewarm)."""
    ctx = context(websocket.headers, state)
    parsed = await state.pipeline.offload.run_if_large(create.size, SPOKE.parse, create.body, ctx)
    state.pipeline_for(parsed.model)
    encoder = SPOKE.encoder(parsed, ctx)
    for _, data in [*encoder.start(), *encoder.feed(Finish("stop"))]:
        assert isinstance(data, dict)
        socket.sent(data)
        await send(data)


def routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/v1/responses", responses_socket)]
