"""Server-sent events: framing, and keep-alives while the engine is quiet."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

T = TypeVar("T")


def sse(event: str | None, data: Any) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode("utf-8")


async def with_keepalive(
    source: AsyncIterator[T], interval: float, on_idle: Callable[[], T | None]
) -> AsyncIterator[T]:
    """Yield from `source`; whenever it is silent for `interval` seconds (a long
    prefill), yield `on_idle()` instead (if not None) and keep waiting. Closing
    this iterator closes `source`."""
    pending: asyncio.Task | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(source.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                idle = on_idle()
                if idle is not None:
                    yield idle
                continue
            task, pending = pending, None
            try:
                item = task.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            try:
                await pending
            except (asyncio.CancelledError, StopAsyncIteration, Exception):
                pass
        aclose: Callable[[], Awaitable[None]] | None = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
