"""Ctrl-C and SIGTERM end `tokenyard serve` cleanly.

The first signal stops accepting connections and ends every running stream at once
with the API's own error event (Pipeline.drain; closing a stream aborts its engine
work), then uvicorn waits up to GRACE_SECONDS for responses to finish and runs the
lifespan shutdown (engine.close). A second signal skips the wait, not the lifespan
shutdown: uvicorn's force exit would skip it, leaving the engine unclosed and the
lifespan task to be cancelled at exit, which Starlette logs as a CancelledError
traceback. No signal is re-raised afterwards, and once a signal has stopped the server
later ones are ignored (a killed launcher stops its server, then the parent-death
signal follows), so the process exits with status 0 and no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn

GRACE_SECONDS = 5.0


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]):
        super().__init__(config)
        self._on_shutdown = on_shutdown
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        if self.force_exit:  # uvicorn skipped the lifespan shutdown
            await self.lifespan.shutdown()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # signals reach only the main thread
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig in handled:
                signal.signal(sig, signal.SIG_IGN if self.should_exit else original[sig])

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn's own handler also records the signal to raise it again after
        # shutdown, which turns SIGINT into a KeyboardInterrupt traceback.
        if self.should_exit:
            self.force_exit = True
            return
        self.should_exit = True
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_shutdown)


def serve(
    app: object,
    *,
    host: str,
    port: int,
    loop: str,
    log_level: str,
    on_shutdown: Callable[[], None],
    sockets: list[socket.socket] | None = None,
    **options: Any,
) -> bool:
    """Run until a signal; False when the server never started (e.g. the port is taken).
    `sockets`: listen on these (bound already) instead of host and port. `options` are
    further uvicorn.Config arguments (server/limits.py's)."""
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]  # a Starlette app is an ASGI application
        host=host,
        port=port,
        loop=loop,
        log_level=log_level,
        access_log=False,
        # Nothing reads the client's address (X-Forwarded-For): one middleware less per request.
        proxy_headers=False,
        timeout_graceful_shutdown=int(GRACE_SECONDS),
        **options,
    )
    server = GracefulServer(config, on_shutdown)
    server.run(sockets=sockets)
    return server.started
