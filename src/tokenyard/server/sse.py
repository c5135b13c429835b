"""Server-sent events: framing, keep-alives while the engine is quiet, and the one
way every API runs a generation — streamed or to its end — inside a slot."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from starlette.responses import StreamingResponse

from ..apis.errors import ApiError
from ..engines.base import EngineError
from ..events import Event, StreamError
from ..prompting.template import TemplateError
from . import metrics
from .common import ServerState, acquire_slot
from .pipeline import Generation

log = logging.getLogger("tokenyard.server")

KEEPALIVE_COMMENT = b": keepalive\n\n"  # an SSE comment: every client skips it
IDLE = object()  # what `with_keepalive` yields when the source has been silent
_END = object()


def sse(event: str | None, data: Any) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


async def with_keepalive(source: AsyncIterator[Any], interval: float) -> AsyncIterator[Any]:
    """Yield from `source`, and `IDLE` whenever it has been silent for `interval`
    seconds (a long prefill). A pump task reads the source into a small queue and
    one timer per interval checks for silence, so a streamed token costs a queue
    hand-off, not a task. Closing this iterator cancels the pump, which closes
    `source` (and so aborts the engine request)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[object, Any]] = asyncio.Queue(maxsize=64)
    last = loop.time()

    async def pump() -> None:
        nonlocal last
        try:
            async for item in source:
                await queue.put((None, item))
                last = loop.time()
            await queue.put((_END, None))
        except Exception as error:  # handed to the consumer, which raises it
            await queue.put((_END, error))

    def check_silence() -> None:
        nonlocal last, timer
        now = loop.time()
        if now - last >= interval and queue.empty():
            queue.put_nowait((IDLE, None))
            last = now
        timer = loop.call_at(last + interval, check_silence)

    task = asyncio.ensure_future(pump())
    timer = loop.call_at(last + interval, check_silence)
    try:
        while True:
            kind, value = await queue.get()
            if kind is None:
                yield value
            elif kind is IDLE:
                yield IDLE
            elif value is not None:
                raise value
            else:
                return
    finally:
        timer.cancel()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


async def run_to_end(state: ServerState, generation: Generation, feed: Callable[[Event], object]) -> None:
    """A non-streaming request: the whole generation, in a slot, into `feed`; an
    engine failure is an API error (500)."""
    await acquire_slot(state, generation.conversation.hints)
    try:
        async for event in metrics.observed(generation, generation.events()):
            if isinstance(event, StreamError):
                raise ApiError(500, event.kind, event.message)
            feed(event)
    finally:
        state.slots.release()  # type: ignore[union-attr]


async def event_stream(
    state: ServerState,
    generation: Generation,
    encode: Callable[[Event], Iterable[bytes]],
    fail: Callable[[str], Iterable[bytes]],
    *,
    keepalive: Callable[[], bytes] = lambda: KEEPALIVE_COMMENT,
    prologue: Callable[[], Iterable[bytes]] = tuple,
    epilogue: bytes = b"",
) -> StreamingResponse:
    """A streaming request: the generation's events encoded as SSE frames, in a slot,
    with keep-alives during silences. A failure mid-stream ends it with the API's own
    error frames (`fail`), never a truncated stream."""
    await acquire_slot(state, generation.conversation.hints)

    async def frames() -> AsyncIterator[bytes]:
        try:
            for frame in prologue():
                yield frame
            async for event in with_keepalive(
                metrics.observed(generation, generation.events()), state.config.keepalive_seconds
            ):
                if event is IDLE:
                    yield keepalive()
                    continue
                for frame in encode(event):
                    yield frame
        except (EngineError, TemplateError) as error:
            for frame in fail(str(error)):
                yield frame
        except Exception:
            log.exception("stream failed")
            for frame in fail("internal server error"):
                yield frame
        finally:
            state.slots.release()  # type: ignore[union-attr]
        if epilogue:
            yield epilogue

    return StreamingResponse(
        frames(), media_type="text/event-stream", headers={"cache-control": "no-cache", "x-accel-buffering": "no"}
    )
