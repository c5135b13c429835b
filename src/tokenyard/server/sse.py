"""Server-sent events: framing, keep-alives while the engine is quiet, and the one
way every API runs a generation (streamed or to its end) inside a slot, driving the
API's `StreamEncoder` (apis/spoke.py)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from typing import Any, TypeVar

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from .. import json_out
from ..apis.errors import fault_of, stream_failure
from ..apis.spoke import Frame, StreamEncoder
from ..events import StreamError
from . import metrics
from .admission import Slot, acquire_slot
from .pipeline import Generation
from .state import ServerState

log = logging.getLogger("tokenyard.server")

KEEPALIVE_COMMENT = b": keepalive\n\n"  # an SSE comment: every client skips it
IDLE = object()  # what a `Keepalive` yields when its source has been silent
MAX_QUEUED = 64  # items the pump reads ahead of the consumer
_END = object()
T = TypeVar("T")


def sse(event: str | None, data: Any) -> bytes:
    """One frame on the wire; `data` is JSON unless it is a literal string."""
    body = data.encode() if isinstance(data, str) else json_out.dumps(data)
    return b"".join((b"event: ", event.encode(), b"\ndata: ", body, b"\n\n")) if event else b"data: " + body + b"\n\n"


class Keepalive:
    """`source`'s items, and `IDLE` whenever it has been silent for `interval` seconds
    (a long prefill). A pump task reads the source into a small queue from the moment
    this is made (a generation's engine request goes out while its response starts),
    and one timer per interval checks for silence, so a streamed token costs a queue
    hand-off, not a task. `aclose` (whoever makes one calls it, whether or not it was
    read) cancels the pump, which closes `source` and so aborts the engine request."""

    def __init__(self, source: AsyncIterator[Any], interval: float) -> None:
        self._source = source
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        # What the pump has read and the consumer not yet taken (kind, value); one
        # producer and one consumer, so a deque and at most one waiter on each side:
        # an asyncio.Queue cost ~8 calls an item.
        self._items: deque[tuple[object, Any]] = deque()
        self._waiting: asyncio.Future[None] | None = None  # the consumer, for an item
        self._room: asyncio.Future[None] | None = None  # the pump, while `_items` is full
        self._last = self._loop.time()
        self._ended = False
        self._held: tuple[object, Any] | None = None  # an end, error or silence `ready` took
        self._task = asyncio.ensure_future(self._pump())
        self._timer = self._loop.call_at(self._last + interval, self._check_silence)

    async def _pump(self) -> None:
        try:
            async for item in self._source:
                self._put(None, item)
                self._last = self._loop.time()
                if len(self._items) >= MAX_QUEUED:  # the consumer is behind: read no further
                    self._room = self._loop.create_future()
                    await self._room
            self._put(_END, None)
        except Exception as error:  # handed to the consumer, which raises it
            self._put(_END, error)

    def _put(self, kind: object, value: Any) -> None:
        self._items.append((kind, value))
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_result(None)

    def _take(self) -> tuple[object, Any]:
        item = self._items.popleft()
        if self._room is not None and not self._room.done():
            self._room.set_result(None)
        return item

    def _check_silence(self) -> None:
        now = self._loop.time()
        if now - self._last >= self._interval and not self._items:
            self._put(IDLE, None)
            self._last = now
        self._timer = self._loop.call_at(self._last + self._interval, self._check_silence)

    def __aiter__(self) -> Keepalive:
        return self

    async def __anext__(self) -> Any:
        if self._ended:
            raise StopAsyncIteration
        if self._held is not None:
            (kind, value), self._held = self._held, None
        else:
            while not self._items:
                self._waiting = self._loop.create_future()
                await self._waiting
            kind, value = self._take()
        if kind is None:
            return value
        if kind is IDLE:
            return IDLE
        self._ended = True
        if value is not None:
            raise value
        raise StopAsyncIteration

    def ready(self) -> list[Any]:
        """The source's items already queued, without waiting: what it produced while
        the last one was being handled (a token's events come several at once). An
        end, an error or a silence stays for `__anext__`."""
        items: list[Any] = []
        while self._held is None and not self._ended and self._items:
            kind, value = self._take()
            if kind is None:
                items.append(value)
            else:
                self._held = (kind, value)
        return items

    async def aclose(self) -> None:
        self._ended = True
        self._timer.cancel()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            await aclose()


async def run_to_end(
    state: ServerState, generation: Generation, encoder: StreamEncoder, receive: Receive | None = None
) -> dict[str, Any] | None:
    """A non-streaming request: the whole generation, in a slot, assembled by the
    encoder; an engine failure is raised as the API error it is. With `receive`,
    a client that hangs up (while queued or generating) ends the work at once:
    None is returned and the engine request is aborted."""

    async def assemble() -> dict[str, Any]:
        slot = await acquire_slot(state, generation.conversation.hints)
        events = metrics.observed(generation, generation.events())
        try:
            async for event in events:
                if isinstance(event, StreamError):
                    raise stream_failure(event)
                encoder.feed(event)
        finally:
            try:
                await events.aclose()  # aborts the engine request if it is still running
            finally:
                slot.release()
        return encoder.result()

    if receive is None:
        return await assemble()
    return await until_disconnected(assemble(), receive)


async def until_disconnected(work: Coroutine[Any, Any, T], receive: Receive) -> T | None:
    """`work`'s result, or None once the client has disconnected (`work` is then
    cancelled, which closes its event iterators and so aborts the engine request).

    The disconnect is the ASGI `http.disconnect` message, read from `receive` once
    the body has been consumed. uvicorn's httptools protocol reads on after a
    complete request, so the peer's EOF is read, the transport closes and
    `http.disconnect` follows; its h11 protocol pauses reading (h11 PAUSED), but
    every `receive()` resumes it. Unlike peeking at the socket this is plain ASGI, so it holds for any
    server. (What hid it before: `asyncio.wait_for` in the slot queue swallowed the
    cancellation when a slot was granted at that moment: see `acquire_slot`.)"""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(receive))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():  # the client left, or the server is cancelling us
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
    if task.cancelled():
        log.info("the client went away before its response; its generation was stopped")
        return None
    return task.result()


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def frame_bytes(frame: Frame) -> bytes:
    return sse(*frame)


def started(state: ServerState, generation: Generation) -> Keepalive:
    """The generation's events, with keep-alives: its engine request starts now."""
    return Keepalive(metrics.observed(generation, generation.events()), state.config.keepalive_seconds)


async def encoded_frames(
    state: ServerState,
    generation: Generation,
    encoder: StreamEncoder,
    slot: Slot,
    events: Keepalive | None = None,
    *,
    joined: bool = False,
) -> AsyncGenerator[list[Frame] | None]:
    """A streaming generation (holding `slot`, released at the end) as the encoder's
    frames, one batch per event (a transport writes a batch at once), None where a
    keep-alive is due (a silence, or output held back). `joined`: one batch for an
    event and every event already waiting behind it, so the frames of one engine read
    (the first token's `message_start`, block start and delta) go out in one write and
    wake the client once. A failure mid-stream ends it with the API's own error
    frames, never a truncated stream. Closing this iterator aborts the engine request.
    Any transport (SSE, a WebSocket) sends what it yields; `events`: the generation
    already `started` (else it starts here)."""
    interval = state.config.keepalive_seconds
    if events is None:
        events = started(state, generation)
    clock = asyncio.get_running_loop().time
    sent = clock()
    try:
        if opening := list(encoder.start()):
            yield opening
        async for event in events:
            if event is IDLE:
                yield None
                sent = clock()
                continue
            out: list[Frame] = []
            for item in [event, *events.ready()] if joined else [event]:
                frames = encoder.error(stream_failure(item)) if isinstance(item, StreamError) else None
                out.extend(frames if frames is not None else encoder.feed(item))
            now = clock()
            if out:
                yield out
                sent = now
            elif now - sent >= interval:
                # The engine is busy but nothing can be sent yet (a tool call is
                # held until it is complete): a keep-alive, as during a silence.
                yield None
                sent = now
    except Exception as error:  # whatever broke: the API's own ending (fault_of logs bugs)
        yield list(encoder.error(fault_of(error)))
    finally:
        try:
            await events.aclose()  # aborts the engine request if it is still running
        finally:
            slot.release()
    if closing := list(encoder.finish()):
        yield closing


async def event_stream(state: ServerState, generation: Generation, encoder: StreamEncoder) -> StreamingResponse:
    """A streaming request over SSE: the encoder's frames, in a slot, with SSE
    keep-alives (the encoder's own, or a comment)."""
    slot = await acquire_slot(state, generation.conversation.hints)
    # The engine request goes out now, while the response starts (time to first token).
    events = started(state, generation)

    async def frames() -> AsyncGenerator[bytes]:
        source = encoded_frames(state, generation, encoder, slot, events, joined=True)
        try:
            async for batch in source:
                if batch is None:
                    beat = encoder.keepalive()
                    yield KEEPALIVE_COMMENT if beat is None else frame_bytes(beat)
                else:  # one write for all of an event's frames
                    yield b"".join(frame_bytes(frame) for frame in batch)
        except (GeneratorExit, asyncio.CancelledError):
            # Logged here, not in `encoded_frames`: over SSE only the client ends a
            # stream early (a WebSocket also stops one for a steer, and logs its own).
            log.info("the client went away mid-stream; its generation was stopped")
            raise
        finally:
            await source.aclose()

    return SlotStreamingResponse(frames(), slot, events)


class SlotStreamingResponse(StreamingResponse):
    """An event stream that gives its generation slot back, and stops its generation,
    whatever happens to the response. The body generator does both when it ends, but a
    client gone before the first frame means the generator never starts (and its
    `finally` never runs); the response's own call always ends, so it closes the body
    and the events and releases here.

    It sends its frames itself rather than through starlette's `StreamingResponse.__call__`:
    under ASGI 2.3 (uvicorn) that watches for the disconnect inside an anyio task group,
    ~70 calls into anyio on the way to every stream's first token. Here one asyncio task
    waits for `http.disconnect` and cancels the sending; under ASGI 2.4 a `send` that
    raises OSError means the same."""

    def __init__(self, body: AsyncGenerator[bytes], slot: Slot, events: Keepalive) -> None:
        super().__init__(
            body, media_type="text/event-stream", headers={"cache-control": "no-cache", "x-accel-buffering": "no"}
        )
        self._body = body
        self._slot = slot
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sending = asyncio.current_task()
        gone = finished = False

        def client_left(watch: asyncio.Future[None]) -> None:
            # A done callback runs a loop turn later: past `finished`, nothing is cancelled.
            nonlocal gone
            if not finished and sending is not None and not watch.cancelled() and watch.exception() is None:
                gone = True
                sending.cancel()

        watch = asyncio.ensure_future(_disconnect(receive))
        watch.add_done_callback(client_left)
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self._body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone:
                raise
            if sending is not None:
                sending.uncancel()  # the cancellation was ours: the client left
        except OSError:  # ASGI 2.4: the client is gone
            pass
        finally:
            finished = True
            watch.cancel()
            try:
                await self._body.aclose()
                await self._events.aclose()
            finally:
                self._slot.release()
