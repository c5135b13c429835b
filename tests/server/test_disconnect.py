"""A request whose client hangs up stops its generation: a real
uvicorn on loopback (the production httptools protocol, and h11), an engine that
would generate forever, and a client that leaves: a raw socket that sends a complete
request and closes without reading, or a streaming client that hangs up mid-stream. The engine's stream must be closed (the engine request aborted),
the slot given back, and the disconnect logged as one INFO line, not a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest

from tokenyard.engines.base import EngineChunk
from tokenyard.server.app import ServerConfig
from tokenyard.server.limits import server_options
from tokenyard.settings import ServeSettings

from .serving import WrappedEngine, running_server, send_and_vanish

BODIES = {
    "/v1/messages": {"model": "test/model", "max_tokens": 100_000, "messages": [{"role": "user", "content": "hi"}]},
    "/v1/chat/completions": {"model": "test/model", "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": "test/model", "input": "hi"},
}


class _EndlessEngine(WrappedEngine):
    """Yields a token every few milliseconds, forever; records each generation that
    started and each that was closed (its `finally`: the abort)."""

    def __init__(self, inner, token_id: int):
        super().__init__(inner)
        self.token_id = token_id
        self.started: list[str] = []
        self.closed: list[str] = []
        self.lock = threading.Lock()
        self.burst = 1  # tokens per chunk

    async def generate(self, request):
        with self.lock:
            self.started.append(request.request_id)
        try:
            yield EngineChunk(cached_tokens=0)
            while True:
                await asyncio.sleep(0.005)
                yield EngineChunk(token_ids=[self.token_id] * self.burst)
        finally:
            with self.lock:
                self.closed.append(request.request_id)


def _wait_for(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout  # generous: a loaded CI machine
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


PROTOCOLS = {"httptools-bounded": server_options(ServeSettings()), "h11": {"http": "h11"}}


def _hang_up_mid_stream(url: str, path: str, body: dict) -> None:
    """Read a streamed response until a frame holds generated text, then hang up."""
    with httpx.stream("POST", f"{url}{path}", json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        while "la" not in next(lines):
            pass


# How the client hangs up → the line the server logs for it.
HANG_UPS = {
    "non-streaming, before reading": (send_and_vanish, "went away"),
    # The SSE response watches for the disconnect itself (server/sse.py).
    "streaming, mid-stream": (_hang_up_mid_stream, "went away mid-stream"),
}


@pytest.mark.parametrize("hang_up", list(HANG_UPS))
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_client_that_hangs_up_stops_its_generation(protocol, hang_up, caplog):
    caplog.set_level(logging.INFO)
    leave, logged = HANG_UPS[hang_up]
    config = ServerConfig(max_concurrency=1, max_queue=10)
    with running_server("qwen3", config=config, uvicorn_options=PROTOCOLS[protocol]) as (url, state):
        token = state.pipeline.model.tokenizer.encode("la")[0]
        engine = _EndlessEngine(state.pipeline.engine, token)
        state.pipeline.engine = engine
        for n, (path, body) in enumerate(BODIES.items(), start=1):
            leave(url, path, body)
            _wait_for(lambda n=n: len(engine.closed) == n, f"the generation of {path} to be aborted")
            _wait_for(lambda: state.busy == 0, "the slot to be given back")
        assert engine.started == engine.closed

        # The one slot is free: a request is served (the endless engine replaced by a finite one).
        state.pipeline.engine = engine.inner
        served = httpx.post(f"{url}/v1/chat/completions", json=BODIES["/v1/chat/completions"], timeout=60)
        assert served.status_code == 200 and served.json()["object"] == "chat.completion"

    gone = [r for r in caplog.records if logged in r.getMessage()]
    assert len(gone) == len(BODIES) and all(r.levelno == logging.INFO for r in gone)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_client_that_hangs_up_while_queued_never_starts_a_generation(caplog):
    caplog.set_level(logging.INFO)
    config = ServerConfig(max_concurrency=1, max_queue=10)
    with running_server("qwen3", config=config, uvicorn_options=PROTOCOLS["httptools-bounded"]) as (url, state):
        token = state.pipeline.model.tokenizer.encode("la")[0]
        engine = _EndlessEngine(state.pipeline.engine, token)
        state.pipeline.engine = engine
        holder = httpx.stream(
            "POST", f"{url}/v1/chat/completions", json={**BODIES["/v1/chat/completions"], "stream": True}
        )
        with holder:
            _wait_for(lambda: len(engine.started) == 1, "the holder's generation to start")
            send_and_vanish(url, "/v1/responses", BODIES["/v1/responses"])
            _wait_for(lambda: any("went away" in r.getMessage() for r in caplog.records), "the disconnect")
            assert state.waiting == 0 and len(engine.started) == 1  # it left the queue, never took the slot
        _wait_for(lambda: len(engine.closed) == 1 and state.busy == 0, "the holder's generation to end")


def test_a_streaming_client_that_stops_reading_frees_its_slot_after_the_send_timeout(caplog):
    """A raw socket (small receive buffer) sends a streaming request and never reads:
    once the server's writes have been stalled for `send_timeout`, the connection is
    cut, the generation aborted and the only slot serves the next request."""
    caplog.set_level(logging.INFO)
    config = ServerConfig(max_concurrency=1, max_queue=10, max_queue_wait=120)
    options = server_options(ServeSettings(send_timeout=1.0))
    with running_server("qwen3", config=config, uvicorn_options=options) as (url, state):
        token = state.pipeline.model.tokenizer.encode("la")[0]
        engine = _EndlessEngine(state.pipeline.engine, token)
        engine.burst = 200  # fills the socket buffers in well under a second
        state.pipeline.engine = engine
        parts = urlsplit(url)
        body = json.dumps({**BODIES["/v1/chat/completions"], "stream": True}).encode()
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((parts.hostname, parts.port))
            sock.sendall(head + body)  # and never read
            _wait_for(lambda: len(engine.started) == 1, "the generation to start")
            _wait_for(lambda: len(engine.closed) == 1, "the stalled generation to be aborted", timeout=120)
            _wait_for(lambda: state.busy == 0, "the slot to be given back")
            state.pipeline.engine = engine.inner
            served = httpx.post(f"{url}/v1/chat/completions", json=BODIES["/v1/chat/completions"], timeout=60)
            assert served.status_code == 200
    stalled = [r for r in caplog.records if "read nothing of its response" in r.getMessage()]
    assert len(stalled) == 1 and stalled[0].levelno == logging.INFO
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
